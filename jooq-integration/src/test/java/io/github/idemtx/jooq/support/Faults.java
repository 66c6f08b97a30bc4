package io.github.idemtx.jooq.support;

import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.internal.store.StatementKind;
import java.sql.SQLException;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Tools of the fault tests: which of the library's statements a hook sees (by the kind the library
 * tags it with), unpooled sessions a killer can find, and what counts as a connection error. Only
 * ever aimed at the tests' own sessions; the killer itself is {@code Backends} (idemtx-testing).
 */
public final class Faults {

    private Faults() {}

    /** Whether the statement is the claim: the first of each attempt, which reads the key and tries its lock. */
    public static boolean isClaim(String sql) {
        return StatementKind.of(sql) == StatementKind.CLAIM;
    }

    /** Whether the statement records the outcome: an insert into the claim table, plain or upsert. */
    public static boolean isRecord(String sql) {
        return isCompletionAndCommit(sql) || isUpsert(sql);
    }

    /** Whether the statement is the record sent together with COMMIT (a fresh key's completion). */
    public static boolean isCompletionAndCommit(String sql) {
        return StatementKind.of(sql) == StatementKind.RECORD_AND_COMMIT;
    }

    /** Whether the statement is the upsert record (take-over, failure, inside a caller's transaction), which cannot carry the COMMIT. */
    public static boolean isUpsert(String sql) {
        return StatementKind.of(sql) == StatementKind.RECORD;
    }

    /** Whether the statement is the wait for a key's holder. */
    public static boolean isAwait(String sql) {
        return StatementKind.of(sql) == StatementKind.AWAIT;
    }

    /**
     * Whether {@code sql}, about to be sent, opens its connection's transaction (pgjdbc sends BEGIN
     * with it): the claim in {@link ClaimMode#CLAIM_FIRST}, the work's first statement in
     * {@link ClaimMode#WORK_FIRST}.
     */
    public static boolean opensTransaction(SqlHook.Sql sql) {
        try {
            java.sql.Connection c = sql.connection();
            return !c.getAutoCommit()
                    && c.unwrap(org.postgresql.core.BaseConnection.class).getTransactionState()
                            == org.postgresql.core.TransactionState.IDLE;
        } catch (SQLException e) {
            return false; // a dead connection opens nothing
        }
    }

    /**
     * Whether {@code sql} begins an attempt of the unit: the claim in {@link ClaimMode#CLAIM_FIRST};
     * in {@link ClaimMode#WORK_FIRST} the statement that opens the transaction, unless it is a claim
     * (the read after a taken key, or the failure's re-claim).
     */
    public static boolean beginsAttempt(SqlHook.Sql sql) {
        return Db.workFirst() ? opensTransaction(sql) && !isClaim(sql.sql()) : isClaim(sql.sql());
    }

    /** A pg_stat_activity condition: the session is running a statement of {@code kind}. */
    public static String running(StatementKind kind) {
        return "query LIKE '" + kind.tag() + "%'";
    }

    /**
     * A hook that runs each attempt's transaction at {@code level} (e.g. "SERIALIZABLE"), set with
     * SET TRANSACTION just before the statement that opens it (the claim, or in
     * {@link ClaimMode#WORK_FIRST} the work's first): Connection.setTransactionIsolation would send
     * SET SESSION CHARACTERISTICS, session state that behind a transaction-mode pooler reaches other
     * clients' transactions.
     */
    public static SqlHook isolationAtBegin(String level) {
        return new SqlHook() {
            @Override
            public void before(Sql sql) throws SQLException {
                if (opensTransaction(sql)) {
                    try (java.sql.Statement s = sql.connection().createStatement()) {
                        s.execute("SET TRANSACTION ISOLATION LEVEL " + level);
                    }
                }
            }
        };
    }

    /**
     * A data source with no pool: every {@code getConnection} opens a new session, so a killed
     * backend never comes back to a later call. Sessions carry {@code applicationName}, which lets
     * a killer find them and nobody else's.
     */
    public static DataSource unpooled(String applicationName) {
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

    public static String applicationName(String what) {
        return "idemtx-" + what + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /**
     * Whether {@code t} is a lost connection: an SQLException in its cause chain (or chained to one
     * as its next exception) whose state is of class 08 (connection exception) or 57P01-57P03 (terminated by the administrator, crash,
     * cannot connect now).
     */
    public static boolean isConnectionError(Throwable t) {
        return connectionErrorState(t) != null;
    }

    /**
     * Whether a lost connection is behind {@code t} or any exception suppressed along its causes:
     * e.g. a serialization failure whose rollback then met a dead connection, which the library
     * rethrows as it is (nothing left to retry on).
     */
    public static boolean involvesConnectionError(Throwable t) {
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
    public static String connectionErrorState(Throwable t) {
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        for (Throwable c = t; c != null && seen.put(c, Boolean.TRUE) == null; c = c.getCause()) {
            if (c instanceof SQLException sql) {
                // the driver chains what came after the statement's own error, e.g. the backend's termination
                SQLException s = sql;
                for (int depth = 0; s != null && depth < 10; depth++, s = s.getNextException()) {
                    String state = s.getSQLState();
                    if (state != null && (state.startsWith("08") || state.startsWith("57P0"))) {
                        return state;
                    }
                }
            }
        }
        return null;
    }
}
