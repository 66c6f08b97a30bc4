package io.github.idemtx.ledger;

import io.github.idemtx.db.testing.DatabaseTest;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.ledger.storm.Storm;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@DatabaseTest
class StormTest {

    @ParameterizedTest(name = "{0}")
    @EnumSource(ClaimMode.class)
    void aShortStormWithConnectionKillsKeepsEveryInvariant(ClaimMode mode) throws Exception {
        Storm.Options options = new Storm.Options(8, 800, 20.0, 20, 0.3, Duration.ofMillis(1500), 42L);
        try {
            Storm.Report report = Storm.runAgainstNewLedger(LedgerFixture.args("storm", "--claim-mode=" + mode), options, System.out);
            System.out.print(report.render());

            assertThat(report.invariants()).isNotEmpty().allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
            assertThat(report.intents()).isEqualTo(800);
            assertThat(report.faults()).as("connections were killed while it ran").isPositive();
            assertThat(report.replays()).as("duplicates and late retries were replayed").isPositive();
        } finally {
            LedgerFixture.dropSchema("storm");
        }
    }

    @Test
    void aStormAgainstALedgerItDidNotStartChecksWhatHttpCanSee() throws Exception {
        Storm.Options options = new Storm.Options(6, 300, 0, 8, 0.3, Duration.ofMillis(1500), 7L);
        try (LedgerServer running = LedgerServer.startFresh(LedgerFixture.args("running", "--port=0", "--tokens=running-token=tenant-r"))) {
            Storm.Report report = Storm.runAgainstRunningLedger(java.net.URI.create("http://127.0.0.1:" + running.port()),
                    "running-token", options, System.out);
            System.out.print(report.render());
            assertThat(report.invariants()).containsKey("every acknowledged transfer is there")
                    .allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
            assertThat(report.intents()).isEqualTo(300);
        } finally {
            LedgerFixture.dropSchema("running");
        }
    }
}
