package io.github.idemtx.jooq.internal.tx;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * Where an attempt's changes live and how it ends them: a transaction of its own, or a savepoint in
 * the caller's transaction.
 */
public interface Boundary {

    /** Undoes everything since the boundary began, and ends it. */
    void abandon();

    /** Undoes the work's writes but stays open for the failure to be recorded; the failure of that, if any. */
    @Nullable
    SQLException undoWork();

    /** Keeps what was written: commits, or releases the savepoint. */
    void keep();

    /**
     * Pushes out writes the caller's transaction manager holds in memory, after the work (see
     * {@link io.github.idemtx.jooq.TransactionDetector#flush}); nothing in a transaction of the library's own.
     */
    default void flush() {}

    /** Whether this is the caller's transaction: records commit with the caller, and their TTL counts from then. */
    boolean joined();

    /** The transaction open on {@code connection}, which the library owns. */
    static Boundary ownTransaction(Connection connection) {
        return new Boundary() {
            @Override
            public void abandon() {
                Jdbc.rollback(connection);
            }

            @Override
            public @Nullable SQLException undoWork() {
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

    /**
     * {@code savepoint} in the caller's transaction on {@code connection}.
     *
     * @param flush pushes out what the caller's transaction manager holds in memory
     */
    static Boundary savepoint(Connection connection, Savepoint savepoint, Runnable flush) {
        return new Boundary() {
            @Override
            public void flush() {
                flush.run();
            }

            @Override
            public void abandon() {
                SQLException failure = Jdbc.undo(connection, savepoint);
                if (failure != null) {
                    throw new DataAccessException("cannot roll back to the savepoint", failure);
                }
                Jdbc.release(connection, savepoint);
            }

            @Override
            public @Nullable SQLException undoWork() {
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
}
