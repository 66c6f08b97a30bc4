package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.internal.store.EffectTransition.FencedClaim;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A claim this call holds: its intent, when it began, when its lease began (by this JVM's clock, no
 * later than the database's), the lookups counted so far, whether its unanswered attempts are
 * counted, why its stored request does not decode (null when it does; then it is never sent
 * again), and, for an effect settled by statement, whether it is marked sent (then only its record
 * or a statement settles it: nothing releases it).
 */
record HeldClaim<R>(
        Intent<R> intent,
        Instant claimedAt,
        long leaseStart,
        int lookups,
        Attempts attempts,
        @Nullable String undecodable,
        boolean sent) {

    /**
     * Whether a holder's unanswered attempts count toward the lookup schedule: the recoverer's do, so
     * that a claim reaches reconciliation on schedule; a retry's do not, the client deciding how often
     * it asks.
     */
    enum Attempts {
        COUNTED,
        NOT_COUNTED
    }

    /** A claim this call just made (phase 1 committed it). */
    static <R> HeldClaim<R> claimed(Intent<R> intent, Instant claimedAt, long leaseStart) {
        return new HeldClaim<>(intent, claimedAt, leaseStart, 0, Attempts.NOT_COUNTED, null, false);
    }

    /** A claim a retry took over after its lease passed; its request is the retry's when the stored one does not decode. */
    static <R> HeldClaim<R> takenOver(Intent<R> intent, Instant claimedAt, long leaseStart, int lookups) {
        return new HeldClaim<>(intent, claimedAt, leaseStart, lookups, Attempts.NOT_COUNTED, null, false);
    }

    /** A claim the recoverer took over. */
    static <R> HeldClaim<R> recovering(
            Intent<R> intent, Instant claimedAt, long leaseStart, int lookups, @Nullable String undecodable) {
        return new HeldClaim<>(intent, claimedAt, leaseStart, lookups, Attempts.COUNTED, undecodable, false);
    }

    /** The same hold, marked sent. */
    HeldClaim<R> markedSent() {
        return new HeldClaim<>(intent, claimedAt, leaseStart, lookups, attempts, undecodable, true);
    }

    /** The claim as fenced statements match it: key, fence and start. */
    FencedClaim fenced() {
        return new FencedClaim(intent.scope(), intent.key(), intent.fence(), claimedAt);
    }
}
