package io.github.idemtx.jooq.internal.tx;

import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.RetriesExhaustedException;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.jooq.internal.store.SqlStates;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;
import org.postgresql.core.TransactionState;

/**
 * How a unit of work is wrapped: in a transaction of the library's own (with retries of
 * serialization failures and deadlocks), or in a savepoint of the caller's transaction. Each
 * leaves the connection as it found it, and reports a failed rollback suppressed into the failure.
 */
public final class Units {

    private Units() {}

    /**
     * Runs {@code unit} with a transaction of its own on {@code connection} and leaves the
     * connection as it found it: no transaction open, auto-commit as it was. A transaction the pool
     * left open with its own statements (a test query, init SQL, {@code schema}) is committed first:
     * it is nobody's, and rolling it back with a failed unit would undo the pool's session settings.
     * It is committed only when it provably holds nothing of a caller's, no transaction id assigned
     * (nothing written, no row locked; one round trip, only on such a connection): an open
     * transaction that did write is a caller's (a data source that hands the thread its open
     * transaction's connection), and the call is refused with {@link TransactionOwnershipException}.
     * The unit commits; whatever it throws is rolled back.
     *
     * @param scope the call's scope, or null for a purge (for the refusal's message)
     */
    public static <R> R inOwnTransaction(
            Connection connection, @Nullable Scope scope, @Nullable IdempotencyKey key, Supplier<R> unit) {
        boolean wasAutoCommit = Jdbc.autoCommit(connection);
        if (wasAutoCommit) {
            Jdbc.setAutoCommit(connection, false);
        } else {
            TransactionState state = Jdbc.transactionState(connection);
            if (state == TransactionState.OPEN) {
                if (Jdbc.wroteInTransaction(connection)) {
                    throw new TransactionOwnershipException(
                            scope,
                            key,
                            "refused before running anything: the"
                                    + " connection the DSLContext handed out has a transaction open that has already written"
                                    + " (a transaction id is assigned), so it is a caller's transaction, not one a pool left"
                                    + " behind; committing it would commit the caller's writes: state transactionMode JOIN"
                                    + " (to work inside it) on the builder, or give a DataSource that hands out fresh pooled"
                                    + " connections, or register a TransactionDetector for its transaction manager");
                }
                commitLeftover(connection);
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
                e.addSuppressed(rollback); // the connection is unusable: leave auto-commit to the pool
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

    /**
     * Runs {@code attempt} in transactions of its own, again after a serialization failure or a
     * deadlock (up to the policy's attempts, with backoff) and after a {@link Superseded} wait
     * (not counted: the call's one deadline bounds those).
     */
    public static <R> R retrying(
            Connection connection,
            IdempotencyPolicy policy,
            @Nullable Scope scope,
            @Nullable IdempotencyKey key,
            Function<Boundary, R> attempt) {
        Boundary own = Boundary.ownTransaction(connection);
        return inOwnTransaction(connection, scope, key, () -> {
            for (int attempts = 1; ; ) {
                try {
                    return attempt.apply(own);
                } catch (Superseded s) {
                    rollbackBeforeRetry(connection, s);
                } catch (RuntimeException e) {
                    if (!SqlStates.isRetryable(e)) {
                        throw e;
                    }
                    rollbackBeforeRetry(connection, e);
                    if (attempts >= policy.maxAttempts()) {
                        throw new RetriesExhaustedException(scope, key, attempts, e);
                    }
                    pause(policy, scope, key, attempts, e);
                    attempts++;
                }
            }
        });
    }

    /**
     * Commits the read-only transaction a pool left open on {@code connection}. Nothing of the call
     * is in it, so a COMMIT of it lost in flight leaves no doubt about the call: it is a failure
     * before anything was sent, not {@link Jdbc#commit}'s commit in doubt.
     */
    private static void commitLeftover(Connection connection) {
        try {
            connection.commit();
        } catch (SQLException e) {
            throw new DataAccessException(
                    "committing the read-only transaction the pool left open on the connection failed (SQLSTATE "
                            + e.getSQLState() + "); nothing of this call was sent",
                    e);
        }
    }

    /**
     * Runs {@code unit} in a savepoint of the caller's transaction on {@code connection}; the unit
     * ends the boundary it is given on every path that returns; whatever it throws is rolled back
     * to the savepoint, which is released, so the caller's transaction stays usable. {@code flush}
     * pushes out what the caller's transaction manager holds in memory: once before the savepoint
     * (the caller's own pending writes), then after the work ({@link Boundary#flush}).
     */
    public static <R> R inSavepoint(Connection connection, Runnable flush, Function<Boundary, R> unit) {
        flush.run(); // the caller's own pending writes go out before the savepoint: no undo of the call's reaches them
        Savepoint savepoint = Jdbc.savepoint(connection);
        try {
            return unit.apply(Boundary.savepoint(connection, savepoint, flush));
        } catch (RuntimeException | Error thrown) {
            // joined, a superseded wait is the caller's serialization failure, in a type of jOOQ's own
            Throwable e = thrown instanceof Superseded s ? s.forCaller() : thrown;
            SQLException failure = Jdbc.undo(connection, savepoint);
            if (failure != null) {
                e.addSuppressed(failure);
                throw rethrow(e);
            }
            try {
                Jdbc.release(connection, savepoint);
            } catch (RuntimeException released) {
                e.addSuppressed(released);
            }
            throw rethrow(e);
        }
    }

    /**
     * Thrown out of an attempt whose wait on another holder ended after this transaction's snapshot
     * was taken: the own-transaction loop starts a new transaction without counting an attempt.
     * Joined, it reaches the caller as the serialization failure it is.
     */
    public static final class Superseded extends DataAccessException {
        private static final long serialVersionUID = 1L;

        public Superseded(SQLException cause) {
            super(message(cause), cause);
        }

        /** {@return the same failure for a caller whose transaction it is: no type of the library's internals} */
        DataAccessException forCaller() {
            DataAccessException e = new DataAccessException(getMessage(), getCause());
            e.setStackTrace(getStackTrace());
            return e;
        }

        private static String message(SQLException cause) {
            return "a concurrent call with this idempotency key ended after this transaction's snapshot;"
                    + " retry the transaction (SQLSTATE " + cause.getSQLState() + ")";
        }
    }

    private static RuntimeException rethrow(Throwable e) {
        if (e instanceof Error error) {
            throw error;
        }
        return (RuntimeException) e;
    }

    /** Ends the failed attempt's transaction; one whose rollback failed leaves nothing to retry on. */
    private static void rollbackBeforeRetry(Connection connection, RuntimeException e) {
        SQLException failure = Jdbc.undo(connection, null);
        if (failure != null) {
            e.addSuppressed(failure);
            throw e;
        }
    }

    private static void pause(
            IdempotencyPolicy policy,
            @Nullable Scope scope,
            @Nullable IdempotencyKey key,
            int attempt,
            Throwable cause) {
        long nanos = Backoff.delayNanos(
                attempt,
                policy.initialBackoff().toNanos(),
                policy.maxBackoff().toNanos(),
                ThreadLocalRandom.current().nextDouble());
        if (nanos <= 0) {
            return;
        }
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            IdempotencyException interrupted = new IdempotencyException(
                    scope,
                    key,
                    "interrupted while waiting to retry after attempt " + attempt + "; nothing was committed",
                    cause);
            interrupted.addSuppressed(e);
            throw interrupted;
        }
    }

    /**
     * Puts auto-commit back after the unit: a failure of that is suppressed into the unit's
     * {@code failure}; after a unit that returned (it ended its transaction: its answer stands) it is
     * thrown only if the connection is still open, since one that died since (the pool closed it on a
     * failure a tidy-up step met) is one the pool discards anyway.
     */
    private static void restoreAutoCommit(Connection connection, @Nullable Throwable failure) {
        try {
            Jdbc.setAutoCommit(connection, true);
        } catch (RuntimeException e) {
            if (failure != null) {
                failure.addSuppressed(e);
            } else if (!Jdbc.isClosed(connection)) {
                throw e;
            }
        }
    }
}
