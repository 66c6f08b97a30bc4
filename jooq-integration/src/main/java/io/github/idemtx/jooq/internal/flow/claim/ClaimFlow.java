package io.github.idemtx.jooq.internal.flow.claim;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.core.WorkFailedException;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.TransactionalWork;
import io.github.idemtx.jooq.internal.flow.Timings;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.ClaimStatements;
import io.github.idemtx.jooq.internal.store.ClaimStatements.Claim;
import io.github.idemtx.jooq.internal.store.FailureEncoding;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.store.StoredValues;
import io.github.idemtx.jooq.internal.tx.Boundary;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import io.github.idemtx.jooq.internal.tx.Units;
import io.github.idemtx.jooq.internal.tx.WorkGuard;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import org.jooq.Configuration;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * One attempt of the protocol (docs/claim-protocol.md): claim, work, record, and the mapping of
 * what the claim found to an {@link Outcome}. It runs inside a {@link Boundary} that {@link Units}
 * opened, and ends it on every path that returns; whatever it throws, the caller undoes the
 * boundary. Immutable and thread-safe.
 *
 * @param <T> the work's result type
 */
public final class ClaimFlow<T> {

    /**
     * One call: what it is for, its one deadline (System.nanoTime) for waiting on other holders,
     * shared by every attempt and the failure's re-claim, and where its time goes
     * ({@link Timings#NONE} when nobody listens).
     */
    public record Call(
            Scope scope,
            IdempotencyKey key,
            Fingerprint fingerprint,
            TransactionalWork<?> work,
            long deadline,
            Timings timings) {

        /** What is left of the call's wait, in whole ms (0 when spent). */
        int waitLeftMillis() {
            long left = deadline - System.nanoTime();
            return left <= 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000);
        }
    }

    private final Configuration configuration;
    private final IdempotencyPolicy policy;
    private final StoredValues<T> values;
    private final ClaimStatements sql;
    private final long ttlMillis;
    private final ClaimOrder order;

    /**
     * @param configuration the configuration the work's {@code tx} is derived from
     * @param order the order of claim and work in transactions of the library's own; one per
     *     {@code IdempotentTransaction}, as an adaptive order learns from all its calls
     */
    public ClaimFlow(
            Configuration configuration,
            IdempotencyPolicy policy,
            ResultCodec<T> codec,
            ClaimStatements sql,
            ClaimOrder order) {
        this.configuration = configuration;
        this.policy = policy;
        this.values = new StoredValues<>(codec, policy.maxResultBytes());
        this.sql = sql;
        this.ttlMillis = policy.ttl().toMillis();
        this.order = order;
    }

    /**
     * One attempt, ending the boundary: when the order says so (own transactions only, see
     * {@link ClaimMode}) the work, then the completed row with COMMIT as the claim; otherwise claim,
     * work, record.
     */
    public Outcome<T> attempt(Connection connection, Call call, Boundary boundary) {
        return !boundary.joined() && order.workFirst()
                ? attemptWorkFirst(connection, call, boundary)
                : attemptClaimFirst(connection, call, boundary, true);
    }

    /**
     * The work, then the completed row's INSERT with COMMIT, which claims the key. When the key
     * turns out to be taken, this attempt's writes are rolled back and the key is read and answered
     * (or, expired or gone, claimed) as {@link ClaimMode#CLAIM_FIRST} does, in a new transaction.
     * Whatever fails before the key is known to be ours (the work, the result's encoding, the
     * insert), a key already answered gets its answer: a retry of a completed call must replay
     * whatever its work does against today's data.
     */
    private Outcome<T> attemptWorkFirst(Connection connection, Call call, Boundary boundary) {
        Timings timings = call.timings();
        timings.attempt(false);
        long mark = timings.now();
        boolean timed = order.times();
        long workStart = timed ? System.nanoTime() : -1;
        T value;
        try {
            value = execute(call, connection, boundary, false);
        } catch (WorkEndedTransactionException e) {
            throw e; // the caller's rollback ends the attempt; nothing is answered for a work that broke its
            // transaction
        } catch (Exception e) {
            if (policy.classify(e).isEmpty()
                    || SqlStates.isRetryable(e)) { // a deterministic failure is recorded, answering as it goes
                Outcome<T> answered = answeredDespite(connection, call, boundary, e);
                if (answered != null) {
                    return answered;
                }
                if (SqlStates.isLockWaitCut(e)) {
                    // The session's lock_timeout or statement_timeout cut a wait on a row another
                    // transaction holds, and the key has no answer yet. Working first, this call cannot
                    // tell a duplicate still running (which holds no lock of the key until its own
                    // insert) from any other holder of the row: it answers as a duplicate waiting on a
                    // holder past the bound is answered, InProgress, nothing of it committed, rather
                    // than the raw 55P03/57014 that claiming first never gives a duplicate.
                    discard(boundary);
                    order.taken();
                    return new Outcome.InProgress<>(policy.retryAfter());
                }
            }
            return workFailed(connection, call, boundary, e, mark);
        }
        mark = timings.work(mark);
        long insertStart = timed ? System.nanoTime() : -1;
        ClaimStatements.RecordedFirst recorded = null;
        try {
            recorded = sql.claimByRecord(
                    connection,
                    call.scope().value(),
                    call.key().value(),
                    call.fingerprint().bytes(),
                    encode(call, value),
                    ttlMillis);
        } catch (SQLException e) {
            RuntimeException lost = lostConnection(connection, call, e, "the idempotency key's insert");
            if (lost != null) {
                throw lost;
            }
            if (SqlStates.isNotMigrated(e)) {
                throw SqlStates.notMigrated(e, sql.schema());
            }
            if (SqlStates.isNoPartition(e)) {
                throw SqlStates.noPartition(e, sql.schema());
            }
            DataAccessException failed = new DataAccessException(
                    "recording the outcome of the idempotency key failed" + " (SQLSTATE " + e.getSQLState() + ")", e);
            return answeredOrThrow(
                    connection, call, boundary, failed); // e.g. 25P02: the work left its transaction aborted
        } catch (RuntimeException e) {
            return answeredOrThrow(connection, call, boundary, e); // the result could not be encoded
        } finally {
            if (recorded == ClaimStatements.RecordedFirst.TIMED_OUT) {
                timings.waiting(mark); // all of it was the wait on another call's uncommitted row
            } else {
                timings.recording(mark);
            }
        }
        if (recorded == ClaimStatements.RecordedFirst.COMMITTED) {
            order.fresh(timed ? insertStart - workStart : -1, timed ? System.nanoTime() - insertStart : -1);
        } else {
            order.taken();
        }
        return switch (recorded) {
            // nothing to end: the insert carried the COMMIT (a keep() could only find the connection
            // closed since, and would then wrongly say that nothing committed)
            case COMMITTED -> new Outcome.Executed<>(value);
            case TIMED_OUT -> {
                discard(boundary);
                yield new Outcome.InProgress<>(policy.retryAfter());
            }
            case TAKEN -> {
                // nothing of this attempt commits; a live row answers, else claim it as CLAIM_FIRST does
                Claim.Answered answered;
                long readStart = timed ? System.nanoTime() : -1;
                try {
                    answered = sql.rollbackAndRead(
                            connection,
                            call.scope().value(),
                            call.key().value(),
                            call.fingerprint().bytes());
                } catch (SQLException e) {
                    throw SqlStates.storeFailure(
                            "reading the answer of the idempotency key, which another call holds,"
                                    + " failed; nothing of this call was committed",
                            e,
                            sql.schema());
                }
                if (timed) {
                    order.read(System.nanoTime() - readStart);
                }
                if (answered != null) {
                    discard(boundary); // a no-op: no transaction is open
                    yield answer(call, answered);
                }
                yield attemptClaimFirst(connection, call, boundary, false);
            }
            default -> throw new IllegalStateException(String.valueOf(recorded));
        };
    }

    /**
     * A joined record that failed with 40001 ({@code e}): a duplicate committed the key between this
     * call's read and its lock. Rolled back to the savepoint, a fresh read (READ COMMITTED) sees
     * that row, whose answer is this call's, the savepoint released; null when the call is not
     * joined, the failure is another, or the read finds no answer (REPEATABLE READ): throw {@code e}.
     */
    private @Nullable Outcome<T> joinedRaceAnswer(
            Connection connection, Call call, Boundary boundary, DataAccessException e) {
        if (!boundary.joined() || !SqlStates.has(e, SqlStates.SERIALIZATION_FAILURE)) {
            return null;
        }
        Outcome<T> answered = answeredDespite(connection, call, boundary, e);
        if (answered != null) {
            discard(boundary);
        }
        return answered;
    }

    /** {@link #answeredDespite}, else {@code e} thrown, the boundary ended. */
    private Outcome<T> answeredOrThrow(Connection connection, Call call, Boundary boundary, RuntimeException e) {
        Outcome<T> answered = answeredDespite(connection, call, boundary, e);
        if (answered != null) {
            return answered;
        }
        SQLException rollbackFailure = boundary.undoWork(); // a no-op unless the probe could not end it
        if (rollbackFailure != null) {
            e.addSuppressed(rollbackFailure);
        }
        throw e;
    }

    /**
     * Something failed with {@code e} before this call knew whether the key was already answered:
     * rolls back, reads the key (no waiting) and returns its answer when it has one, the boundary
     * ended; null when it has none, {@code e} (with any failure of this probe suppressed into it)
     * to be thrown by the caller, who also undoes the boundary.
     */
    private @Nullable Outcome<T> answeredDespite(Connection connection, Call call, Boundary boundary, Exception e) {
        SQLException rollbackFailure = boundary.undoWork();
        if (rollbackFailure != null) {
            e.addSuppressed(rollbackFailure); // the connection is gone: the first failure says how
            return null;
        }
        @Nullable Claim claimed;
        try {
            // no waiting: a key another transaction holds (null) has no answer yet
            claimed = sql.claim(
                    connection,
                    call.scope().value(),
                    call.key().value(),
                    call.fingerprint().bytes());
        } catch (SQLException probe) {
            e.addSuppressed(probe);
            return null;
        }
        SQLException ended = boundary.undoWork(); // read only; a lock it took is released
        if (!(claimed instanceof Claim.Answered answered)) {
            if (ended != null) {
                e.addSuppressed(ended);
            }
            return null;
        }
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt(); // answered all the same: keep the thread's flag set
        }
        return answer(call, answered); // nothing of this call was written; a failed rollback loses nothing
    }

    /**
     * Claim (read the key, take its lock), work, record, end the boundary.
     *
     * @param newAttempt false when it goes on from a WORK_FIRST attempt that found the key taken
     */
    private Outcome<T> attemptClaimFirst(Connection connection, Call call, Boundary boundary, boolean newAttempt) {
        Timings timings = call.timings();
        if (newAttempt) {
            timings.attempt(boundary.joined());
        }
        // a joined call claims first in every order, and a work-first attempt going on here was counted
        boolean learns = newAttempt && !boundary.joined();
        boolean timed = learns && order.times();
        long readStart = timed ? System.nanoTime() : -1;
        Claim claimed = claim(connection, call, timings);
        long mark = timings.now();
        if (learns && !(claimed instanceof Claim.Held)) {
            order.taken();
        }
        long workStart = timed ? System.nanoTime() : -1;
        if (timed && claimed instanceof Claim.Held) {
            order.read(workStart - readStart); // a free key: one round trip, no wait on a holder
        }
        Claim.Held held;
        switch (claimed) {
            case Claim.Held h -> held = h;
            case Claim.Answered answered -> {
                discard(boundary); // nothing was written
                return answer(call, answered);
            }
            case Claim.TimedOut timedOut -> {
                discard(boundary);
                return new Outcome.InProgress<>(policy.retryAfter());
            }
            case Claim.Superseded superseded -> throw new Units.Superseded(superseded.cause());
        }

        T value;
        try {
            value = execute(call, connection, boundary, true);
        } catch (WorkEndedTransactionException e) {
            throw e;
        } catch (Exception e) {
            return workFailed(connection, call, boundary, e, mark);
        }
        mark = timings.work(mark);
        long recordStart = timed ? System.nanoTime() : -1;
        byte[] encoded = encode(call, value);
        boolean commitInRecord = !boundary.joined() && held.recordCarriesCommit();
        try {
            record(connection, call, held, ClaimState.SUCCEEDED, encoded, commitInRecord, boundary.joined());
        } catch (DataAccessException e) {
            RuntimeException lost =
                    boundary.joined() ? null : lostConnection(connection, call, e, "the outcome's record");
            if (lost != null) {
                throw lost;
            }
            Outcome<T> answered = joinedRaceAnswer(connection, call, boundary, e);
            if (answered != null) {
                return answered;
            }
            throw e;
        }
        if (!commitInRecord) { // else the record carried the COMMIT: nothing to end
            keep(connection, boundary, call);
        }
        if (learns) {
            order.fresh(timed ? recordStart - workStart : -1, timed ? System.nanoTime() - recordStart : -1);
        }
        timings.recording(mark);
        return new Outcome.Executed<>(value);
    }

    /**
     * The work threw {@code e} (it began at {@code mark}, when timed): its writes are undone; a
     * deterministic failure is recorded (claiming the key again, which the rollback released) and
     * answered, anything else is thrown.
     */
    private Outcome<T> workFailed(Connection connection, Call call, Boundary boundary, Exception e, long mark) {
        Timings timings = call.timings();
        mark = timings.work(mark);
        // undo the work's writes first: the key is free while the policy classifies
        SQLException rollbackFailure = boundary.undoWork();
        Optional<Failure> failure = deterministicFailure(e);
        if (rollbackFailure != null) {
            if (failure.isPresent()) {
                throw notRecorded(e, rollbackFailure);
            }
            RuntimeException thrown = unchecked(call, e);
            thrown.addSuppressed(rollbackFailure);
            throw thrown;
        }
        if (failure.isEmpty()) {
            throw unchecked(call, e);
        }
        Outcome<T> outcome;
        try {
            outcome = recordFailure(connection, call, failure.get(), boundary.joined());
        } catch (DataAccessException recordFailed) {
            // the rollback to the savepoint had released the key's lock, so the re-claim can race too
            Outcome<T> answered = joinedRaceAnswer(connection, call, boundary, recordFailed);
            if (answered == null) {
                throw recordFailed;
            }
            return answered;
        }
        if (outcome instanceof Outcome.Rejected<T>) {
            keep(connection, boundary, call);
        } else {
            discard(boundary); // a duplicate's outcome, or the bound ran out and aborted the claim
        }
        timings.recording(mark); // the re-claim's wait included
        return outcome;
    }

    /**
     * Ends a boundary whose writes are not kept, before an answer that does not depend on them (a
     * stored answer, InProgress). In a transaction of its own a rollback that fails has lost
     * nothing: the server drops an uncommitted transaction with its connection, which the pool then
     * discards; so the answer stands. A savepoint that cannot be rolled back leaves the caller's
     * transaction broken, which the caller must hear.
     */
    private static void discard(Boundary boundary) {
        if (boundary.joined()) {
            boundary.abandon();
        } else {
            boundary.undoWork(); // its failure, if any, changes no answer
        }
    }

    /** Ends the boundary keeping its writes; a connection lost while a COMMIT was in flight is reported as such. */
    private static void keep(Connection connection, Boundary boundary, Call call) {
        try {
            boundary.keep();
        } catch (DataAccessException e) {
            if (boundary.joined() && SqlStates.has(e, SqlStates.NO_SUCH_SAVEPOINT)) {
                // only an end of the caller's transaction since the call began removes its savepoint
                throw new WorkEndedTransactionException(
                        call.scope(),
                        call.key(),
                        "a COMMIT or ROLLBACK past the guard (the call's savepoint in the caller's transaction is gone)",
                        true,
                        e);
            }
            RuntimeException lost = boundary.joined() ? null : lostConnection(connection, call, e, "the COMMIT");
            throw lost != null ? lost : e;
        }
    }

    /**
     * What a failed statement of a transaction of the call's own answers when its connection is
     * gone: {@link io.github.idemtx.core.CommitOutcomeUnknownException} when a COMMIT was in flight
     * ({@link SqlStates#isCommitInDoubt}: the retry replays or runs once); otherwise a
     * DataAccessException saying that nothing of the call committed: the connection was found closed
     * before {@code what} was sent (pgjdbc's 08003, or a pool's closed connection, which HikariCP
     * reports with no SQLSTATE: lost under the work, which went on, or discarded by the pool), or the
     * server failed {@code what} with an ordinary error first. Null when the connection is not lost.
     * Never for a statement after a COMMIT that went out: it would say nothing committed.
     */
    private static @Nullable RuntimeException lostConnection(
            Connection connection, Call call, Exception e, String what) {
        if (SqlStates.isCommitInDoubt(e)) {
            return SqlStates.commitUnknown(call.scope(), call.key(), e);
        }
        String state = SqlStates.state(e);
        boolean closed = Jdbc.isClosed(connection);
        if (SqlStates.CONNECTION_DOES_NOT_EXIST.equals(state) || (state == null && closed)) {
            return new DataAccessException(
                    "the connection was already closed when " + what + " was to be sent (lost under the work, which"
                            + " went on, or discarded by the pool); nothing of this call was committed",
                    e);
        }
        if (!closed && !SqlStates.isConnectionLoss(e)) {
            return null;
        }
        return new DataAccessException(
                what + " failed (SQLSTATE " + state + ") and the connection is closed (lost, or discarded by the"
                        + " pool); nothing of this call was committed",
                e);
    }

    /**
     * Claims the key, waiting on its holder within what is left of the call's wait; {@code timings}
     * is told the time of each step.
     */
    private Claim claim(Connection connection, Call call, Timings timings) {
        String scope = call.scope().value();
        String key = call.key().value();
        byte[] fingerprint = call.fingerprint().bytes();
        long mark = timings.now();
        try {
            Claim claimed = sql.claim(connection, scope, key, fingerprint);
            mark = timings.claiming(mark);
            if (claimed != null) {
                return claimed;
            }
            try {
                return sql.await(connection, scope, key, fingerprint, call.waitLeftMillis());
            } finally {
                timings.waiting(mark);
            }
        } catch (SQLException e) {
            throw SqlStates.storeFailure("the claim of the idempotency key failed", e, sql.schema());
        }
    }

    /** See {@link ClaimStatements#record}: {@code commit} sends the COMMIT with the row where it can, and returns null then. */
    private @Nullable Instant record(
            Connection connection,
            Call call,
            Claim.Held held,
            ClaimState state,
            byte @Nullable [] result,
            boolean commit,
            boolean joined) {
        try {
            return sql.record(
                    connection,
                    held,
                    call.scope().value(),
                    call.key().value(),
                    call.fingerprint().bytes(),
                    state,
                    result,
                    ttlMillis,
                    commit,
                    joined);
        } catch (SQLException e) {
            throw SqlStates.storeFailure("recording the outcome of the idempotency key failed", e, sql.schema());
        }
    }

    /**
     * Records a deterministic failure after the work's writes were rolled back, which released the
     * key: claims it again (within what is left of the call's wait), waiting for a duplicate that
     * took it meanwhile. If that duplicate completed the key, its outcome is ours (one key, one
     * answer). The caller's {@code keep()} commits.
     */
    private Outcome<T> recordFailure(Connection connection, Call call, Failure failure, boolean joined) {
        byte[] encoded = FailureEncoding.encode(failure);
        // what replays will see, e.g. with unpaired surrogates replaced: the first caller sees the same
        Failure recorded = FailureEncoding.decode(encoded);
        return switch (claim(connection, call, Timings.NONE)) { // the caller counts it as recording
            case Claim.Held held -> {
                // without commit, record() returns the completion time (Rejected would throw the same without it)
                Instant recordedAt = Objects.requireNonNull(
                        record(connection, call, held, ClaimState.FAILED, encoded, false, joined), "recordedAt");
                yield new Outcome.Rejected<>(recorded, recordedAt, false);
            }
            case Claim.Answered answered -> answer(call, answered);
            case Claim.TimedOut timedOut -> new Outcome.InProgress<>(policy.retryAfter());
            case Claim.Superseded superseded -> throw new Units.Superseded(superseded.cause());
        };
    }

    private Outcome<T> answer(Call call, Claim.Answered claim) {
        if (!call.fingerprint().matches(claim.row().fingerprint())) {
            return new Outcome.FingerprintMismatch<>();
        }
        Outcome<T> settled = values.settled(call.scope(), call.key(), claim.row());
        return settled != null ? settled : new Outcome.InProgress<>(policy.retryAfter()); // a V1 caller's running row
    }

    /**
     * Runs the work on a guarded {@code tx} and checks, client-side, that its transaction is still
     * the one the attempt began; then pushes writes the caller's framework holds in memory to the
     * database (joined calls), so that what follows undoes or keeps them with the rest.
     *
     * @param openBefore whether a statement or savepoint opened the transaction before the work
     * @throws WorkEndedTransactionException when the work tried to end, or ended, its transaction
     *     (with whatever the work threw as its cause)
     */
    @SuppressWarnings("unchecked")
    private @Nullable T execute(Call call, Connection connection, Boundary boundary, boolean openBefore)
            throws Exception {
        WorkGuard guard = new WorkGuard(connection, openBefore || boundary.joined());
        T value;
        try {
            value = ((TransactionalWork<T>) call.work()).execute(guard.context(configuration));
        } catch (Exception e) {
            WorkEndedTransactionException refused = guard.refusal(call.scope(), call.key(), e);
            if (refused != null) {
                throw refused;
            }
            flushAfterFailure(boundary, e);
            throw e;
        }
        guard.check(call.scope(), call.key());
        boundary.flush(); // what it throws (a constraint the pending writes meet) is the work's failure
        return value;
    }

    /**
     * After the work threw: what the caller's framework still holds in memory is pushed out, so the
     * rollback to the savepoint undoes it; when that fails, the failure cannot be answered as a
     * recorded rejection (those writes would commit later with the caller), so it is thrown.
     */
    private static void flushAfterFailure(Boundary boundary, Exception e) throws Exception {
        try {
            boundary.flush();
        } catch (RuntimeException flushFailed) {
            flushFailed.addSuppressed(e);
            throw new FlushFailedException(flushFailed);
        }
    }

    /** A joined call's flush failed after the work threw: never recorded as the work's deterministic failure. */
    static final class FlushFailedException extends DataAccessException {
        private static final long serialVersionUID = 1L;

        FlushFailedException(RuntimeException cause) {
            super(
                    "the work failed, and flushing the caller's transaction's pending writes (so that they are rolled"
                            + " back with the work's) failed too: " + cause.getMessage(),
                    cause);
        }
    }

    private Optional<Failure> deterministicFailure(Exception e) {
        // a serialization failure or deadlock is never the request's fault, whatever wraps it
        return SqlStates.isRetryable(e) ? Optional.empty() : policy.classify(e);
    }

    /**
     * A deterministic failure that could not be recorded because the rollback of the work failed
     * (the connection is gone). It must not reach the caller as the failure itself, which reads as
     * final: nothing was recorded, and a retry with the same key decides afresh.
     */
    private static DataAccessException notRecorded(Exception failure, SQLException rollbackFailure) {
        DataAccessException e = new DataAccessException(
                "the work failed deterministically (" + failure
                        + ") but the failure could not be recorded, the rollback failed; nothing was committed:"
                        + " retry with the same key",
                rollbackFailure);
        e.addSuppressed(failure);
        return e;
    }

    private static RuntimeException unchecked(Call call, Exception e) {
        if (e instanceof RuntimeException r) {
            return r;
        }
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt(); // the work was interrupted: keep the thread's flag set
        }
        return new WorkFailedException(call.scope(), call.key(), e);
    }

    private byte @Nullable [] encode(Call call, @Nullable T value) {
        return values.encode(call.scope(), call.key(), value);
    }
}
