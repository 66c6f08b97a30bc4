package io.github.idemtx.jooq.internal.flow.claim;

import static io.github.idemtx.jooq.internal.flow.claim.BoundaryEndings.discard;
import static io.github.idemtx.jooq.internal.flow.claim.BoundaryEndings.keep;
import static io.github.idemtx.jooq.internal.flow.claim.BoundaryEndings.lostConnection;

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
import io.github.idemtx.jooq.internal.tx.Units;
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
 * boundary. The claim-first and the work-first path tell an {@link AttemptMeter} as each step ends:
 * the call's timings and what the claim order learns are its business, not theirs; the work runs as
 * {@link GuardedWork}, and {@link BoundaryEndings} ends the boundary. Immutable and thread-safe.
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
        if (!boundary.joined() && order.workFirst()) {
            return workFirst(connection, call, boundary);
        }
        return claimFirst(
                connection, call, boundary, AttemptMeter.claimFirst(call.timings(), order, boundary.joined()));
    }

    /**
     * Claim (read the key, take its lock), work, record, end the boundary.
     *
     * @param meter what the steps are told to: a new attempt's, or that of a work-first attempt that
     *     found the key taken and goes on here
     */
    private Outcome<T> claimFirst(Connection connection, Call call, Boundary boundary, AttemptMeter meter) {
        Claim claimed = claim(connection, call, call.timings());
        meter.claimed(claimed);
        Claim.Held held;
        switch (claimed) {
            case Claim.Held h -> held = h;
            case Claim.Answered answered -> {
                discard(boundary); // nothing was written
                return answer(call, answered);
            }
            case Claim.TimedOut timedOut -> {
                discard(boundary);
                return inProgress();
            }
            case Claim.Superseded superseded -> throw new Units.Superseded(superseded.cause());
        }

        T value;
        try {
            value = execute(call, connection, boundary, true);
        } catch (WorkEndedTransactionException e) {
            throw e;
        } catch (Exception e) {
            return workFailed(connection, call, boundary, e, meter);
        }
        meter.workEnded();

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
        meter.executed();
        return new Outcome.Executed<>(value);
    }

    /**
     * The work, then the completed row's INSERT with COMMIT, which claims the key. When the key
     * turns out to be taken, this attempt's writes are rolled back and the key is read and answered
     * (or, expired or gone, claimed) as {@link ClaimMode#CLAIM_FIRST} does, in a new transaction.
     * Whatever fails before the key is known to be ours (the work, the result's encoding, the
     * insert), a key already answered gets its answer: a retry of a completed call must replay
     * whatever its work does against today's data.
     */
    private Outcome<T> workFirst(Connection connection, Call call, Boundary boundary) {
        AttemptMeter meter = AttemptMeter.workFirst(call.timings(), order);
        T value;
        try {
            value = execute(call, connection, boundary, false);
        } catch (WorkEndedTransactionException e) {
            // the caller's rollback ends the attempt; nothing is answered for a work that broke its transaction
            throw e;
        } catch (Exception e) {
            return workFirstFailed(connection, call, boundary, e, meter);
        }
        meter.workEnded();

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
            return insertFailed(connection, call, boundary, e);
        } catch (RuntimeException e) {
            return answeredOrThrow(connection, call, boundary, e); // the result could not be encoded
        } finally {
            meter.inserted(recorded);
        }
        return switch (recorded) {
            // nothing to end: the insert carried the COMMIT (a keep() could only find the connection
            // closed since, and would then wrongly say that nothing committed)
            case COMMITTED -> new Outcome.Executed<>(value);
            case TIMED_OUT -> {
                discard(boundary);
                yield inProgress();
            }
            case TAKEN -> takenAfterWork(connection, call, boundary, meter);
        };
    }

    /**
     * The work of a work-first attempt threw {@code e} before the key was known to be ours: a key
     * already answered gets its answer, a key another transaction holds past the session's lock
     * wait is in progress, and any other failure is the work's ({@link #workFailed}).
     */
    private Outcome<T> workFirstFailed(
            Connection connection, Call call, Boundary boundary, Exception e, AttemptMeter meter) {
        // a deterministic failure is recorded, answering as it goes
        if (policy.classify(e).isEmpty() || SqlStates.isRetryable(e)) {
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
                meter.foundHeld();
                return inProgress();
            }
        }
        return workFailed(connection, call, boundary, e, meter);
    }

    /**
     * The insert with COMMIT of a work-first attempt failed with {@code e}: a lost connection, a
     * table not migrated or without the key's partition are thrown as such; otherwise a key already
     * answered gets its answer, else the failure is thrown.
     */
    private Outcome<T> insertFailed(Connection connection, Call call, Boundary boundary, SQLException e) {
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
        return answeredOrThrow(connection, call, boundary, failed); // e.g. 25P02: the work left its transaction aborted
    }

    /**
     * A work-first insert found the key taken: nothing of this attempt commits; a live row answers,
     * else the key is claimed as {@link ClaimMode#CLAIM_FIRST} does.
     */
    private Outcome<T> takenAfterWork(Connection connection, Call call, Boundary boundary, AttemptMeter meter) {
        Claim.Answered answered;
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
        meter.reread();
        if (answered != null) {
            discard(boundary); // a no-op: no transaction is open
            return answer(call, answered);
        }
        return claimFirst(connection, call, boundary, meter.goingOnClaimingFirst());
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
     * The work threw {@code e}: its writes are undone; a deterministic failure is recorded (claiming
     * the key again, which the rollback released) and answered, anything else is thrown.
     */
    private Outcome<T> workFailed(
            Connection connection, Call call, Boundary boundary, Exception e, AttemptMeter meter) {
        meter.workEnded();
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
        meter.recordingEnded(); // the re-claim's wait included
        return outcome;
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
            case Claim.TimedOut timedOut -> inProgress();
            case Claim.Superseded superseded -> throw new Units.Superseded(superseded.cause());
        };
    }

    private Outcome<T> answer(Call call, Claim.Answered claim) {
        if (!call.fingerprint().matches(claim.row().fingerprint())) {
            return new Outcome.FingerprintMismatch<>();
        }
        Outcome<T> settled = values.settled(call.scope(), call.key(), claim.row());
        return settled != null ? settled : inProgress(); // a V1 caller's running row
    }

    /** See {@link GuardedWork#run}: the call's work, whose result is this flow's {@code T}. */
    @SuppressWarnings("unchecked")
    private @Nullable T execute(Call call, Connection connection, Boundary boundary, boolean openBefore)
            throws Exception {
        return GuardedWork.run(
                configuration, (TransactionalWork<T>) call.work(), call, connection, boundary, openBefore);
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

    private Outcome<T> inProgress() {
        return new Outcome.InProgress<>(policy.retryAfter());
    }

    private byte @Nullable [] encode(Call call, @Nullable T value) {
        return values.encode(call.scope(), call.key(), value);
    }
}
