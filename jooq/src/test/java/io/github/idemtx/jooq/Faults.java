package io.github.idemtx.jooq;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Tools of the fault tests: a side connection that terminates backends, the backend behind a JDBC
 * connection, and what counts as a connection error. Only ever aimed at the tests' own sessions.
 */
final class Faults {

    private Faults() {}

    /** Whether the statement is the claim: the first of each attempt, which reads the key and tries its lock. */
    static boolean isClaim(String sql) {
        return sql != null && sql.contains("pg_try_advisory_xact_lock");
    }

    /** Whether the statement records the outcome: an insert into the claim table, plain or upsert. */
    static boolean isRecord(String sql) {
        return sql != null && sql.startsWith("insert") && sql.contains("idempotency_claim");
    }

    /** Whether the statement is the record sent together with COMMIT (a fresh key's completion). */
    static boolean isCompletionAndCommit(String sql) {
        return isRecord(sql) && sql.endsWith("; commit");
    }

    /** Whether the statement is the upsert record (take-over, failure, inside a caller's transaction), which cannot carry the COMMIT. */
    static boolean isUpsert(String sql) {
        return isRecord(sql) && sql.contains("on conflict");
    }

    /** Whether the statement is the wait for a key's holder. */
    static boolean isAwait(String sql) {
        return sql != null && sql.contains("idempotency_await");
    }

    /**
     * A hook that runs each attempt's transaction at {@code level} (e.g. "SERIALIZABLE"), set just
     * before the claim opens it with SET TRANSACTION: Connection.setTransactionIsolation would send
     * SET SESSION CHARACTERISTICS, session state that behind a transaction-mode pooler reaches other
     * clients' transactions.
     */
    static SqlHook isolationAtClaim(String level) {
        return new SqlHook() {
            @Override
            public void before(Sql sql) throws SQLException {
                if (isClaim(sql.sql())) {
                    try (java.sql.Statement s = sql.connection().createStatement()) {
                        s.execute("SET TRANSACTION ISOLATION LEVEL " + level);
                    }
                }
            }
        };
    }

    /** The PostgreSQL backend serving {@code connection}, known to pgjdbc without a round trip. */
    static int backendPid(Connection connection) {
        try {
            return connection.unwrap(PGConnection.class).getBackendPID();
        } catch (SQLException e) {
            throw new IllegalStateException("not a pgjdbc connection", e);
        }
    }

    /**
     * A data source with no pool: every {@code getConnection} opens a new session, so a killed
     * backend never comes back to a later call. Sessions carry {@code applicationName}, which lets
     * a killer find them and nobody else's.
     */
    static DataSource unpooled(String applicationName) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(Db.DATABASE.url());
        if (Db.DATABASE.user() != null) {
            ds.setUser(Db.DATABASE.user());
        }
        if (Db.DATABASE.password() != null) {
            ds.setPassword(Db.DATABASE.password());
        }
        ds.setCurrentSchema(Db.SCHEMA);
        ds.setApplicationName(applicationName);
        return ds;
    }

    static String applicationName(String what) {
        return "idemtx-" + what + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /**
     * Whether {@code t} is a lost connection: an SQLException in its cause chain whose state is of
     * class 08 (connection exception) or 57P01-57P03 (terminated by the administrator, crash,
     * cannot connect now).
     */
    static boolean isConnectionError(Throwable t) {
        return connectionErrorState(t) != null;
    }

    /**
     * Whether a lost connection is behind {@code t} or any exception suppressed along its causes:
     * e.g. a serialization failure whose rollback then met a dead connection, which the library
     * rethrows as it is (nothing left to retry on).
     */
    static boolean involvesConnectionError(Throwable t) {
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        java.util.ArrayDeque<Throwable> todo = new java.util.ArrayDeque<>();
        todo.add(t);
        while (!todo.isEmpty()) {
            Throwable c = todo.poll();
            if (c == null || seen.put(c, Boolean.TRUE) != null) {
                continue;
            }
            if (connectionErrorState(c) != null) {
                return true;
            }
            if (c.getCause() != null) {
                todo.add(c.getCause());
            }
            todo.addAll(java.util.List.of(c.getSuppressed()));
        }
        return false;
    }

    /** The SQLSTATE that made {@code t} a connection error, or null. */
    static String connectionErrorState(Throwable t) {
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        for (Throwable c = t; c != null && seen.put(c, Boolean.TRUE) == null; c = c.getCause()) {
            if (c instanceof SQLException sql && sql.getSQLState() != null) {
                String state = sql.getSQLState();
                if (state.startsWith("08") || state.startsWith("57P0")) {
                    return state;
                }
            }
        }
        return null;
    }

    /**
     * A side connection that terminates backends. Thread-safe (one caller at a time); close it when
     * done.
     */
    static final class Killer implements AutoCloseable {
        private final Connection side;
        private final PreparedStatement terminate;
        private final PreparedStatement alive;

        Killer() {
            try {
                side = Db.DATABASE.connect();
                terminate = side.prepareStatement("select pg_terminate_backend(?)");
                alive = side.prepareStatement("select count(*) from pg_stat_activity where pid = ?");
            } catch (SQLException e) {
                throw new IllegalStateException("cannot open the killer's side connection", e);
            }
        }

        /** Sends the signal; true if {@code pid} was a backend to signal. Does not wait. */
        synchronized boolean signal(int pid) {
            try {
                terminate.setInt(1, pid);
                try (ResultSet rs = terminate.executeQuery()) {
                    rs.next();
                    return rs.getBoolean(1);
                }
            } catch (SQLException e) {
                throw new IllegalStateException("pg_terminate_backend(" + pid + ") failed", e);
            }
        }

        /** Signals {@code pid} and waits until the backend is gone; true if it was there to kill. */
        synchronized boolean kill(int pid) {
            boolean signalled = signal(pid);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (isAlive(pid)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("backend " + pid + " still alive 10 s after pg_terminate_backend");
                }
                Thread.onSpinWait();
            }
            return signalled;
        }

        synchronized boolean isAlive(int pid) {
            try {
                alive.setInt(1, pid);
                try (ResultSet rs = alive.executeQuery()) {
                    rs.next();
                    return rs.getInt(1) > 0;
                }
            } catch (SQLException e) {
                throw new IllegalStateException("cannot read pg_stat_activity", e);
            }
        }

        @Override
        public synchronized void close() throws SQLException {
            side.close();
        }
    }
}
