package io.github.idemtx.jooq.internal.flow.claim;

import io.github.idemtx.core.ClaimOrderEvent;
import io.github.idemtx.jooq.ClaimMode;
import java.util.function.Consumer;

/**
 * Which order the next attempt of a call owning its transaction takes, work first or claim first,
 * and, in {@link ClaimMode#ADAPTIVE}, what the calls so far teach about it. Thread-safe: one
 * instance serves every call of an {@code IdempotentTransaction}. Not API.
 *
 * <p>The adaptive order follows the cost model of docs/claim-modes.md. Against a claim first, a work
 * first saves the read on every fresh key and wastes the work on every key that turns out taken
 * (a retry of a completed call, a concurrent duplicate). With {@code read} the time of a read of
 * the key (the claim's statement claiming first, the rollback and read of a key found taken
 * working first) and {@code work} the time of the work, the two take the same time at a taken
 * share of {@code read / (read + work)}. Throughput breaks even lower than that: a wasted work
 * also took CPU, held its rows' locks and wrote WAL, which a read does not, and under load CPU is
 * what runs out; so the share is scaled by {@link Adaptive#CALIBRATION}. Until a read has been
 * timed (working first on fresh keys only) the claim's insert with COMMIT stands in for it. It
 * switches to claim first when the recent taken share passes the break-even by a third and back
 * when the share falls a third under the break-even it switched at, so neither a share hovering at
 * the threshold nor a break-even that moves with the load flips the order call by call, and a
 * share steady on either side of the break-even mostly keeps the order that is cheaper there.
 */
public abstract sealed class ClaimOrder permits ClaimOrder.Fixed, ClaimOrder.Adaptive {

    ClaimOrder() {}

    /** The order for {@code mode}, telling nobody of its changes. */
    public static ClaimOrder of(ClaimMode mode) {
        return of(mode, change -> {});
    }

    /**
     * The order for {@code mode}: a fresh {@link Adaptive} (work first until it learns otherwise),
     * which tells {@code changed} of each change once, on the thread whose call tipped it; or a
     * fixed one.
     */
    @SuppressWarnings("removal") // READ_FIRST, the deprecated name of CLAIM_FIRST
    public static ClaimOrder of(ClaimMode mode, Consumer<ClaimOrderEvent> changed) {
        return switch (mode) {
            case CLAIM_FIRST, READ_FIRST -> new Fixed(false);
            case WORK_FIRST -> new Fixed(true);
            case ADAPTIVE -> new Adaptive(changed);
        };
    }

    /** Whether the next attempt runs the work first. */
    public abstract boolean workFirst();

    /**
     * Whether the caller should time the next attempt for {@link #fresh}: one attempt in
     * {@link Adaptive#TIMED_EVERY}, as the averages need no more and every update of a shared average
     * is a write other cores must see.
     */
    public abstract boolean times();

    /**
     * An attempt claimed a key nobody held and ran its work.
     *
     * @param workNanos how long the work ran, or -1 when it was not timed
     * @param tripNanos how long the claim's insert with COMMIT took, or -1 when not timed
     */
    public abstract void fresh(long workNanos, long tripNanos);

    /** An attempt found its key taken: answered by a stored row, or held by a concurrent call. */
    public abstract void taken();

    /**
     * A timed read of a key: the claim's statement claiming first (it found the key free), or the
     * rollback and read after a work-first insert found it taken.
     *
     * @param readNanos how long the read took
     */
    public abstract void read(long readNanos);

    /** A mode that never changes: it times nothing and learns nothing. */
    static final class Fixed extends ClaimOrder {
        private final boolean workFirst;

        Fixed(boolean workFirst) {
            this.workFirst = workFirst;
        }

        @Override
        public boolean workFirst() {
            return workFirst;
        }

        @Override
        public boolean times() {
            return false;
        }

        @Override
        public void fresh(long workNanos, long tripNanos) {}

        @Override
        public void taken() {}

        @Override
        public void read(long readNanos) {}
    }

    /**
     * {@link ClaimMode#ADAPTIVE}: exponentially weighted averages of the taken share and of the two
     * times, updated without locks (an update lost to a race moves an average a little less, which
     * no decision depends on), and the order they imply.
     */
    static final class Adaptive extends ClaimOrder {

        /** The weight of one call in the taken share: the share follows about the last 128 calls. */
        static final double SHARE_WEIGHT = 1.0 / 128;

        /**
         * The weight of one timed call in the times: with one call in {@link #TIMED_EVERY} timed, they
         * follow about the last 256 calls, so that the break-even does not move with every slow commit.
         */
        static final double TIME_WEIGHT = 1.0 / 32;

        /** One attempt in this many is timed. */
        static final int TIMED_EVERY = 8;

        /** A share under this is taken as none, so that calls on fresh keys stop writing it. */
        static final double NONE = 1e-4;

        /**
         * The break-even share measured by the bench's throughput (its fixed modes at 8 clients: 12-13%),
         * over the share the times give (25-31%): see bench/README.md, "The default claim".
         */
        static final double CALIBRATION = 0.5;

        /**
         * It claims first once the share passes the break-even times this, and works first again once
         * the share falls under the break-even it switched at times {@link #BACK_UNDER}. The share seen
         * is a sample (about ±2 points at 10% over 128 calls): switching at the break-even itself with
         * the way back at half of it, a share steady at 10% under a break-even of 12.5% crossed it now
         * and then and stayed claiming first three quarters of the time, where working first is
         * cheaper. A band of a third either side keeps it working first more than 90% of the time
         * there, and claiming first more than 90% of the time at 15% (what ClaimOrderTest asserts).
         */
        static final double SWITCH_OVER = 4.0 / 3;

        /** See {@link #SWITCH_OVER}. */
        static final double BACK_UNDER = 2.0 / 3;

        /** The break-even share is kept within these bounds whatever the times say. */
        static final double LEAST_BREAK_EVEN = 0.01;

        static final double MOST_BREAK_EVEN = 0.5;

        private final Consumer<ClaimOrderEvent> changed;
        private volatile boolean claimFirst;
        private volatile double share;
        private volatile double work = Double.NaN;
        private volatile double trip = Double.NaN;
        private volatile double read = Double.NaN;
        /** Reading first, the share under which it works first again, from the break-even it switched at. */
        private volatile double backUnder;

        Adaptive(Consumer<ClaimOrderEvent> changed) {
            this.changed = changed;
        }

        @Override
        public boolean workFirst() {
            return !claimFirst;
        }

        @Override
        public boolean times() {
            return java.util.concurrent.ThreadLocalRandom.current().nextInt(TIMED_EVERY) == 0;
        }

        @Override
        public void fresh(long workNanos, long tripNanos) {
            if (workNanos >= 0 && tripNanos >= 0) {
                work = average(work, (double) workNanos);
                trip = average(trip, (double) tripNanos);
            }
            observe(0);
        }

        @Override
        public void taken() {
            observe(1);
        }

        @Override
        public void read(long readNanos) {
            if (readNanos >= 0) {
                read = average(read, (double) readNanos);
            }
        }

        private static double average(double current, double sample) {
            return Double.isNaN(current) ? sample : current + (sample - current) * TIME_WEIGHT;
        }

        private void observe(int taken) {
            double was = share;
            double now = was + (taken - was) * SHARE_WEIGHT;
            if (now < NONE) {
                now = 0;
            }
            if (now != was) {
                share = now;
            }
            if (claimFirst) {
                double under = backUnder;
                if (now < under) {
                    turn(false, now, under / BACK_UNDER);
                }
            } else {
                double breakEven = breakEven();
                if (now > breakEven * SWITCH_OVER) {
                    turn(true, now, breakEven);
                }
            }
        }

        /**
         * Sets the order and tells of the change, under a lock taken only when turning: the one call
         * that changes it tells, and changes are told in the order they were made.
         */
        private synchronized void turn(boolean toClaimFirst, double share, double breakEven) {
            if (claimFirst == toClaimFirst) {
                return; // another call turned it meanwhile, and told of it
            }
            backUnder = breakEven * BACK_UNDER; // first: a call that sees the new order sees its way back
            claimFirst = toClaimFirst;
            changed.accept(
                    toClaimFirst
                            ? ClaimOrderEvent.toClaimFirst(share, breakEven)
                            : ClaimOrderEvent.toWorkFirst(share, breakEven));
        }

        /** The taken share above which claiming first costs less, from the times seen so far. */
        double breakEven() {
            double w = work;
            double r = read;
            if (!Double.isNaN(w) && !Double.isNaN(r) && w + r > 0) {
                return bounded(CALIBRATION * r / (r + w));
            }
            double t = trip;
            if (Double.isNaN(w) || Double.isNaN(t) || w + t <= 0) {
                return MOST_BREAK_EVEN; // nothing timed yet: only a share of taken keys that high switches
            }
            return bounded(CALIBRATION * t / (t + w));
        }

        private static double bounded(double share) {
            return Math.min(MOST_BREAK_EVEN, Math.max(LEAST_BREAK_EVEN, share));
        }

        /** The taken share as it stands. */
        double share() {
            return share;
        }
    }
}
