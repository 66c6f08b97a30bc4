package io.github.idemtx.jooq;

/**
 * In which order {@link IdempotentTransaction#run} claims the key and runs the work, when it owns
 * the transaction. Set on {@link IdempotentTransaction.Builder#claimMode}; the default is
 * {@link #CLAIM_FIRST}: the key is claimed before the work runs, so a retry of a completed call
 * never runs the work, and a duplicate of a call still running is answered {@code InProgress}
 * within {@link io.github.idemtx.core.IdempotencyPolicy#duplicateWait() duplicateWait}, whatever
 * rows the work locks. Every mode commits one effect per key, replays the first answer, refuses a
 * mismatch and records a deterministic failure; {@link #WORK_FIRST} and {@link #ADAPTIVE} save one
 * round trip on a fresh key at the price of running a retry's work (and rolling it back) and of
 * answering a duplicate of a running call late: opt into them only for work that takes no row
 * locks a concurrent call would wait on and has no effect outside the transaction (see
 * docs/claim-modes.md for the measured costs).
 *
 * <p>A call that joins the caller's transaction always claims first: the caller commits, so there
 * is no round trip to save, and a speculative run inside the caller's transaction would hold the
 * caller's locks for nothing.
 */
public enum ClaimMode {

    /**
     * The default. Claim the key first (one statement, sent with {@code BEGIN}: it reads the key's
     * row and takes the key's transaction-level advisory lock); run the work only when the key is
     * free, then insert the completed row with {@code COMMIT}. A first execution costs one round trip
     * more than {@link #WORK_FIRST}; a retry of a completed call is that one read and the end of the
     * transaction, with no lock taken, nothing written and the work not run; a concurrent duplicate
     * waits on the holder's lock without running its work, and is answered {@code InProgress} once
     * {@link io.github.idemtx.core.IdempotencyPolicy#duplicateWait() duplicateWait} runs out, however
     * long the holder's work is blocked.
     */
    CLAIM_FIRST,

    /**
     * Run the work first; the completed claim row, inserted together with {@code COMMIT} in one
     * round trip, is the claim. A first execution costs the work's own statements and that one
     * round trip: the least a durable claim in the same transaction can cost. If the key was taken
     * (the insert meets the primary key), nothing of this attempt commits: the rollback and the read
     * of the row that took it go together in one round trip, and the call is answered as in
     * {@link #CLAIM_FIRST} (replay, mismatch, the recorded rejection; an expired row is claimed and
     * the work runs again under the key's lock). A duplicate whose insert meets the holder's
     * uncommitted row waits for it within {@code duplicateWait}.
     *
     * <p>What that costs: a retry of a completed key runs the work once more before it replays
     * (5 round trips instead of 2 for the bench's transfer); concurrent duplicates each run the work
     * and only one commits; and a duplicate is not told {@code InProgress} while the holder's work
     * runs: its own work runs beside it, and waits on the same business rows' locks as the holder,
     * as long as the holder does, which can be far longer than {@code duplicateWait}. A work that
     * throws on a key already answered gets that answer. Choose it only for work that is cheap,
     * takes no row locks a concurrent call would wait on, writes only through {@code tx} and whose
     * retries are a small share of calls: docs/claim-modes.md gives the measured break-even. Keep
     * {@link #CLAIM_FIRST} for expensive work, work that locks rows (a transfer locks its accounts),
     * work with effects outside the transaction (better: {@link ExternalEffect}), and clients that
     * rely on a prompt 409 for in-flight duplicates.
     */
    WORK_FIRST,

    /**
     * {@link #WORK_FIRST} while the keys a call meets already taken (retries of completed calls,
     * concurrent duplicates) are a small share of calls, {@link #CLAIM_FIRST} while they are not,
     * switching by what the instance's own calls show. Fresh keys then cost what the work and one
     * insert with the COMMIT cost; and a retry storm, a replayed batch or a redelivering queue soon
     * claims first, so replays stop running the work. Until it switches, what {@link #WORK_FIRST}
     * says holds: retries run the work and are rolled back, and a duplicate of a running call whose
     * work waits on the same row locks is answered late. The same conditions as for
     * {@link #WORK_FIRST} apply.
     *
     * <p>Each instance of {@link IdempotentTransaction} follows the share of its recent calls (about
     * the last 128) that found their key taken, and the times of its work and of its claim statement.
     * Claiming first costs one round trip on every fresh key; working first costs the work on every
     * taken key; so it claims first once the taken share passes the break-even of those two costs
     * (the claim statement's time over the work's and its own, scaled to what the bench measured;
     * at least 1% and at most 50%) by a third, and works first again once the share falls a third
     * under it. Expensive work therefore claims first at a small share of retries, cheap work only
     * in a burst. Every answer is the same in either order.
     */
    ADAPTIVE,

    /**
     * The name {@link #CLAIM_FIRST} had before 1.0.
     *
     * @deprecated since 1.0, renamed {@link #CLAIM_FIRST}, which it behaves as; an instance built
     *     with it reports {@link #CLAIM_FIRST} from {@link IdempotentTransaction#claimMode()}. It will
     *     be removed in 2.0.
     */
    @Deprecated(since = "1.0", forRemoval = true)
    READ_FIRST;

    /** {@return this mode, with the deprecated name mapped to the one it stands for} */
    ClaimMode canonical() {
        return this == READ_FIRST ? CLAIM_FIRST : this;
    }
}
