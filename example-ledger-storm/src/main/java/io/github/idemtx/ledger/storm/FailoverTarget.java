package io.github.idemtx.ledger.storm;

import io.github.idemtx.db.testing.FailoverCluster;
import io.github.idemtx.db.testing.FailoverCluster.Replication;
import io.github.idemtx.db.testing.PatroniCluster;
import io.github.idemtx.db.testing.PatroniCluster.Fault;
import io.github.idemtx.db.testing.PatroniCluster.SynchronousMode;
import io.github.idemtx.db.testing.ReplicatedCluster;
import java.util.ArrayList;
import java.util.List;

/**
 * The servers a {@code --failover} storm runs the ledger on and the faults it does to them under
 * load: the home-made primary and standby ({@link FailoverCluster}: SIGKILL and {@code pg_ctl
 * promote}) or a Patroni-managed cluster ({@link PatroniCluster}: switchovers, and SIGKILL of the
 * leader's PostgreSQL or of its Patroni).
 */
interface FailoverTarget extends ReplicatedCluster {

    /** For the report: the set-up alone. */
    String setUp();

    /** How many faults the plan asks for. */
    int planned();

    /** Whether the set-up promises that an acknowledged commit survives every fault planned. */
    boolean keepsAcknowledgedCommits();

    /** Does fault {@code k} (from 1) and returns once a new primary is out of recovery. */
    StormReport.Fault inject(int k);

    /**
     * Makes the cluster ready for another fault, where a fault left it unable to take one; returns
     * whether there was anything to do.
     */
    default boolean prepareNext() {
        return false;
    }

    /** Starts what {@code plan} names; returns once it serves. */
    static FailoverTarget start(Storm.FailoverPlan plan) {
        return plan.patroni() ? new Patroni(plan) : new Pair(plan);
    }

    /** What both set-ups answer alike, from their cluster. */
    abstract class Of<C extends ReplicatedCluster> implements FailoverTarget {
        final C cluster;
        final Storm.FailoverPlan plan;

        Of(C cluster, Storm.FailoverPlan plan) {
            this.cluster = cluster;
            this.plan = plan;
        }

        @Override
        public String url() {
            return cluster.url();
        }

        @Override
        public String user() {
            return cluster.user();
        }

        @Override
        public String description() {
            return cluster.description();
        }

        @Override
        public String logTail(int maxChars) {
            return cluster.logTail(maxChars);
        }

        @Override
        public void close() {
            cluster.close();
        }
    }

    /** {@code --failover}: a primary and a standby; each fault kills the primary and promotes the standby. */
    final class Pair extends Of<FailoverCluster> {

        Pair(Storm.FailoverPlan plan) {
            super(FailoverCluster.start(plan.replication(), plan.synchronousCommit()), plan);
        }

        @Override
        public String setUp() {
            return cluster.description().replaceAll(", primary .*", "");
        }

        @Override
        public int planned() {
            return plan.failovers();
        }

        @Override
        public boolean keepsAcknowledgedCommits() {
            return plan.replication() == Replication.SYNC;
        }

        @Override
        public StormReport.Fault inject(int k) {
            FailoverCluster.Failover f = cluster.failover();
            return new StormReport.Fault(
                    "the primary SIGKILLed, the standby promoted",
                    "the primary on port " + f.killedPort() + " SIGKILLed, the standby on " + f.promotedPort()
                            + " promoted",
                    f.standbyLagBytes(),
                    f.killMillis() + f.promoteMillis(),
                    f.killMillis() + f.promoteMillis());
        }

        /** A new standby copied from the promoted primary: the next failover needs one. */
        @Override
        public boolean prepareNext() {
            if (cluster.hasStandby()) {
                return false;
            }
            cluster.attachStandby();
            return true;
        }
    }

    /**
     * {@code --failover=patroni}: three members under Patroni; the faults alternate operator
     * switchovers with leader kills, the kills alternating SIGKILL of PostgreSQL and of Patroni.
     */
    final class Patroni extends Of<PatroniCluster> {
        private final List<Fault> faults;

        Patroni(Storm.FailoverPlan plan) {
            super(PatroniCluster.start(plan.synchronousMode()), plan);
            this.faults = faults(plan.failovers(), plan.switchovers());
        }

        /** Switchovers and kills interleaved as evenly as their counts allow; kills alternate PostgreSQL and Patroni. */
        static List<Fault> faults(int failovers, int switchovers) {
            List<Fault> out = new ArrayList<>();
            int kills = 0;
            int switches = 0;
            while (kills < failovers || switches < switchovers) {
                boolean kill = switches >= switchovers
                        || (kills < failovers && (long) kills * switchovers <= (long) switches * failovers);
                if (kill) {
                    out.add(kills % 2 == 0 ? Fault.KILL_POSTGRES : Fault.KILL_PATRONI);
                    kills++;
                } else {
                    out.add(Fault.SWITCHOVER);
                    switches++;
                }
            }
            return out;
        }

        @Override
        public String setUp() {
            return cluster.description().replaceAll("; leader .*", "");
        }

        @Override
        public int planned() {
            return faults.size();
        }

        @Override
        public boolean keepsAcknowledgedCommits() {
            return plan.synchronousMode() != SynchronousMode.OFF;
        }

        @Override
        public StormReport.Fault inject(int k) {
            PatroniCluster.Change c = cluster.inject(faults.get(k - 1));
            return new StormReport.Fault(
                    c.fault().describe(),
                    c.fault().describe() + " (" + c.from() + "), " + c.to() + " leads",
                    c.lagBytes(),
                    c.newLeaderMillis(),
                    c.healthyMillis());
        }
    }
}
