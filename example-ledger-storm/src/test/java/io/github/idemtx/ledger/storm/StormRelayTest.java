package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The relay process's flags ({@link StormRelay}) and the storm's {@code --relay-kills}: read, or refused by name. */
class StormRelayTest {

    private static final String[] REQUIRED = {
        "--schema=ledger_storm",
        "--amqp-url=amqp://guest:guest@127.0.0.1:5672",
        "--owner=storm-relay-1",
        "--db-url=jdbc:postgresql://127.0.0.1:5432/test"
    };

    @Test
    void theFlagsAreReadWithTheirDefaults() {
        StormRelay.Settings s = StormRelay.parse(REQUIRED);
        assertThat(s.owner()).isEqualTo("storm-relay-1");
        assertThat(s.lease()).isEqualTo(Duration.ofSeconds(1));
        assertThat(s.batchSize()).isEqualTo(5);
        assertThat(s.dbUser()).isNull();

        StormRelay.Settings t = StormRelay.parse(with("--lease-ms=2500", "--send-delay-ms=0", "--batch-size=7"));
        assertThat(t.lease()).isEqualTo(Duration.ofMillis(2500));
        assertThat(t.sendDelay()).isZero();
        assertThat(t.batchSize()).isEqualTo(7);
    }

    @Test
    void badFlagsAreRefusedByName() {
        assertThatThrownBy(() -> StormRelay.parse(new String[] {"--schema=s", "--owner=o", "--db-url=x"}))
                .hasMessageContaining("--amqp-url");
        assertThatThrownBy(() -> StormRelay.parse(with("--lease-ms=999"))).hasMessageContaining("--lease-ms");
        assertThatThrownBy(() -> StormRelay.parse(with("--bogus=1"))).hasMessageContaining("--bogus");
        assertThatThrownBy(() -> StormRelay.parse(with("--schema=Bad-Name"))).hasMessageContaining("--schema");
        assertThatThrownBy(() -> StormRelay.parse(with("--owner=" + "o".repeat(65))))
                .hasMessageContaining("--owner");
        assertThatThrownBy(() -> StormFlags.parse(new String[] {"--relay-kills=-1"}))
                .hasMessageContaining("--relay-kills");
        assertThat(StormFlags.parse(new String[] {"--relay-kills=2"}).relayKills())
                .isEqualTo(2);
        assertThat(StormFlags.parse(new String[] {}).relayKills()).isEqualTo(6);
    }

    private static String[] with(String... more) {
        String[] all = java.util.Arrays.copyOf(REQUIRED, REQUIRED.length + more.length);
        System.arraycopy(more, 0, all, REQUIRED.length, more.length);
        return all;
    }
}
