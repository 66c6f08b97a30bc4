package io.github.idemtx.jooq.internal.tx;

import io.github.idemtx.jooq.internal.store.SqlStates;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * The JDBC calls around a unit, each turning the driver's {@link SQLException} into jOOQ's
 * {@link DataAccessException} with a message that says what was being done. {@link #undo} is the
 * one way a failure's rollback is done and reported: as a value, so the caller decides whether it
 * is suppressed into the failure or replaces it.
 */
public final class Jdbc {

    private Jdbc() {}

    public static boolean autoCommit(Connection connection) {
        try {
            return connection.getAutoCommit();
        } catch (SQLException e) {
            throw new DataAccessException("cannot read the connection's auto-commit mode", e);
        }
    }

    public static boolean readOnly(Connection connection) {
        try {
            return connection.isReadOnly();
        } catch (SQLException e) {
            throw new DataAccessException("cannot read whether the connection is read-only", e);
        }
    }

    /** Whether {@code connection} says it is closed; a connection that cannot even say so counts as closed. */
    public static boolean isClosed(Connection connection) {
        try {
            return connection.isClosed();
        } catch (SQLException e) {
            return true;
        }
    }

    public static void setAutoCommit(Connection connection, boolean autoCommit) {
        try {
            connection.setAutoCommit(autoCommit);
        } catch (SQLException e) {
            throw new DataAccessException("cannot set auto-commit to " + autoCommit, e);
        }
    }

    /**
     * pgjdbc's view of {@code connection}: a transaction left open (auto-commit being off), which is
     * {@link TransactionState#IDLE} when none is; null for a connection that is not pgjdbc's.
     * Only ever used to tidy a connection the library already owns, never to decide ownership.
     */
    public static @Nullable TransactionState transactionState(Connection connection) {
        try {
            return connection.isWrapperFor(BaseConnection.class)
                    ? connection.unwrap(BaseConnection.class).getTransactionState()
                    : null;
        } catch (SQLException e) {
            throw new DataAccessException("cannot read the connection's transaction state", e);
        }
    }

    /**
     * Whether the transaction open on {@code connection} has a transaction id, that is, has written
     * or locked a row (one round trip). {@code txid_current_if_assigned()} is on every supported
     * PostgreSQL, and assigns nothing itself.
     */
    public static boolean wroteInTransaction(Connection connection) {
        try (java.sql.Statement st = connection.createStatement();
                java.sql.ResultSet rs = st.executeQuery("/* idemtx:ownership */ select txid_current_if_assigned()")) {
            rs.next();
            rs.getLong(1);
            return !rs.wasNull();
        } catch (SQLException e) {
            throw new DataAccessException(
                    "cannot read whether the open transaction has written (SQLSTATE " + e.getSQLState() + ")", e);
        }
    }

    /**
     * Commits the open transaction (nothing is sent when none is open). A connection lost while the
     * COMMIT was in flight is marked by {@link SqlStates#inCommit}, a COMMIT the synchronous standby
     * never confirmed by {@link SqlStates#requireReplicated}: either may have committed.
     */
    public static void commit(Connection connection) {
        try {
            connection.clearWarnings(); // local: the warnings read below are the COMMIT's own
            connection.commit();
            SqlStates.requireReplicated(connection.getWarnings());
        } catch (SQLException e) {
            throw new DataAccessException("commit failed", SqlStates.inCommit(e));
        }
    }

    public static void rollback(Connection connection) {
        SQLException failure = undo(connection, null);
        if (failure != null) {
            throw new DataAccessException("rollback failed", failure);
        }
    }

    /**
     * Rolls back the transaction, or to {@code savepoint} when it is not null; returns the failure
     * of that, null when it worked.
     */
    public static @Nullable SQLException undo(Connection connection, @Nullable Savepoint savepoint) {
        try {
            if (savepoint == null) {
                connection.rollback();
            } else {
                connection.rollback(savepoint);
            }
            return null;
        } catch (SQLException e) {
            return e;
        }
    }

    public static Savepoint savepoint(Connection connection) {
        try {
            return connection.setSavepoint();
        } catch (SQLException e) {
            throw new DataAccessException("cannot set a savepoint in the enclosing transaction", e);
        }
    }

    public static void release(Connection connection, Savepoint savepoint) {
        try {
            connection.releaseSavepoint(savepoint);
        } catch (SQLException e) {
            throw new DataAccessException("cannot release the savepoint", e);
        }
    }

    /**
     * Applies {@code body} to a connection of {@code configuration}'s provider and releases it,
     * whatever happens; a provider that hands out no connection is a DataAccessException.
     */
    public static <R> R onConnection(
            org.jooq.Configuration configuration, java.util.function.Function<Connection, R> body) {
        org.jooq.ConnectionProvider provider = configuration.connectionProvider();
        Connection connection = provider.acquire();
        if (connection == null) {
            throw new DataAccessException("the DSLContext's ConnectionProvider returned no connection");
        }
        R result;
        try {
            result = body.apply(connection);
        } catch (RuntimeException | Error e) {
            try {
                provider.release(connection);
            } catch (RuntimeException released) {
                e.addSuppressed(released); // the call's own failure says what happened; the release's is a consequence
            }
            throw e;
        }
        provider.release(connection);
        return result;
    }

    /**
     * Refuses a server older than the oldest supported PostgreSQL ({@link
     * io.github.idemtx.db.IdempotencySchema#requireSupportedServer}) on the first connection a front
     * door is given; after that, a volatile read. Reads what the driver learned at connect time: no
     * round trip.
     */
    public static final class ServerCheck {
        private volatile boolean passed;

        public void check(Connection connection) {
            if (passed) {
                return;
            }
            try {
                io.github.idemtx.db.IdempotencySchema.requireSupportedServer(connection);
            } catch (SQLException e) {
                throw new DataAccessException("cannot read the server's version from the connection", e);
            }
            passed = true;
        }
    }
}
