package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.PatroniCluster;
import io.github.idemtx.db.testing.PatroniCluster.Fault;
import io.github.idemtx.db.testing.PatroniCluster.SynchronousMode;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@code storm --failover=patroni}, short: the ledger on a Patroni cluster of three over etcd with
 * {@code synchronous_mode: on} and {@code synchronous_mode_strict: on}; under load an operator's
 * switchover, the leader's PostgreSQL SIGKILLed and the leader's Patroni SIGKILLed. Every invariant
 * holds, no final answer is lost, and every key sent again gets its first answer back. Skipped with
 * a hint where patroni or etcd is missing; .ci/run installs them, and under CI it runs. Not
 * {@code synchronous_mode} without strict: it loses acknowledged answers when a killed Patroni comes
 * back after the failover (Patroni 3.0 empties the old primary's {@code synchronous_standby_names}
 * before it demotes it, and the commits waiting there are acknowledged). The long runs, 10
 * failovers and 10 switchovers per mode, are the command line's: docs/reliability.md, "Failover
 * under Patroni".
 */
@DatabaseTest
class StormPatroniTest {

    @Test
    void aStormAcrossASwitchoverAndBothLeaderKillsUnderStrictSynchronousModeLosesNoAnswer() throws Exception {
        PatroniCluster.assumeInstalled();
        Storm.Options options = new Storm.Options(8, 6000, 0, 20, 0.3, Duration.ofMillis(1500), 7L);
        StormReport report = Storm.runWithFailover(
                new String[] {"--schema=storm_patroni"},
                options,
                Storm.FailoverPlan.patroni(SynchronousMode.STRICT, 2, 1),
                System.out);
        System.out.print(report.render());
        // a switchover, the leader's PostgreSQL killed, the leader's Patroni killed
        StormFailoverTest.assertEveryAnswerKept(report, 3);
    }

    @Test
    void switchoversAndKillsInterleaveAndTheKillsAlternate() {
        assertThat(FailoverTarget.Patroni.faults(2, 1))
                .containsExactly(Fault.KILL_POSTGRES, Fault.SWITCHOVER, Fault.KILL_PATRONI);
        assertThat(FailoverTarget.Patroni.faults(2, 2))
                .containsExactly(Fault.KILL_POSTGRES, Fault.SWITCHOVER, Fault.KILL_PATRONI, Fault.SWITCHOVER);
        assertThat(FailoverTarget.Patroni.faults(0, 2)).containsExactly(Fault.SWITCHOVER, Fault.SWITCHOVER);
        assertThat(FailoverTarget.Patroni.faults(10, 10))
                .hasSize(20)
                .filteredOn(f -> f == Fault.SWITCHOVER)
                .hasSize(10);
    }

    @Test
    void badPatroniFlagsAreRefusedNamingTheFlag() {
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover=patroni", "--synchronous-mode=maybe"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--synchronous-mode")
                .hasMessageContaining("maybe");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover=patroni", "--replication=sync"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--replication")
                .hasMessageContaining("--synchronous-mode");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover=patroni", "--failovers=0", "--switchovers=0"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--switchovers");
        assertThatThrownBy(() -> Storm.main(new String[] {"--failover", "--switchovers=3"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--switchovers needs --failover=patroni");
        assertThatThrownBy(() -> Storm.main(new String[] {"--synchronous-mode=on"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--synchronous-mode needs --failover");
    }
}
