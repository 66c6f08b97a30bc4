package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class LedgerConfigTest {

    @Test
    void readsFlagsBeforeTheEnvironment() {
        LedgerConfig config = LedgerConfig.from(
                new String[] {"--port=9090", "--schema=books"},
                Map.of("LEDGER_PORT", "7070", "LEDGER_TOKENS", "t1=acme", "LEDGER_POOL_SIZE", "5"));
        assertThat(config.port()).isEqualTo(9090);
        assertThat(config.schema()).isEqualTo("books");
        assertThat(config.poolSize()).isEqualTo(5);
        assertThat(config.tokens()).containsEntry("t1", "acme");
        assertThat(config.demoTokens()).isFalse();
    }

    @Test
    void makesTwoDemoTenantsWhenNoTokensAreGiven() {
        LedgerConfig config = LedgerConfig.from(new String[0], Map.of());
        assertThat(config.demoTokens()).isTrue();
        assertThat(config.tokens().values()).containsExactlyInAnyOrder("demo-tenant-a", "demo-tenant-b");
        assertThat(config.dbUrl())
                .as("unset: resolved at start (LocalPostgres)")
                .isNull();
    }

    @Test
    void neverShowsTokensOrThePasswordInItsDescription() {
        LedgerConfig config =
                LedgerConfig.from(new String[] {"--db-password=hunter2"}, Map.of("LEDGER_TOKENS", "s3cr3t-token=acme"));
        assertThat(config.toString())
                .contains("acme")
                .doesNotContain("s3cr3t-token")
                .doesNotContain("hunter2");
    }

    @Test
    void refusesMalformedSettingsWithoutEchoingSecrets() {
        assertThatThrownBy(
                        () -> LedgerConfig.from(new String[0], Map.of("LEDGER_TOKENS", "s3cr3t-token-without-tenant")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("LEDGER_TOKENS")
                .message()
                .doesNotContain("s3cr3t");
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--port=99999"}, Map.of()))
                .hasMessageContaining("LEDGER_PORT")
                .hasMessageContaining("65535");
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--schema=x; drop"}, Map.of()))
                .hasMessageContaining("schema");
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"port=1"}, Map.of()))
                .hasMessageContaining("--name=value");
    }
}
