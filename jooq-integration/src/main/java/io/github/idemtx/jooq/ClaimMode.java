package io.github.idemtx.jooq;

/**
 * In which order {@link IdempotentTransaction#run} claims the key and runs the work, when it owns
 * the transaction. Set on {@link IdempotentTransaction.Builder#claimMode}; the default is
 * {@link #ADAPTIVE}, which runs the work first while retries are rare and reads the key first while
 * they are not. All modes commit one effect per key, replay the first answer (whatever a
 * retry's own work would do today), refuse a mismatch and record a deterministic failure: they
 * differ in what a call costs, in whether a duplicate's work may run (and be rolled back) before
 * the duplicate learns that the key was taken, and in how a duplicate of a call still running is
 * answered (see {@link #WORK_FIRST}).
 *
 * <p>A call that joins the caller's transaction always reads first: the caller commits, so there is
 * no round trip to save, and a speculative run inside the caller's transaction would hold the
 * caller's locks for nothing.
 */
public enum ClaimMode {

    /**
     * Read the key first (one statement, sent with {@code BEGIN}) and take its
     * transaction-level advisory lock; run the work only when the key is free, then insert the
     * completed row with {@code COMMIT}. A first execution costs one round trip more than
     * {@link #WORK_FIRST}; a replay is that one read, with no lock taken, nothing written and the
     * work not run; a concurrent duplicate waits on the holder's lock without running its work, and
     * is answered {@code InProgress} once {@link io.github.idemtx.core.IdempotencyPolicy#duplicateWait()
     * duplicateWait} runs out, however long the holder's work is blocked.
     */
    READ_FIRST,

    /**
     * Run the work first; the completed claim row, inserted together with {@code COMMIT} in one
     * round trip, is the claim. A first execution costs the work's own statements and that one
     * round trip: the least a durable claim in the same transaction can cost. If the key was taken
     * (the insert meets the primary key), nothing of this attempt commits: the rollback and the read
     * of the row that took it go together in one round trip, and the call is answered as in
     * {@link #READ_FIRST} (replay, mismatch, the recorded rejection; an expired row is claimed and the
     * work runs again under the key's lock). A duplicate whose insert meets the holder's uncommitted
     * row waits for it within {@code duplicateWait}.
     *
     * <p>What that costs: a retry of a completed key runs the work once more before it replays
     * (5 round trips instead of 2 for the bench's transfer); concurrent duplicates each run the work
     * and only one commits; and a duplicate is not told {@code InProgress} while the holder's work
     * runs: its own work runs beside it, and waits on the same business rows' locks as the holder,
     * as long as the holder does. A work that throws on a key already answered gets that answer.
     * Choose it for work that is cheap, writes only through {@code tx} (which the library requires in
     * any mode: serialization failures already re-run the work) and whose retries are a small share
     * of calls: docs/performance.md gives the measured break-even. Keep {@link #READ_FIRST} for expensive work,
     * work with effects outside the transaction (better: {@link ExternalEffect}), hot rows that
     * speculative retries would contend for, and clients that rely on a prompt 409 for in-flight
     * duplicates.
     */
    WORK_FIRST,

    /**
     * The default: {@link #WORK_FIRST} while the keys a call meets already taken (retries of
     * completed calls, concurrent duplicates) are a small share of calls, {@link #READ_FIRST} while
     * they are not, switching by what the instance's own calls show. Fresh keys then cost what the
     * work and one insert with the COMMIT cost, the floor; and a retry storm, a replayed batch or a
     * redelivering queue soon reads first, so replays stop running the work.
     *
     * <p>Each instance of {@link IdempotentTransaction} follows the share of its recent calls (about
     * the last 128) that found their key taken, and the times of its work and of its claim statement.
     * Reading first costs one round trip on every fresh key; working first costs the work on every
     * taken key; so it reads first once the taken share passes the break-even of those two costs
     * (the claim statement's time over the work's and its own, scaled to what the bench measured;
     * at least 1% and at most 50%) by a third, and works first again once the share falls a third
     * under it.
     * Expensive work therefore reads first at a small share of retries, cheap work only in a
     * burst. Every answer is the same in either order; what changes with the order is what
     * {@link #READ_FIRST} and {@link #WORK_FIRST} say of cost, of a duplicate's work running, and of
     * how promptly a duplicate of a running call is answered {@code InProgress}: choose
     * {@link #READ_FIRST} where clients rely on that prompt answer or the work has effects outside
     * the transaction.
     */
    ADAPTIVE
}
