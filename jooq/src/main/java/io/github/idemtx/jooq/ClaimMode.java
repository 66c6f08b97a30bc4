package io.github.idemtx.jooq;

/**
 * In which order {@link IdempotentTransaction#run} claims the key and runs the work, when it owns
 * the transaction. Set on {@link IdempotentTransaction.Builder#claimMode}; the default is
 * {@link #WORK_FIRST}. Both modes give every situation the same answer (one effect per key, the
 * first answer replayed, a mismatch refused, a deterministic failure recorded): they differ in
 * what a call costs and in whether a duplicate's work may run (and be rolled back) before the
 * duplicate learns that the key was taken.
 *
 * <p>A call that joins the caller's transaction always reads first: the caller commits, so there is
 * no round trip to save, and a speculative run inside the caller's transaction would hold the
 * caller's locks for nothing.
 */
public enum ClaimMode {

    /**
     * Run the work first; the completed claim row, inserted together with {@code COMMIT} in one
     * round trip, is the claim. A first execution costs the work's own statements and that one
     * round trip, the least a durable claim in the same transaction can cost. If the row's key was
     * taken (the insert meets the primary key), nothing of this attempt commits: it is rolled back
     * and the key is then read and answered as in {@link #READ_FIRST} (replay, mismatch, the
     * recorded rejection; an expired row is taken over). A concurrent duplicate that reaches its
     * insert while the holder's commit is in flight waits for it, bounded by the call's
     * {@link io.github.idemtx.core.IdempotencyPolicy#duplicateWait() duplicateWait}.
     *
     * <p>So a retry of a completed key runs the work once more before it replays (about three times
     * the cost of a {@link #READ_FIRST} replay in the bench), and concurrent duplicates may each run
     * the work; only one commits. That is safe for work that writes only through {@code tx}, which
     * the library requires in any mode: serialization failures already re-run the work. Choose
     * {@link #READ_FIRST} for work that must not run twice even speculatively: expensive work, work
     * with effects outside the transaction (better: {@link ExternalEffect}), or where retries are
     * a large share of calls (the README gives the measured break-even).
     */
    WORK_FIRST,

    /**
     * Read the key first (one statement, sent with {@code BEGIN}) and take its transaction-level
     * advisory lock; run the work only when the key is free, then insert the completed row with
     * {@code COMMIT}. A first execution costs one round trip more than {@link #WORK_FIRST}; a replay
     * is that one read, with no lock taken and nothing written; a concurrent duplicate waits on the
     * holder's lock (bounded by {@code duplicateWait}) without running its work.
     */
    READ_FIRST
}
