package io.github.idemtx.jooq.internal.store;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A live row of the claim table as the statements read it, the one row type of both front doors.
 * What a statement does not read is null, 0 or false: {@link ClaimStatements} reads the state, the
 * fingerprint, the result and the completion time; {@link EffectStatements#read} reads them all.
 *
 * @param state the row's state (a joined row's negated code read as its state)
 * @param fingerprint the request's fingerprint; null when the row is another door's
 * @param result the stored result or failure; null when the fingerprints differ, or for a null value
 * @param completedAt when the outcome was recorded (handed to reconciliation, for that state)
 * @param createdAt when the claim began: with scope and key, what the downstream key derives from
 * @param effect the effect that wrote it; null for {@code IdempotentTransaction}'s rows
 * @param fence the effect's fencing token
 * @param leaseExpired whether the effect holder's lease has passed
 * @param request the effect's stored request
 * @param lookups the effect's unanswered lookups so far
 */
// arrays, compared by identity in equals: these rows are read and taken apart, never compared or hashed
@SuppressWarnings("ArrayRecordComponent")
public record ClaimRow(
        ClaimState state,
        byte @Nullable [] fingerprint,
        byte @Nullable [] result,
        @Nullable Instant completedAt,
        @Nullable Instant createdAt,
        @Nullable String effect,
        long fence,
        boolean leaseExpired,
        byte @Nullable [] request,
        int lookups) {

    /** {@return a row as the in-transaction door reads it: its answer, nothing of an effect} */
    public static ClaimRow answer(
            ClaimState state, byte @Nullable [] fingerprint, byte @Nullable [] result, @Nullable Instant completedAt) {
        return new ClaimRow(state, fingerprint, result, completedAt, null, null, 0, false, null, 0);
    }
}
