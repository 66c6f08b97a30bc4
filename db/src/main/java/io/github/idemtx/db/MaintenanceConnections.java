package io.github.idemtx.db;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * How the partitions' maintenance uses its data source: short transactions whose statements wait at
 * most the lock timeout for a lock, detaches outside of any transaction, and the schema's maintenance
 * lock that makes instances running the same job at once take turns. Every {@link SQLException} is
 * reported as an {@link IllegalStateException} that names the table.
 */
final class MaintenanceConnections {

    /** The first key of the maintenance lock's two-key advisory lock ({@link #exclusively}). */
    private static final int MAINTENANCE_LOCK = 0x1de7a11;

    private final DataSource dataSource;
    private final String schema;
    private final String table;
    private final Duration lockTimeout;
    private final Duration longestTransaction;

    MaintenanceConnections(
            DataSource dataSource, String schema, String table, Duration lockTimeout, Duration longestTransaction) {
        this.dataSource = dataSource;
        this.schema = schema;
        this.table = table;
        this.lockTimeout = lockTimeout;
        this.longestTransaction = longestTransaction;
    }

    /** What runs in one transaction of the maintenance. */
    @FunctionalInterface
    interface Work<R> {
        R apply(Connection c) throws SQLException;
    }

    /**
     * Runs {@code body} while this schema's maintenance lock is held: a session advisory lock (the
     * two-key form, apart from the claims' one-key locks) on a connection of its own, so that two
     * instances running the same job at once never race over one partition. When another instance
     * holds it, returns {@code whenBusy} at once: that one is doing the work.
     */
    <R> R exclusively(R whenBusy, Supplier<R> body) {
        try (Connection c = dataSource.getConnection()) {
            boolean locked;
            try (Statement s = c.createStatement();
                    ResultSet r = s.executeQuery(
                            "SELECT pg_try_advisory_lock(" + MAINTENANCE_LOCK + ", " + schema.hashCode() + ")")) {
                locked = r.next() && r.getBoolean(1);
            }
            if (!locked) {
                return whenBusy; // another instance is at it now
            }
            R result;
            boolean unlocked = false;
            try {
                result = body.get();
            } finally {
                unlocked = unlock(c);
            }
            if (!unlocked) {
                throw new IllegalStateException("the maintenance lock of " + table + " was not held at its end:"
                        + " the data source hands out connections through a transaction-mode pooler; give"
                        + " ClaimPartitions one straight to the server");
            }
            return result;
        } catch (SQLException e) {
            throw failed(e);
        }
    }

    private boolean unlock(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet r = s.executeQuery(
                        "SELECT pg_advisory_unlock(" + MAINTENANCE_LOCK + ", " + schema.hashCode() + ")")) {
            return r.next() && r.getBoolean(1);
        }
    }

    /** Runs {@code work} in a transaction of its own, committed when it returns, rolled back when it throws. */
    <R> R inTransaction(Work<R> work) {
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                try (Statement s = c.createStatement()) {
                    s.execute("SET LOCAL lock_timeout = '" + lockTimeout.toMillis() + "ms'");
                }
                R result = work.apply(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(auto);
            }
        } catch (SQLException e) {
            throw failed(e);
        }
    }

    /**
     * A detach, which cannot run in a transaction block. It waits for every transaction that has
     * used the claim table (those of other days too) but stops no claim: bounded by the longest
     * transaction, not the lock timeout. Left pending when that runs out; the next call finishes it.
     */
    void detach(String sql) {
        long bound = Math.max(lockTimeout.toMillis(), longestTransaction.toMillis());
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            try (Statement s = c.createStatement()) {
                c.setAutoCommit(true);
                s.execute("SET lock_timeout = '" + bound + "ms'");
                try {
                    s.execute(sql);
                } finally {
                    try {
                        s.execute("RESET lock_timeout");
                    } finally {
                        c.setAutoCommit(auto);
                    }
                }
            }
        } catch (SQLException e) {
            throw failed(e);
        }
    }

    private IllegalStateException failed(SQLException e) {
        String why = "55P03".equals(e.getSQLState())
                ? "a lock was not had within " + lockTimeout + " (a long transaction holds the claim table)"
                : e.getMessage();
        return new IllegalStateException(
                "maintaining the partitions of " + table + " failed: " + why
                        + (e.getSQLState() == null ? "" : " (SQLSTATE " + e.getSQLState() + ")"),
                e);
    }
}
