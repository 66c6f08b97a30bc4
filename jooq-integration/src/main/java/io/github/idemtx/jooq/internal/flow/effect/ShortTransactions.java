package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.core.WorkFailedException;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.tx.Boundary;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import io.github.idemtx.jooq.internal.tx.TransactionOwnership;
import io.github.idemtx.jooq.internal.tx.Units;
import io.github.idemtx.jooq.internal.tx.WorkGuard;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import org.jooq.Configuration;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

/**
 * The short transactions every step of an external effect runs in: each on a connection of the
 * configuration, released after it (no connection is held across the remote call), again after a
 * serialization failure or deadlock; and the caller's local writes inside them, guarded so that they
 * cannot end the transaction the claim commits in. Thread-safe.
 */
final class ShortTransactions {

    /** Statements run in one transaction on the unit's connection. */
    @FunctionalInterface
    interface SqlUnit<V extends @Nullable Object> {
        V apply(Connection connection) throws SQLException;
    }

    /** Local writes ({@code before}, {@code after}, {@code refused}) on the transaction's guarded context. */
    @FunctionalInterface
    interface LocalWrites {
        void write(DSLContext tx) throws Exception;
    }

    private final Configuration configuration;
    private final IdempotencyPolicy policy;
    private final TransactionOwnership ownership;
    private final String schema;
    private final Jdbc.ServerCheck serverCheck = new Jdbc.ServerCheck();

    ShortTransactions(
            Configuration configuration, IdempotencyPolicy policy, TransactionOwnership ownership, String schema) {
        this.configuration = configuration;
        this.policy = policy;
        this.ownership = ownership;
        this.schema = schema;
    }

    /**
     * The first unit of a call, which decides ownership: refused inside a caller's transaction
     * ({@link TransactionOwnership}) before anything runs.
     */
    <V extends @Nullable Object> V first(Scope scope, IdempotencyKey key, SqlUnit<V> unit) {
        return inTransaction(scope, key, unit, ownership.detect(configuration));
    }

    /** A later unit of the call (ownership decided), or of the recoverer or an operator. */
    <V extends @Nullable Object> V run(@Nullable Scope scope, @Nullable IdempotencyKey key, SqlUnit<V> unit) {
        return inTransaction(scope, key, unit, null);
    }

    /**
     * {@code unit}, which only reads, ended by a ROLLBACK: a connection lost there is a failed read,
     * never a commit of unknown outcome; the unit's COMMIT is then a no-op.
     */
    static <V extends @Nullable Object> SqlUnit<V> readOnly(SqlUnit<V> unit) {
        return c -> {
            V v = unit.apply(c);
            Jdbc.rollback(c);
            return v;
        };
    }

    /**
     * Runs local writes on {@code c}'s open transaction (a statement went first) through a guarded
     * {@code tx}: one that tries to end that transaction is refused ({@link
     * WorkEndedTransactionException}), whatever it returned or threw, so the claim never commits apart
     * from them.
     */
    void localWrites(Connection c, LocalWrites writes, Scope scope, IdempotencyKey key) {
        guarded(new WorkGuard(c, true), writes, scope, key);
    }

    /** {@link #localWrites} as the first statements of the transaction: none is known to be open before them. */
    void localWritesFirst(Connection c, LocalWrites writes, Scope scope, IdempotencyKey key) {
        guarded(new WorkGuard(c, false), writes, scope, key);
    }

    private void guarded(WorkGuard guard, LocalWrites writes, Scope scope, IdempotencyKey key) {
        try {
            writes.write(guard.context(configuration));
        } catch (RuntimeException e) {
            WorkEndedTransactionException refused = guard.refusal(scope, key, e);
            throw refused != null ? refused : e;
        } catch (Exception e) {
            WorkEndedTransactionException refused = guard.refusal(scope, key, e);
            throw refused != null ? refused : new WorkFailedException(scope, key, e);
        }
        guard.check(scope, key);
    }

    private <V extends @Nullable Object> V inTransaction(
            @Nullable Scope scope,
            @Nullable IdempotencyKey key,
            SqlUnit<V> unit,
            TransactionOwnership.@Nullable Detected detected) {
        try {
            return onConnection(scope, key, unit, detected);
        } catch (RuntimeException e) {
            // a COMMIT committed on this server only (SqlStates.requireReplicated), or maybe not at all
            // (the connection was lost with it in flight): the remote is not called on a claim that may
            // not be there or a failover could lose, nor is an answer given as recorded; a retry replays
            // what is recorded, or takes an in-flight claim over once its lease runs out
            throw scope != null && key != null ? SqlStates.commitUnknownOr(scope, key, e) : e;
        }
    }

    private <V extends @Nullable Object> V onConnection(
            @Nullable Scope scope,
            @Nullable IdempotencyKey key,
            SqlUnit<V> unit,
            TransactionOwnership.@Nullable Detected detected) {
        return Jdbc.onConnection(configuration, connection -> {
            serverCheck.check(connection);
            if (detected != null) {
                ownership.decide(configuration, detected, connection, scope, key);
            }
            Function<Boundary, V> attempt = boundary -> {
                try {
                    V v = unit.apply(connection);
                    Jdbc.commit(connection); // none is sent after one that went with a statement
                    return v;
                } catch (SQLException e) {
                    throw SqlStates.storeFailure("the external effect's statement failed", e, schema);
                }
            };
            return Units.retrying(connection, policy, scope, key, attempt);
        });
    }
}
