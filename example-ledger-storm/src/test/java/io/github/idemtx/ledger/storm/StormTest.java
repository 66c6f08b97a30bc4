package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.ledger.LedgerServer;
import java.time.Duration;
import java.util.Objects;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@DatabaseTest
class StormTest {

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = ClaimMode.class, names = "READ_FIRST", mode = EnumSource.Mode.EXCLUDE) // CLAIM_FIRST's old name
    void aShortStormWithConnectionKillsKeepsEveryInvariant(ClaimMode mode) throws Exception {
        // in the default mode, 3 SIGKILLs of further events relays, aimed mid-batch (the storm fails if none
        // landed there): the relays do not depend on the claim mode, and each kill's new JVM costs the load time
        int relayKills = mode == ClaimMode.CLAIM_FIRST ? 3 : 0;
        Storm.Options options = new Storm.Options(8, 800, 20.0, 20, 0.3, Duration.ofMillis(1500), 42L, relayKills);
        try {
            StormReport report =
                    Storm.runAgainstNewLedger(ledgerArgs("storm", "--claim-mode=" + mode), options, System.out);
            System.out.print(report.render());

            assertThat(report.invariants())
                    .isNotEmpty()
                    .allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
            assertThat(report.intents()).isEqualTo(800);
            if (LocalBroker.unavailable().isEmpty() || System.getenv("CI") != null) {
                assertThat(report.invariants())
                        .as("the ledger's events were checked")
                        .containsKey("no outbox message for an intent that did not commit (0)")
                        .containsKey("no outbox message left pending or leased after the drain (0)");
                if (relayKills > 0) {
                    assertThat(report.invariants().keySet())
                            .as("events relays were SIGKILLed mid-batch")
                            .anyMatch(name -> name.startsWith("relay kills landed mid-batch (relay kills: "));
                }
            }
            assertThat(report.faults())
                    .as("connections were killed while it ran")
                    .isPositive();
            assertThat(report.replays())
                    .as("duplicates and late retries were replayed")
                    .isPositive();
        } finally {
            dropSchema("storm");
        }
    }

    @Test
    void aStormAgainstALedgerItDidNotStartChecksWhatHttpCanSee() throws Exception {
        Storm.Options options = new Storm.Options(6, 300, 0, 8, 0.3, Duration.ofMillis(1500), 7L);
        try (LedgerServer running =
                LedgerServer.startFresh(ledgerArgs("running", "--port=0", "--tokens=running-token=tenant-r"))) {
            StormReport report = Storm.runAgainstRunningLedger(
                    java.net.URI.create("http://127.0.0.1:" + running.port()), "running-token", options, System.out);
            System.out.print(report.render());
            assertThat(report.invariants())
                    .containsKey("every acknowledged transfer is there")
                    .allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
            assertThat(report.intents()).isEqualTo(300);
        } finally {
            dropSchema("running");
        }
    }

    /** The ledger's flags for the test database, in the schema {@code <test schema>_<suffix>}. */
    private static String[] ledgerArgs(String suffix, String... more) {
        TestDatabase db = TestDatabase.get();
        return Stream.of(
                        Stream.of("--db-url=" + db.url(), "--schema=" + db.schema() + "_" + suffix),
                        Stream.ofNullable(db.user()).map(u -> "--db-user=" + u),
                        Stream.ofNullable(db.password()).map(p -> "--db-password=" + p),
                        Stream.of(more))
                .flatMap(s -> s)
                .filter(Objects::nonNull)
                .toArray(String[]::new);
    }

    private static void dropSchema(String suffix) {
        TestDatabase db = TestDatabase.get();
        db.execute("DROP SCHEMA IF EXISTS " + db.schema() + "_" + suffix + " CASCADE");
    }
}
