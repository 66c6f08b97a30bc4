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
    void aDatabaseUrlWithoutAUserConnectsAsPostgresAsTheDocsSay() {
        String url = "jdbc:postgresql://127.0.0.1:5432/books";
        assertThat(LedgerConfig.from(new String[0], Map.of("LEDGER_DB_URL", url))
                        .dbUser())
                .as("not pgjdbc's default, the OS user")
                .isEqualTo("postgres");
        assertThat(LedgerConfig.from(new String[0], Map.of("LEDGER_DB_URL", url, "LEDGER_DB_USER", "books"))
                        .dbUser())
                .isEqualTo("books");
        assertThat(LedgerConfig.from(new String[0], Map.of("LEDGER_DB_URL", url + "?user=clerk"))
                        .dbUser())
                .as("the URL's own user is left to the URL")
                .isNull();
    }

    @Test
    void anAdminTokenIsLongEnoughAndNeverShown() {
        assertThat(LedgerConfig.from(new String[0], Map.of()).adminToken())
                .as("unset: the ledger makes one at start")
                .isNull();
        String token = "a-long-admin-token-0123";
        LedgerConfig config = LedgerConfig.from(new String[] {"--admin-token=" + token}, Map.of());
        assertThat(config.adminToken()).isEqualTo(token);
        assertThat(config.toString()).doesNotContain(token);
        assertThatThrownBy(() -> LedgerConfig.from(new String[0], Map.of("LEDGER_ADMIN_TOKEN", "short-secret")))
                .hasMessageContaining("LEDGER_ADMIN_TOKEN (--admin-token) must be at least 16")
                .hasMessageNotContaining("short-secret");
    }

    @Test
    void theBankIsKeyedUnlessTheStatementModeIsAskedForWithItsLagAndPoll() {
        assertThat(LedgerConfig.from(new String[0], Map.of()).statementBank()).isNull();
        LedgerConfig statement = LedgerConfig.from(
                new String[] {"--bank-mode=statement", "--statement-lag-ms=2500"},
                Map.of("LEDGER_STATEMENT_POLL_MS", "300"));
        assertThat(statement.statementBank())
                .isEqualTo(new LedgerConfig.StatementBank(
                        java.time.Duration.ofMillis(2500), java.time.Duration.ofMillis(300)));
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--bank-mode=file"}, Map.of()))
                .hasMessageContaining("LEDGER_BANK_MODE (--bank-mode) must be keyed or statement, was 'file'");
        assertThatThrownBy(() ->
                        LedgerConfig.from(new String[] {"--bank-mode=statement", "--statement-lag-ms=0"}, Map.of()))
                .hasMessageContaining("LEDGER_STATEMENT_LAG_MS");
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

    @Test
    void theQueueIsOffWithoutABrokerAndItsSettingsNeedOne() {
        assertThat(LedgerConfig.from(new String[0], Map.of()).queue()).isNull();
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--queue-prefetch=4"}, Map.of()))
                .hasMessage("--queue-prefetch needs LEDGER_AMQP_URL (--amqp-url)");
    }

    @Test
    void readsTheQueueSettingsAndNeverShowsTheirSecrets() {
        String secret = "ab".repeat(32);
        LedgerConfig.Queue queue = LedgerConfig.from(
                        new String[] {"--amqp-url=amqp://app:pw-of-broker@mq:5672", "--queue-consumers=2"},
                        Map.of("LEDGER_QUEUE", "books.transfers", "LEDGER_KEY_SECRET", secret))
                .queue();
        assertThat(queue.name()).isEqualTo("books.transfers");
        assertThat(queue.consumers()).isEqualTo(2);
        assertThat(queue.prefetch()).isEqualTo(16);
        assertThat(queue.deliveryLimit()).isEqualTo(5);
        assertThat(queue.lockTimeoutMillis()).isEqualTo(5000);
        assertThat(queue.demoSecret()).isFalse();
        assertThat(queue.keySecret()).hasSize(32);
        assertThat(queue.toString())
                .contains("books.transfers at amqp://mq:5672")
                .doesNotContain("pw-of-broker", secret);
        assertThat(LedgerConfig.from(new String[] {"--amqp-url=amqp://mq"}, Map.of())
                        .queue()
                        .demoSecret())
                .isTrue();
    }

    @Test
    void refusesBadQueueSettingsNamingThem() {
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--amqp-url=http://u:secretpw@mq"}, Map.of()))
                .hasMessageContaining("LEDGER_AMQP_URL (--amqp-url) must be like amqp://")
                .hasMessageNotContaining("secretpw");
        assertThatThrownBy(() -> LedgerConfig.from(
                        new String[] {"--amqp-url=amqp://mq"}, Map.of("LEDGER_KEY_SECRET", "not-hex-and-too-short")))
                .hasMessageContaining("LEDGER_KEY_SECRET must be 64 or more hexadecimal digits")
                .hasMessageNotContaining("not-hex");
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--amqp-url=amqp://mq", "--queue=a b"}, Map.of()))
                .hasMessageContaining("LEDGER_QUEUE (--queue)");
        assertThatThrownBy(
                        () -> LedgerConfig.from(new String[] {"--amqp-url=amqp://mq", "--queue-consumers=0"}, Map.of()))
                .hasMessageContaining("LEDGER_QUEUE_CONSUMERS");
    }

    @Test
    void readsThePayoutLookupScheduleAndRefusesABadOne() {
        assertThat(LedgerConfig.from(new String[0], Map.of()).payoutLookups())
                .containsExactly(
                        java.time.Duration.ofSeconds(1),
                        java.time.Duration.ofSeconds(2),
                        java.time.Duration.ofSeconds(4));
        assertThat(LedgerConfig.from(new String[] {"--payout-lookups-ms=200,400"}, Map.of())
                        .payoutLookups())
                .containsExactly(java.time.Duration.ofMillis(200), java.time.Duration.ofMillis(400));
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--payout-lookups-ms=200,x"}, Map.of()))
                .hasMessageContaining("--payout-lookups-ms");
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--bank-name=a b"}, Map.of()))
                .hasMessageContaining("--bank-name");
    }
}
