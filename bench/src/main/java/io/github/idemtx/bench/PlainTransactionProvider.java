package io.github.idemtx.bench;

import java.sql.Connection;
import java.sql.SQLException;
import org.jooq.ConnectionProvider;
import org.jooq.TransactionContext;
import org.jooq.TransactionProvider;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DefaultConnectionProvider;

/**
 * The {@code bare} baseline's jOOQ transaction: take a pooled connection, turn auto-commit off,
 * run, commit (or roll back), turn auto-commit back on, return the connection. That is what
 * {@code IdempotentTransaction.run} does around its own statements, so the two differ only in the
 * idempotency statements.
 *
 * <p>Why not jOOQ's {@code DefaultTransactionProvider}: in jOOQ 3.21 it reads the connection's
 * isolation level when a top-level transaction begins ({@code Connection.getTransactionIsolation()},
 * which pgjdbc answers by sending {@code SHOW TRANSACTION ISOLATION LEVEL} to the server), one
 * extra round trip per transaction that neither the library nor a hand-written JDBC transaction
 * pays. (It sets no savepoint at the top level.) The bench's profile counts both.
 *
 * <p>Nested transactions are not supported (the bench has none).
 */
final class PlainTransactionProvider implements TransactionProvider {

    private static final String CONNECTION = "bench.plain-transaction.connection";
    private final ConnectionProvider pool;

    PlainTransactionProvider(ConnectionProvider pool) {
        this.pool = pool;
    }

    @Override
    public void begin(TransactionContext ctx) {
        if (ctx.configuration().data(CONNECTION) != null) {
            throw new UnsupportedOperationException("nested transactions are not supported here");
        }
        Connection c = pool.acquire();
        try {
            c.setAutoCommit(false);
        } catch (SQLException e) {
            pool.release(c);
            throw new DataAccessException("cannot turn auto-commit off", e);
        }
        ctx.configuration().data(CONNECTION, c);
        ctx.configuration().set(new DefaultConnectionProvider(c));
    }

    @Override
    public void commit(TransactionContext ctx) {
        Connection c = (Connection) ctx.configuration().data(CONNECTION);
        try {
            c.commit();
        } catch (SQLException e) {
            throw new DataAccessException("commit failed", e);
        } finally {
            end(ctx, c);
        }
    }

    @Override
    public void rollback(TransactionContext ctx) {
        Connection c = (Connection) ctx.configuration().data(CONNECTION);
        if (c == null) {
            return;
        }
        try {
            c.rollback();
        } catch (SQLException e) {
            throw new DataAccessException("rollback failed", e);
        } finally {
            end(ctx, c);
        }
    }

    private void end(TransactionContext ctx, Connection c) {
        ctx.configuration().data().remove(CONNECTION);
        try {
            c.setAutoCommit(true);
        } catch (SQLException e) {
            throw new DataAccessException("cannot restore auto-commit", e);
        } finally {
            pool.release(c);
        }
    }
}
