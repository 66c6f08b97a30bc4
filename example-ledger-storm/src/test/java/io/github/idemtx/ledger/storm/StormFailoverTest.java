package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.FailoverCluster;
import io.github.idemtx.db.testing.FailoverCluster.Replication;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@code storm --failover}: the ledger on a primary and a standby of the storm's own; the primary
 * is SIGKILLed under load and the standby promoted. With synchronous replication every invariant
 * holds, no final answer is lost, and every key sent again afterwards gets its first answer back.
 * (The asynchronous run, which measures what it loses, is {@code FailoverTest}'s and the command
 * line's: see docs/reliability.md, Failover.)
 */
@DatabaseTest
class StormFailoverTest {

    @Test
    void aStormAcrossAFailoverWithSynchronousReplicationLosesNoAnswer() throws Exception {
        FailoverCluster.assumeBinaries();
        Storm.Options options = new Storm.Options(8, 600, 0, 20, 0.3, Duration.ofMillis(1500), 42L);
        StormReport report = Storm.runWithFailover(
                new String[] {"--schema=storm_failover"},
                options,
                new Storm.FailoverPlan(Replication.SYNC, "on", 1),
                System.out);
        System.out.print(report.render());
        assertEveryAnswerKept(report, 1);
    }

    /**
     * Every invariant held, none was only measured, all {@code faults} happened, no final answer is
     * missing on the new primary, and every key sent again got its first answer back.
     */
    static void assertEveryAnswerKept(StormReport report, int faults) {
        assertThat(report.invariants())
                .isNotEmpty()
                .allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
        assertThat(report.measured()).isEmpty();
        assertThat(report.failover().failovers())
                .as("every fault planned happened under load")
                .hasSize(faults);
        assertThat(report.failover().lost()).isZero();
        assertThat(report.failover().resent()).containsOnlyKeys("same answer");
    }

    @Test
    void badFailoverFlagsAreRefusedNamingTheFlag() {
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover", "--replication=semi"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--replication")
                .hasMessageContaining("semi");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover", "--failovers=0"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--failovers");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover", "--synchronous-commit=off"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--synchronous-commit");
        assertThatThrownBy(() -> Storm.main(
                        new String[] {"--failover", "--replication=async", "--synchronous-commit=remote_apply"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--synchronous-commit");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover=maybe"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--failover");
        assertThatThrownBy(() -> Storm.main(new String[] {"--replication=sync"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--replication needs --failover");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover", "--db-url=jdbc:postgresql://x/y"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--db-url");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover", "--faults=3"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--faults");
        assertThatThrownBy(() -> Storm.main(new String[] {"--seed=12x"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--seed must be a whole number, was '12x'");
        assertThatThrownBy(() -> Storm.main(new String[] {"--payouts", "--seed=12x"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--seed must be a whole number, was '12x'");
    }
}
