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
import io.github.idemtx.core.WorkFailedException;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.internal.ClaimStatements;
import io.github.idemtx.jooq.internal.ClaimStatements.Claim;
import io.github.idemtx.jooq.internal.FailureEncoding;
import io.github.idemtx.jooq.internal.NestedTransactionProvider;
import io.github.idemtx.jooq.internal.SqlStates;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.jooq.Configuration;
import org.jooq.ConnectionProvider;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DefaultConnectionProvider;
import org.postgresql.core.BaseConnection;
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
 * <h2>Transactions</h2>
 * Normally {@code run} takes a connection from the {@code DSLContext}'s connection provider, runs
 * its own transaction on it and commits it, whatever {@code TransactionProvider} is configured; a
 * pool whose connections have auto-commit off is fine. It joins an enclosing transaction instead
 * when the connection has auto-commit off and either the {@code DSLContext} is bound to one
 * connection (the context of an open jOOQ {@code transaction(...)}, or {@code DSL.using(connection)}
 * on a connection the caller manages) or pgjdbc reports a transaction open on it (statements of a
 * framework-managed transaction already ran). Joined, it works inside a savepoint: nothing commits
 * until the enclosing transaction does, a rollback of the enclosing transaction undoes the claim
 * too, and serialization failures are not retried but reach the caller, whose transaction they
 * doomed. A framework transaction on a pooled {@code DataSource} that has not sent a statement yet
 * cannot be told from a bare pooled connection, so {@code run} as its first statement commits on
 * its own; use jOOQ's {@code transaction(...)} or send a statement first to join it.
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
    private final long ttlMillis;
    private final int waitMillis;

    private IdempotentTransaction(Builder<T> b) {
        this.dsl = b.dsl;
        this.policy = b.policy;
        this.codec = b.codec;
        this.schema = b.schema;
        this.sql = new ClaimStatements(b.schema);
        this.ttlMillis = policy.ttl().toMillis();
        this.waitMillis = Math.toIntExact(policy.duplicateWait().toMillis());
    }

    /**
     * An instance with the claim table in the {@value IdempotencySchema#DEFAULT_SCHEMA} schema.
     *
     * @param dsl where connections come from; an open transaction's context makes {@code run} join it
     * @param policy the behaviour; see {@link IdempotencyPolicy#defaults()}
     * @param codec how results are stored, e.g. {@link ResultCodec#json(Class)}
     * @throws NullPointerException if an argument is null
     */
    public static <T> IdempotentTransaction<T> create(DSLContext dsl, IdempotencyPolicy policy, ResultCodec<T> codec) {
        return builder(dsl, codec).policy(policy).build();
    }

    /** A builder, for a claim table in another schema. */
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

    /**
     * Runs {@code work} once for ({@code scope}, {@code key}), or replays what the first call
     * recorded; see the class documentation for every outcome.
     *
     * @param scope whose key this is (the authenticated principal), never from client input alone
     * @param key the client's idempotency key
     * @param fingerprint the request's fingerprint; a different one with the same key is a mismatch
     * @param work the business write, through the {@code tx} it is given
     * @return the outcome; never null
     * @throws NullPointerException if an argument is null, before any SQL runs
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
        Call call = new Call(scope, key, fingerprint, work);

        ConnectionProvider provider = dsl.configuration().connectionProvider();
        Connection connection = provider.acquire();
        if (connection == null) {
            throw new DataAccessException("the DSLContext's ConnectionProvider returned no connection");
        }
        try {
            if (autoCommit(connection)) {
                return runOwn(connection, call, true);
            }
            // auto-commit off: a transaction someone else owns, or merely a pool configured so
            boolean join = provider instanceof DefaultConnectionProvider || transactionOpen(connection);
            return join ? runJoined(connection, call) : runOwn(connection, call, false);
        } finally {
            provider.release(connection);
        }
    }

    /**
     * Deletes up to {@code limit} claims whose TTL has passed, in one statement; call it
     * periodically (and again while it returns {@code limit}). Safe to run while calls are running:
     * it never deletes a live claim, skips rows another transaction has locked, and a call taking
     * over an expired claim that the purge deletes simply inserts it anew.
     *
     * @param limit how many to delete at most, from 1 to 100,000
     * @return how many were deleted
     */
    public int purgeExpired(int limit) {
        if (limit < 1 || limit > 100_000) {
            throw new IllegalArgumentException("limit must be between 1 and 100000, was " + limit);
        }
        return sql.purge(dsl, limit);
    }

    private record Call(Scope scope, IdempotencyKey key, Fingerprint fingerprint, TransactionalWork<?> work) {}

    // ---------------------------------------------------------------- own transaction

    /**
     * Runs the unit in transactions of its own on {@code connection}, retrying serialization
     * failures and deadlocks, and leaves the connection as it found it: no transaction open,
     * auto-commit as it was.
     */
    private Outcome<T> runOwn(Connection connection, Call call, boolean wasAutoCommit) {
        if (wasAutoCommit) {
            setAutoCommit(connection, false);
        }
        boolean clean = true;
        Throwable failure = null;
        try {
            for (int attempt = 1; ; attempt++) {
                try {
                    return attempt(connection, call, ownTransaction(connection));
                } catch (RuntimeException | Error e) {
                    clean = rollbackQuietly(connection, e);
                    // an attempt whose rollback failed leaves nothing to retry on
                    if (!clean || e instanceof Error || !SqlStates.isRetryable(e)) {
                        throw e;
                    }
                    if (attempt >= policy.maxAttempts()) {
                        throw new RetriesExhaustedException(call.scope(), call.key(), attempt, e);
                    }
                    backOff(call, attempt, e);
                }
            }
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        } finally {
            if (wasAutoCommit && clean) {
                restoreAutoCommit(connection, failure);
            }
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

        /** Whether the completion carries the COMMIT (one round trip instead of two). */
        boolean commitsWithCompletion();
    }

    private static Boundary ownTransaction(Connection connection) {
        return new Boundary() {
            @Override
            public void abandon() {
                end(connection, false);
            }

            @Override
            public SQLException undoWork() {
                return rollbackFailure(connection);
            }

            @Override
            public void keep() {
                end(connection, true); // a no-op when the record carried the COMMIT
            }

            @Override
            public boolean commitsWithCompletion() {
                return true;
            }
        };
    }

    private static Boundary savepointIn(Connection connection, Savepoint savepoint) {
        return new Boundary() {
            @Override
            public void abandon() {
                rollbackTo(connection, savepoint);
                release(connection, savepoint);
            }

            @Override
            public SQLException undoWork() {
                try {
                    connection.rollback(savepoint);
                    return null;
                } catch (SQLException e) {
                    return e;
                }
            }

            @Override
            public void keep() {
                release(connection, savepoint);
            }

            @Override
            public boolean commitsWithCompletion() {
                return false;
            }
        };
    }

    /**
     * One attempt: claim, work, record, end. It ends the boundary itself on every path that
     * returns; whatever it throws, the caller undoes the boundary.
     */
    private Outcome<T> attempt(Connection connection, Call call, Boundary boundary) {
        Claim claim = claimWithinBound(connection, call);
        if (claim == null) {
            boundary.abandon();
            return new Outcome.InProgress<>(policy.retryAfter());
        }
        if (!claim.held()) {
            boundary.abandon(); // nothing was written
            return existing(call, claim);
        }

        T value;
        try {
            value = execute(call, transactionContext(connection));
        } catch (Exception e) {
            // undo the work's writes first: the key is free while the policy classifies
            SQLException rollbackFailure = boundary.undoWork();
            Optional<Failure> failure = deterministicFailure(e);
            if (rollbackFailure != null) {
                throw failure.isPresent() ? notRecorded(e, rollbackFailure) : withSuppressed(call, e, rollbackFailure);
            }
            if (failure.isEmpty()) {
                throw unchecked(call, e);
            }
            Outcome<T> outcome = recordFailure(connection, call, failure.get());
            if (outcome instanceof Outcome.Rejected<T>) {
                keep(boundary, call);
            } else {
                boundary.abandon(); // a duplicate's outcome, or the bound ran out and aborted the claim
            }
            return outcome;
        }
        byte[] encoded = encode(call, value);
        boolean commit = boundary.commitsWithCompletion();
        // an expired row is replaced by an upsert that cannot carry the COMMIT; keep() sends it
        boolean commitInRecord = commit && claim.recordCarriesCommit();
        try {
            record(connection, call, claim, ClaimStatements.SUCCEEDED, encoded, commit);
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
            if (boundary.commitsWithCompletion() && SqlStates.isConnectionLoss(e)) {
                throw new CommitOutcomeUnknownException(call.scope(), call.key(), e);
            }
            throw e;
        }
    }

    // ---------------------------------------------------------------- joined transaction

    private Outcome<T> runJoined(Connection connection, Call call) {
        Savepoint savepoint = savepoint(connection);
        try {
            return attempt(connection, call, savepointIn(connection, savepoint));
        } catch (RuntimeException | Error e) {
            try {
                connection.rollback(savepoint);
                connection.releaseSavepoint(savepoint);
            } catch (SQLException | RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    // ---------------------------------------------------------------- shared steps

    /**
     * Claims the key, or reports the live claim that answers it; null when its holder did not
     * finish within the wait bound (the transaction or savepoint is then aborted and must be rolled
     * back).
     */
    private Claim claimWithinBound(Connection connection, Call call) {
        try {
            return sql.claim(connection, call.scope().value(), call.key().value(), call.fingerprint().bytes(), waitMillis);
        } catch (SQLException e) {
            if (SqlStates.has(e, SqlStates.LOCK_NOT_AVAILABLE)) {
                return null;
            }
            throw new DataAccessException("the claim of the idempotency key failed (SQLSTATE " + e.getSQLState() + ")", e);
        }
    }

    private Instant record(Connection connection, Call call, Claim claim, short state, byte[] result, boolean commit) {
        try {
            return sql.record(connection, claim, call.scope().value(), call.key().value(), call.fingerprint().bytes(),
                    state, result, ttlMillis, commit);
        } catch (SQLException e) {
            throw new DataAccessException("recording the outcome of the idempotency key failed (SQLSTATE " + e.getSQLState() + ")", e);
        }
    }

    /**
     * Records a deterministic failure after the work's writes were rolled back, which released the
     * key: claims it again, waiting for a duplicate that took it meanwhile. If that duplicate
     * completed the key, its outcome is ours (one key, one answer). The caller's {@code keep()}
     * commits.
     */
    private Outcome<T> recordFailure(Connection connection, Call call, Failure failure) {
        byte[] encoded = FailureEncoding.encode(failure);
        // what replays will see, e.g. with unpaired surrogates replaced: the first caller sees the same
        Failure recorded = FailureEncoding.decode(encoded);
        Claim claim = claimWithinBound(connection, call);
        if (claim == null) {
            return new Outcome.InProgress<>(policy.retryAfter());
        }
        if (!claim.held()) {
            return existing(call, claim);
        }
        Instant recordedAt = record(connection, call, claim, ClaimStatements.FAILED, encoded, false);
        return new Outcome.Rejected<>(recorded, recordedAt, false);
    }

    private Outcome<T> existing(Call call, Claim claim) {
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

    private static RuntimeException withSuppressed(Call call, Exception e, SQLException rollbackFailure) {
        RuntimeException thrown = unchecked(call, e);
        thrown.addSuppressed(rollbackFailure);
        return thrown;
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

    // ---------------------------------------------------------------- JDBC plumbing

    private static boolean autoCommit(Connection connection) {
        try {
            return connection.getAutoCommit();
        } catch (SQLException e) {
            throw new DataAccessException("cannot read the connection's auto-commit mode", e);
        }
    }

    private static void setAutoCommit(Connection connection, boolean autoCommit) {
        try {
            connection.setAutoCommit(autoCommit);
        } catch (SQLException e) {
            throw new DataAccessException("cannot set auto-commit to " + autoCommit, e);
        }
    }

    /**
     * Whether a transaction is open on {@code connection} (auto-commit being off). pgjdbc knows;
     * for a connection that does not unwrap to pgjdbc's, assume one is, and never commit it.
     */
    private static boolean transactionOpen(Connection connection) {
        try {
            if (connection.isWrapperFor(BaseConnection.class)) {
                return connection.unwrap(BaseConnection.class).getTransactionState() != TransactionState.IDLE;
            }
            return true;
        } catch (SQLException e) {
            throw new DataAccessException("cannot tell whether the connection is in a transaction", e);
        }
    }

    private static void end(Connection connection, boolean commit) {
        try {
            if (commit) {
                connection.commit();
            } else {
                connection.rollback();
            }
        } catch (SQLException e) {
            throw new DataAccessException(commit ? "commit failed" : "rollback failed", e);
        }
    }

    private static void restoreAutoCommit(Connection connection, Throwable failure) {
        try {
            connection.setAutoCommit(true);
        } catch (SQLException | RuntimeException e) {
            if (failure != null) {
                failure.addSuppressed(e);
            } else {
                throw new DataAccessException("cannot restore auto-commit", e);
            }
        }
    }

    /** Rolls back; the failure if that failed, else null. */
    private static SQLException rollbackFailure(Connection connection) {
        try {
            connection.rollback();
            return null;
        } catch (SQLException e) {
            return e;
        }
    }

    private static boolean rollbackQuietly(Connection connection, Throwable cause) {
        try {
            connection.rollback();
            return true;
        } catch (SQLException | RuntimeException e) {
            cause.addSuppressed(e);
            return false;
        }
    }

    private static Savepoint savepoint(Connection connection) {
        try {
            return connection.setSavepoint();
        } catch (SQLException e) {
            throw new DataAccessException("cannot set a savepoint in the enclosing transaction", e);
        }
    }

    private static void rollbackTo(Connection connection, Savepoint savepoint) {
        try {
            connection.rollback(savepoint);
        } catch (SQLException e) {
            throw new DataAccessException("cannot roll back to the savepoint", e);
        }
    }

    private static void release(Connection connection, Savepoint savepoint) {
        try {
            connection.releaseSavepoint(savepoint);
        } catch (SQLException e) {
            throw new DataAccessException("cannot release the savepoint", e);
        }
    }

    /** Builds an {@link IdempotentTransaction}. */
    public static final class Builder<T> {
        private final DSLContext dsl;
        private final ResultCodec<T> codec;
        private IdempotencyPolicy policy = IdempotencyPolicy.defaults();
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;

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

        public IdempotentTransaction<T> build() {
            return new IdempotentTransaction<>(this);
        }
    }
}
