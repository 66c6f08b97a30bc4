package io.github.idemtx.jooq.internal.flow.claim;

import io.github.idemtx.jooq.internal.flow.Timings;
import io.github.idemtx.jooq.internal.store.ClaimStatements.Claim;
import io.github.idemtx.jooq.internal.store.ClaimStatements.RecordedFirst;
import org.jspecify.annotations.Nullable;

/**
 * What one attempt of {@link ClaimFlow} tells as its steps end: the call's {@link Timings} (where its
 * time goes) and, for an attempt in a transaction of the library's own, the {@link ClaimOrder} (whether
 * the key was free or taken, and, in the attempts it times, how long the read, the work and the
 * recording took). The protocol's paths call one method per step that ended and decide nothing
 * here. Confined to the call's thread.
 */
final class AttemptMeter {

    private final Timings timings;
    /** The order that learns from this attempt; null when it learns nothing from it. */
    private final @Nullable ClaimOrder order;

    private final boolean timed;
    /** The phase's start, for {@link #timings}. */
    private long mark;
    /** The current step's start when {@link #timed} (System.nanoTime), else -1. */
    private long stepStart;

    private long workNanos = -1;

    private AttemptMeter(Timings timings, @Nullable ClaimOrder order) {
        this.timings = timings;
        this.order = order;
        this.timed = order != null && order.times();
        this.stepStart = clock();
    }

    /**
     * A claim-first attempt begins, reading the key now; a joined one (every order claims first
     * then, see {@link io.github.idemtx.jooq.ClaimMode}) teaches the order nothing.
     */
    static AttemptMeter claimFirst(Timings timings, ClaimOrder order, boolean joined) {
        timings.attempt(joined);
        return new AttemptMeter(timings, joined ? null : order);
    }

    /** A work-first attempt begins, with its work now. */
    static AttemptMeter workFirst(Timings timings, ClaimOrder order) {
        timings.attempt(false);
        long mark = timings.now();
        AttemptMeter meter = new AttemptMeter(timings, order);
        meter.mark = mark;
        return meter;
    }

    /**
     * A work-first attempt that found the key taken goes on claiming first: the same attempt, in the
     * same timings, and counted by the order already.
     */
    AttemptMeter goingOnClaimingFirst() {
        return new AttemptMeter(timings, null);
    }

    /** The claim statements (which told the timings themselves) answered {@code claimed}; the work begins. */
    void claimed(Claim claimed) {
        mark = timings.now();
        if (order == null) {
            return;
        }
        if (!(claimed instanceof Claim.Held)) {
            order.taken();
        }
        long now = clock();
        if (timed && claimed instanceof Claim.Held) {
            order.read(now - stepStart); // a free key: one round trip, no wait on a holder
        }
        stepStart = now;
    }

    /** The work returned or threw; the recording of its outcome begins. */
    void workEnded() {
        mark = timings.work(mark);
        long now = clock();
        workNanos = timed ? now - stepStart : -1;
        stepStart = now;
    }

    /** A claim-first attempt recorded its work's result: the key was free. */
    void executed() {
        if (order != null) {
            order.fresh(workNanos, timed ? System.nanoTime() - stepStart : -1);
        }
        recordingEnded();
    }

    /** The outcome of a failed work, or what stood in for it (the re-claim's wait included), is settled. */
    void recordingEnded() {
        timings.recording(mark);
    }

    /**
     * A work-first attempt's insert with COMMIT ended: {@code recorded}, or null when it failed.
     * Timed out, all of it was the wait on another call's uncommitted row.
     */
    void inserted(@Nullable RecordedFirst recorded) {
        if (recorded == RecordedFirst.TIMED_OUT) {
            timings.waiting(mark);
        } else {
            timings.recording(mark);
        }
        if (order == null || recorded == null) {
            return;
        }
        if (recorded == RecordedFirst.COMMITTED) {
            order.fresh(workNanos, timed ? System.nanoTime() - stepStart : -1);
        } else {
            order.taken();
        }
        stepStart = clock(); // a taken key's read begins
    }

    /** The read of the key a work-first attempt found taken ended. */
    void reread() {
        if (timed && order != null) {
            order.read(System.nanoTime() - stepStart);
        }
    }

    /** A work-first attempt gives up on a key another transaction holds: it found the key taken. */
    void foundHeld() {
        if (order != null) {
            order.taken();
        }
    }

    private long clock() {
        return timed ? System.nanoTime() : -1;
    }
}
