package io.github.idemtx.jooq;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.ResultTooLargeException;
import io.github.idemtx.core.RetriesExhaustedException;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.core.WorkFailedException;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.TransactionDetector.Detection;
import io.github.idemtx.jooq.internal.ClaimStatements;
import io.github.idemtx.jooq.internal.ClaimStatements.Claim;
import io.github.idemtx.jooq.internal.FailureEncoding;
import io.github.idemtx.jooq.internal.Jdbc;
import io.github.idemtx.jooq.internal.NestedTransactionProvider;
import io.github.idemtx.jooq.internal.SqlStates;
import io.github.idemtx.jooq.internal.TransactionOwnership;
import io.github.idemtx.jooq.internal.TransactionOwnership.Decision;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.jooq.Configuration;
import org.jooq.ConnectionProvider;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DefaultConnectionProvider;
import org.postgresql.core.TransactionState;

/**
 * Runs business work exactly once per (scope, key): the claim of the key, the work's writes and
 * the encoded result commit in one PostgreSQL transaction, or none of them does.
 *
 * <pre>{@code
 * IdempotentTransaction<Transfer> transfers =
 *         IdempotentTransaction.create(dsl, IdempotencyPolicy.defaults(), ResultCodec.json(Transfer.class));
 *
 * Outcome<Transfer> outcome = transfers.run(scope, key, fingerprint, tx -> ledger.transfer(tx, from, to, amount));
 * }</pre>
 *
 * <h2>What {@link #run} returns</h2>
 * <ul>
 *   <li>{@link Outcome.Executed}: first call for the key; the work ran and everything committed.
 *   <li>{@link Outcome.Replayed}: the key completed earlier with the same fingerprint; nothing ran.
 *   <li>{@link Outcome.Rejected}: the work failed deterministically, now or earlier; its writes were
 *       rolled back, the failure is recorded and replayed.
 *   <li>{@link Outcome.FingerprintMismatch}: the key was used for another request; nothing ran.
 *   <li>{@link Outcome.InProgress}: a concurrent call holding the key did not finish within
 *       {@link IdempotencyPolicy#duplicateWait()}; nothing ran.
 * </ul>
 * A concurrent duplicate waits for the call holding the key (on a transaction-level advisory lock
 * that call holds) and then replays its result; the claim row is written once, with the result,
 * and only becomes visible to others when the work commits, so nobody ever observes a half-done
 * call. Any other exception from the work rolls everything back, frees
 * the key and reaches the caller. Serialization failures and deadlocks re-run the whole unit, work
 * included, up to {@link IdempotencyPolicy#maxAttempts()} times with jittered backoff. A claim older
 * than {@link IdempotencyPolicy#ttl()} counts as absent and is taken over atomically.
 *
 * <h2>Who owns the transaction</h2>
 * Decided per call by the {@link TransactionMode} set on the builder (default
 * {@link TransactionMode#DETECT}) and by {@link TransactionDetector}s that ask the transaction
 * manager itself, never from the connection's transaction state alone:
 * <ul>
 *   <li><b>Own</b>: a {@code DSLContext} over a {@code DataSource} or pool, with no caller
 *       transaction open. {@code run} takes a connection, runs its own transaction and has
 *       committed it when it returns {@code Executed}, {@code Replayed} or {@code Rejected}; also on
 *       a pool whose connections have auto-commit off, and when the pool's own statements (a test
 *       query, init SQL, {@code schema}) left a transaction open on the connection it hands out:
 *       that transaction is nobody's, and is committed first. Serialization failures and deadlocks
 *       are retried here.
 *   <li><b>Joined</b>: the context of an open jOOQ {@code transaction(cfg -> ...)} (nested ones
 *       too), a {@code DSLContext} with jOOQ's {@code ThreadLocalTransactionProvider} inside one of
 *       its transactions (also as the first statement), {@code DSL.using(connection)} on a connection
 *       the caller manages with auto-commit off, or whatever a registered detector (the Spring
 *       module's) reports. {@code run} works inside a savepoint: nothing commits until the caller
 *       does, the caller's rollback undoes the claim too, the caller's transaction stays usable
 *       after every outcome and exception, and serialization failures reach the caller, whose
 *       transaction they doomed. A joined claim's TTL counts from the caller's commit.
 *   <li><b>Refused</b> with {@link TransactionOwnershipException}, before any SQL of the call and
 *       before the work, where it cannot tell (see {@link TransactionMode#DETECT}) or the stated
 *       mode contradicts what it sees, and on a read-only connection.
 * </ul>
 *
 * <p>Calling {@code run} for the same key inside that key's own work is a mistake it cannot answer
 * well: the inner call joins the same transaction, finds no claim yet (PostgreSQL's advisory locks
 * are re-entrant), runs and records; the outer call's record then fails, and the unit is retried
 * until {@link RetriesExhaustedException}. Nothing commits twice.
 *
 * <h2>Cost</h2>
 * First execution: one statement claims the key (sent with {@code BEGIN}: it reads the key's row
 * and takes the key's advisory lock without waiting), the work's own statements, and one that
 * inserts the completed row, sent together with {@code COMMIT}; the work's transaction grows by one
 * round trip and one row. Replay: the claim statement and the end of the transaction; it takes no
 * lock and writes nothing. The library's statements (the claim, a duplicate's wait, the record)
 * run as plain JDBC on the transaction's connection, so jOOQ {@code ExecuteListener}s of the
 * {@code DSLContext} see the work's statements but not them.
 *
 * <p>Instances are immutable and thread-safe; create one per result type and share it.
 *
 * @param <T> the type of the work's result
 */
public final class IdempotentTransaction<T> {

    private final DSLContext dsl;
    private final IdempotencyPolicy policy;
    private final ResultCodec<T> codec;
    private final String schema;
    private final ClaimStatements sql;
    private final TransactionOwnership ownership;
    private final long ttlMillis;
    private final long waitNanos;

    private IdempotentTransaction(Builder<T> b) {
        this.dsl = b.dsl;
        this.policy = b.policy;
        this.codec = b.codec;
        this.schema = b.schema;
        this.sql = new ClaimStatements(b.schema);
        this.ownership = new TransactionOwnership(b.mode, b.detectors);
        this.ttlMillis = policy.ttl().toMillis();
        this.waitNanos = policy.duplicateWait().toNanos();
    }

    /**
     * An instance with the claim table in the {@value IdempotencySchema#DEFAULT_SCHEMA} schema and
     * {@link TransactionMode#DETECT}.
     *
     * @param dsl where connections come from; the context of an open transaction makes {@code run} join it
     * @param policy the behaviour; see {@link IdempotencyPolicy#defaults()}
     * @param codec how results are stored, e.g. {@link ResultCodec#json(Class)}
     * @throws NullPointerException if an argument is null
     */
    public static <T> IdempotentTransaction<T> create(DSLContext dsl, IdempotencyPolicy policy, ResultCodec<T> codec) {
        return builder(dsl, codec).policy(policy).build();
    }

    /** A builder, for a claim table in another schema, a stated transaction mode or a detector. */
    public static <T> Builder<T> builder(DSLContext dsl, ResultCodec<T> codec) {
        return new Builder<>(dsl, codec);
    }

    /** The policy this instance applies. */
    public IdempotencyPolicy policy() {
        return policy;
    }

    /** The schema holding the claim table. */
    public String schema() {
        return schema;
    }

    /** How this instance decides who owns the transaction. */
    public TransactionMode transactionMode() {
        return ownership.mode();
    }

    /**
     * Runs {@code work} once for ({@code scope}, {@code key}), or replays what the first call
     * recorded; see the class documentation for every outcome and for who owns the transaction.
     *
     * @param scope whose key this is (the authenticated principal), never from client input alone
     * @param key the client's idempotency key
     * @param fingerprint the request's fingerprint; a different one with the same key is a mismatch
     * @param work the business write, through the {@code tx} it is given
     * @return the outcome; never null. Owning its transaction, {@code Executed}, {@code Replayed}
     *     and {@code Rejected} mean committed; joined, they commit or vanish with the caller's transaction
     * @throws NullPointerException if an argument is null, before any SQL runs
     * @throws TransactionOwnershipException if it cannot tell whether to own or join the
     *     transaction, or was told something that contradicts what it sees; before any SQL runs
     * @throws RuntimeException any unchecked exception the work threw that the policy does not call
     *     deterministic, unchanged, after a full rollback
     * @throws WorkFailedException if the work threw such a checked exception
     * @throws ResultTooLargeException if the encoded result exceeds the policy's limit (rolled back)
     * @throws RetriesExhaustedException if serialization failures or deadlocks used up the attempts
     * @throws CommitOutcomeUnknownException if the connection was lost while the commit was in
     *     flight: retry with the same key, which replays or runs exactly once
     * @throws DataAccessException if the database fails otherwise (connection lost before the
     *     commit, ...); nothing was committed
     */
    public Outcome<T> run(Scope scope, IdempotencyKey key, Fingerprint fingerprint, TransactionalWork<T> work) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(fingerprint, "fingerprint must not be null");
        Objects.requireNonNull(work, "work must not be null");
        Call call = new Call(scope, key, fingerprint, work, System.nanoTime() + waitNanos);
        return withConnection(scope, key, (connection, decision) -> decision == Decision.OWN
                ? runOwn(connection, call)
                : runJoined(connection, call));
    }

    /**
     * Deletes up to {@code limit} claims whose TTL has passed, in one statement; call it
     * periodically (and again while it returns {@code limit}). Safe to run while calls are running:
     * it never deletes a live claim, skips rows another transaction has locked, and a call taking
     * over an expired claim that the purge deletes simply inserts it anew. Who owns the transaction
     * is decided as for {@link #run}: on its own it commits before returning (also on a pool with
     * auto-commit off); joined, the deletions commit with the caller.
     *
     * @param limit how many to delete at most, from 1 to 100,000
     * @return how many were deleted (committed, when it owns its transaction)
     * @throws IllegalArgumentException if {@code limit} is out of range, before any SQL runs
     * @throws TransactionOwnershipException as for {@link #run}
     * @throws DataAccessException if the database fails; nothing was deleted
     */
    public int purgeExpired(int limit) {
        if (limit < 1 || limit > 100_000) {
            throw new IllegalArgumentException("limit must be between 1 and 100000, was " + limit);
        }
        return withConnection(null, null, (connection, decision) -> {
            if (decision == Decision.JOIN) {
                Savepoint savepoint = Jdbc.savepoint(connection);
                try {
                    int deleted = sql.purge(connection, limit);
                    Jdbc.release(connection, savepoint);
                    return deleted;
                } catch (SQLException | RuntimeException e) {
                    throw undone(purgeFailed(e), Jdbc.undo(connection, savepoint));
                }
            }
            return inOwnTransaction(connection, () -> {
                int deleted;
                try {
                    deleted = sql.purge(connection, limit);
                } catch (SQLException e) {
                    throw purgeFailed(e);
                }
                Jdbc.commit(connection);
                return deleted;
            });
        });
    }

    private record Call(Scope scope, IdempotencyKey key, Fingerprint fingerprint, TransactionalWork<?> work,
            long deadline) {

        /** What is left of the call's one bound on waiting for other holders, in whole ms (0 when spent). */
        int waitLeftMillis() {
            long left = deadline - System.nanoTime();
            return left <= 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000);
        }
    }

    @FunctionalInterface
    private interface OnConnection<R> {
        R apply(Connection connection, Decision decision);
    }

    /** Decides who owns the transaction, then applies {@code body} to the provider's connection and releases it. */
    private <R> R withConnection(Scope scope, IdempotencyKey key, OnConnection<R> body) {
        Configuration configuration = dsl.configuration();
        Detection detected = ownership.detect(configuration);
        ConnectionProvider provider = configuration.connectionProvider();
        Connection connection = provider.acquire();
        if (connection == null) {
            throw new DataAccessException("the DSLContext's ConnectionProvider returned no connection");
        }
        try {
            return body.apply(connection, ownership.decide(configuration, detected, connection, scope, key));
        } finally {
            provider.release(connection);
        }
    }

    // ---------------------------------------------------------------- own transaction

    /**
     * Runs {@code unit} in a transaction of its own on {@code connection} and leaves the connection
     * as it found it: no transaction open, auto-commit as it was. A transaction the pool left open
     * with its own statements (a test query, init SQL, {@code schema}) is committed first: it is
     * nobody's, and rolling it back with a failed unit would undo the pool's session settings.
     */
    private static <R> R inOwnTransaction(Connection connection, Supplier<R> unit) {
        boolean wasAutoCommit = Jdbc.autoCommit(connection);
        if (wasAutoCommit) {
            Jdbc.setAutoCommit(connection, false);
        } else {
            TransactionState state = Jdbc.transactionState(connection);
            if (state == TransactionState.OPEN) {
                Jdbc.commit(connection);
            } else if (state == TransactionState.FAILED) {
                Jdbc.rollback(connection);
            }
        }
        R result;
        try {
            result = unit.get();
        } catch (RuntimeException | Error e) {
            SQLException rollback = Jdbc.undo(connection, null);
            if (rollback != null) {
                e.addSuppressed(rollback);
            } else if (wasAutoCommit) {
                restoreAutoCommit(connection, e);
            }
            throw e;
        }
        if (wasAutoCommit) {
            restoreAutoCommit(connection, null);
        }
        return result;
    }

    /** The unit in transactions of its own, retrying serialization failures and deadlocks. */
    private Outcome<T> runOwn(Connection connection, Call call) {
        return inOwnTransaction(connection, () -> {
            for (int attempt = 1; ; ) {
                try {
                    return attempt(connection, call, ownTransaction(connection));
                } catch (Superseded s) {
                    // the holder this call waited on ended after the snapshot: a new transaction sees it
                    rollbackBeforeRetry(connection, s);
                } catch (RuntimeException e) {
                    if (!SqlStates.isRetryable(e)) {
                        throw e;
                    }
                    rollbackBeforeRetry(connection, e);
                    if (attempt >= policy.maxAttempts()) {
                        throw new RetriesExhaustedException(call.scope(), call.key(), attempt, e);
                    }
                    backOff(call, attempt, e);
                    attempt++;
                }
            }
        });
    }

    /** Ends the failed attempt's transaction; one whose rollback failed leaves nothing to retry on. */
    private static void rollbackBeforeRetry(Connection connection, RuntimeException e) {
        SQLException failure = Jdbc.undo(connection, null);
        if (failure != null) {
            e.addSuppressed(failure);
            throw e;
        }
    }

    // ---------------------------------------------------------------- one attempt, either way

    /**
     * Where an attempt's changes live and how it ends them: a transaction of its own, or a
     * savepoint in the caller's transaction.
     */
    private interface Boundary {
        /** Undoes everything since the boundary began, and ends it. */
        void abandon();

        /** Undoes the work's writes but stays open for the failure to be recorded; the failure, if that failed. */
        SQLException undoWork();

        /** Keeps what was written: commits, or releases the savepoint. */
        void keep();

        /** Whether this is the caller's transaction: the record commits with the caller, its expiry counts from then. */
        boolean joined();
    }

    private static Boundary ownTransaction(Connection connection) {
        return new Boundary() {
            @Override
            public void abandon() {
                Jdbc.rollback(connection);
            }

            @Override
            public SQLException undoWork() {
                return Jdbc.undo(connection, null);
            }

            @Override
            public void keep() {
                Jdbc.commit(connection); // a no-op when the record carried the COMMIT
            }

            @Override
            public boolean joined() {
                return false;
            }
        };
    }

    private static Boundary savepointIn(Connection connection, Savepoint savepoint) {
        return new Boundary() {
            @Override
            public void abandon() {
                SQLException failure = Jdbc.undo(connection, savepoint);
                if (failure != null) {
                    throw new DataAccessException("cannot roll back to the savepoint", failure);
                }
                Jdbc.release(connection, savepoint);
            }

            @Override
            public SQLException undoWork() {
                return Jdbc.undo(connection, savepoint);
            }

            @Override
            public void keep() {
                Jdbc.release(connection, savepoint);
            }

            @Override
            public boolean joined() {
                return true;
            }
        };
    }

    /**
     * One attempt: claim, work, record, end. It ends the boundary itself on every path that
     * returns; whatever it throws, the caller undoes the boundary.
     */
    private Outcome<T> attempt(Connection connection, Call call, Boundary boundary) {
        Claim.Held held;
        switch (claim(connection, call)) {
            case Claim.Held h -> held = h;
            case Claim.Answered answered -> {
                boundary.abandon(); // nothing was written
                return answer(call, answered);
            }
            case Claim.TimedOut timedOut -> {
                boundary.abandon();
                return new Outcome.InProgress<>(policy.retryAfter());
            }
            case Claim.Superseded superseded -> throw new Superseded(superseded.cause());
        }

        T value;
        try {
            value = execute(call, transactionContext(connection));
        } catch (Exception e) {
            // undo the work's writes first: the key is free while the policy classifies
            SQLException rollbackFailure = boundary.undoWork();
            Optional<Failure> failure = deterministicFailure(e);
            if (rollbackFailure != null) {
                throw failure.isPresent() ? notRecorded(e, rollbackFailure) : undone(unchecked(call, e), rollbackFailure);
            }
            if (failure.isEmpty()) {
                throw unchecked(call, e);
            }
            Outcome<T> outcome = recordFailure(connection, call, failure.get(), boundary.joined());
            if (outcome instanceof Outcome.Rejected<T>) {
                keep(boundary, call);
            } else {
                boundary.abandon(); // a duplicate's outcome, or the bound ran out and aborted the claim
            }
            return outcome;
        }
        byte[] encoded = encode(call, value);
        boolean commitInRecord = !boundary.joined() && held.recordCarriesCommit();
        try {
            record(connection, call, held, ClaimStatements.SUCCEEDED, encoded, commitInRecord, boundary.joined());
        } catch (DataAccessException e) {
            if (commitInRecord && SqlStates.isConnectionLoss(e)) {
                throw new CommitOutcomeUnknownException(call.scope(), call.key(), e);
            }
            throw e;
        }
        keep(boundary, call);
        return new Outcome.Executed<>(value);
    }

    /** Ends the boundary keeping its writes; a connection lost while a COMMIT was in flight is reported as such. */
    private static void keep(Boundary boundary, Call call) {
        try {
            boundary.keep();
        } catch (DataAccessException e) {
            if (!boundary.joined() && SqlStates.isConnectionLoss(e)) {
                throw new CommitOutcomeUnknownException(call.scope(), call.key(), e);
            }
            throw e;
        }
    }

    /**
     * Thrown out of an attempt whose wait ended in {@link Claim.Superseded}: the own-transaction
     * loop starts a new transaction without counting an attempt. Joined, it reaches the caller as
     * the serialization failure it is: the caller's snapshot cannot see the holder's result.
     */
    private static final class Superseded extends DataAccessException {
        private static final long serialVersionUID = 1L;

        Superseded(SQLException cause) {
            super("a concurrent call with this idempotency key ended after this transaction's snapshot;"
                    + " retry the transaction (SQLSTATE " + cause.getSQLState() + ")", cause);
        }
    }

    // ---------------------------------------------------------------- joined transaction

    private Outcome<T> runJoined(Connection connection, Call call) {
        Savepoint savepoint = Jdbc.savepoint(connection);
        try {
            return attempt(connection, call, savepointIn(connection, savepoint));
        } catch (RuntimeException | Error e) {
            SQLException failure = Jdbc.undo(connection, savepoint);
            if (failure == null) {
                try {
                    Jdbc.release(connection, savepoint);
                } catch (RuntimeException released) {
                    e.addSuppressed(released);
                }
            } else {
                e.addSuppressed(failure);
            }
            throw e;
        }
    }

    // ---------------------------------------------------------------- shared steps

    private Claim claim(Connection connection, Call call) {
        try {
            return sql.claim(connection, call.scope().value(), call.key().value(), call.fingerprint().bytes(),
                    call.waitLeftMillis());
        } catch (SQLException e) {
            throw new DataAccessException("the claim of the idempotency key failed (SQLSTATE " + e.getSQLState() + ")", e);
        }
    }

    /** See {@link ClaimStatements#record}: {@code commit} sends the COMMIT with the row where it can, and returns null then. */
    private Instant record(Connection connection, Call call, Claim.Held held, short state, byte[] result, boolean commit,
            boolean joined) {
        try {
            return sql.record(connection, held, call.scope().value(), call.key().value(), call.fingerprint().bytes(),
                    state, result, ttlMillis, commit, joined);
        } catch (SQLException e) {
            throw new DataAccessException("recording the outcome of the idempotency key failed (SQLSTATE " + e.getSQLState() + ")", e);
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
        return switch (claim(connection, call)) {
            case Claim.Held held -> {
                Instant recordedAt = record(connection, call, held, ClaimStatements.FAILED, encoded, false, joined);
                yield new Outcome.Rejected<>(recorded, recordedAt, false);
            }
            case Claim.Answered answered -> answer(call, answered);
            case Claim.TimedOut timedOut -> new Outcome.InProgress<>(policy.retryAfter());
            case Claim.Superseded superseded -> throw new Superseded(superseded.cause());
        };
    }

    private Outcome<T> answer(Call call, Claim.Answered claim) {
        if (!call.fingerprint().matches(claim.fingerprint())) {
            return new Outcome.FingerprintMismatch<>();
        }
        return switch (claim.state()) {
            case ClaimStatements.SUCCEEDED -> new Outcome.Replayed<>(decode(call, claim.result()), claim.completedAt());
            case ClaimStatements.FAILED -> new Outcome.Rejected<>(decodeFailure(call, claim.result()), claim.completedAt(), true);
            default -> new Outcome.InProgress<>(policy.retryAfter());
        };
    }

    @SuppressWarnings("unchecked")
    private T execute(Call call, DSLContext tx) throws Exception {
        return ((TransactionalWork<T>) call.work()).execute(tx);
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
        DataAccessException e = new DataAccessException("the work failed deterministically (" + failure
                + ") but the failure could not be recorded, the rollback failed; nothing was committed:"
                + " retry with the same key", rollbackFailure);
        e.addSuppressed(failure);
        return e;
    }

    /** {@code thrown}, with the failure of the rollback that followed it suppressed into it (if any). */
    private static RuntimeException undone(RuntimeException thrown, SQLException rollbackFailure) {
        if (rollbackFailure != null) {
            thrown.addSuppressed(rollbackFailure);
        }
        return thrown;
    }

    private static RuntimeException purgeFailed(Exception e) {
        return e instanceof RuntimeException r ? r
                : new DataAccessException("the purge of expired claims failed (SQLSTATE " + ((SQLException) e).getSQLState() + ")", e);
    }

    private static void restoreAutoCommit(Connection connection, Throwable failure) {
        try {
            Jdbc.setAutoCommit(connection, true);
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
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

    private byte[] encode(Call call, T value) {
        if (value == null) {
            return null;
        }
        byte[] bytes;
        try {
            bytes = codec.encode(value);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IdempotencyException(call.scope(), call.key(), "the codec could not encode the result; nothing was committed", e);
        }
        if (bytes == null) {
            throw new IdempotencyException(call.scope(), call.key(), "the codec encoded the result as null; nothing was committed", null);
        }
        if (bytes.length > policy.maxResultBytes()) {
            throw new ResultTooLargeException(call.scope(), call.key(), bytes.length, policy.maxResultBytes());
        }
        return bytes;
    }

    private T decode(Call call, byte[] stored) {
        if (stored == null) {
            return null;
        }
        try {
            return codec.decode(stored);
        } catch (Exception e) {
            throw new IdempotencyException(call.scope(), call.key(), "the stored result could not be decoded with " + codec, e);
        }
    }

    private static Failure decodeFailure(Call call, byte[] stored) {
        try {
            return FailureEncoding.decode(stored);
        } catch (RuntimeException e) {
            throw new IdempotencyException(call.scope(), call.key(), "the stored failure could not be decoded", e);
        }
    }

    private void backOff(Call call, int attempt, Throwable cause) {
        long max = policy.maxBackoff().toNanos();
        long cap = policy.initialBackoff().toNanos();
        for (int i = 1; i < attempt && cap < max; i++) {
            cap = cap > max / 2 ? max : cap * 2;
        }
        cap = Math.min(cap, max);
        if (cap <= 0) {
            return;
        }
        long nanos = ThreadLocalRandom.current().nextLong(cap + 1);
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            IdempotencyException interrupted = new IdempotencyException(call.scope(), call.key(),
                    "interrupted while waiting to retry after attempt " + attempt + "; nothing was committed", cause);
            interrupted.addSuppressed(e);
            throw interrupted;
        }
    }

    private DSLContext transactionContext(Connection connection) {
        Configuration configuration = dsl.configuration().derive(new DefaultConnectionProvider(connection));
        configuration.set(new NestedTransactionProvider(connection));
        return configuration.dsl();
    }

    /** Builds an {@link IdempotentTransaction}. */
    public static final class Builder<T> {
        private final DSLContext dsl;
        private final ResultCodec<T> codec;
        private IdempotencyPolicy policy = IdempotencyPolicy.defaults();
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;
        private TransactionMode mode = TransactionMode.DETECT;
        private final List<TransactionDetector> detectors = new ArrayList<>();

        private Builder(DSLContext dsl, ResultCodec<T> codec) {
            this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
            this.codec = Objects.requireNonNull(codec, "codec must not be null");
        }

        /** The policy; default {@link IdempotencyPolicy#defaults()}. */
        public Builder<T> policy(IdempotencyPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy must not be null");
            return this;
        }

        /**
         * The schema the claim table was migrated into with {@link IdempotencySchema#migrate}; default
         * {@value IdempotencySchema#DEFAULT_SCHEMA}.
         */
        public Builder<T> schema(String schema) {
            this.schema = IdempotencySchema.requireSchemaName(schema);
            return this;
        }

        /**
         * Who owns the transaction of each call; default {@link TransactionMode#DETECT}. State
         * {@link TransactionMode#OWN} or {@link TransactionMode#JOIN} where no detector knows the
         * transaction manager in use.
         */
        public Builder<T> transactionMode(TransactionMode mode) {
            this.mode = Objects.requireNonNull(mode, "transactionMode must not be null");
            return this;
        }

        /**
         * Adds a detector, asked before those found through {@link java.util.ServiceLoader} and
         * before jOOQ's own; see {@link TransactionDetector}.
         */
        public Builder<T> detector(TransactionDetector detector) {
            detectors.add(Objects.requireNonNull(detector, "detector must not be null"));
            return this;
        }

        /** The instance; immutable, whatever is done with this builder afterwards. */
        public IdempotentTransaction<T> build() {
            return new IdempotentTransaction<>(this);
        }
    }
}
