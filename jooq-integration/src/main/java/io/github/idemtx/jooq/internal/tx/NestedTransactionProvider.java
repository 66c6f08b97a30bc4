package io.github.idemtx.jooq.internal.tx;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayDeque;
import java.util.Deque;
import org.jooq.TransactionContext;
import org.jooq.TransactionProvider;
import org.jooq.exception.DataAccessException;

/**
 * The transaction provider of the work's {@code tx}: a {@code tx.transaction(...)} inside the work
 * becomes a savepoint of the enclosing transaction and never commits it. Confined to the thread
 * running the work.
 */
public final class NestedTransactionProvider implements TransactionProvider {

    private final Connection connection;
    private final Deque<Savepoint> savepoints = new ArrayDeque<>();

    public NestedTransactionProvider(Connection connection) {
        this.connection = connection;
    }

    @Override
    public void begin(TransactionContext ctx) {
        try {
            savepoints.push(connection.setSavepoint());
        } catch (SQLException e) {
            throw new DataAccessException("cannot set a savepoint for a nested transaction", e);
        }
    }

    @Override
    public void commit(TransactionContext ctx) {
        try {
            connection.releaseSavepoint(savepoints.pop());
        } catch (SQLException e) {
            throw new DataAccessException("cannot release the savepoint of a nested transaction", e);
        }
    }

    @Override
    public void rollback(TransactionContext ctx) {
        if (savepoints.isEmpty()) {
            return;
        }
        try {
            connection.rollback(savepoints.pop());
        } catch (SQLException e) {
            throw new DataAccessException("cannot roll back to the savepoint of a nested transaction", e);
        }
    }
}
