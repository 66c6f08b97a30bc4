package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.UnsupportedDatabaseException;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.util.IdentityHashMap;
import org.jspecify.annotations.Nullable;
import org.postgresql.util.PSQLException;
import org.postgresql.util.PSQLWarning;
import org.postgresql.util.ServerErrorMessage;

/** Finds the SQLSTATE behind an exception, however the work or jOOQ wrapped it. */
public final class SqlStates {

    public static final String SERIALIZATION_FAILURE = "40001";
    public static final String DEADLOCK_DETECTED = "40P01";
    public static final String LOCK_NOT_AVAILABLE = "55P03";
    public static final String UNIQUE_VIOLATION = "23505";
    public static final String CARDINALITY_VIOLATION = "21000";
    /** invalid_savepoint_specification: e.g. RELEASE of a savepoint its transaction no longer has. */
    public static final String NO_SUCH_SAVEPOINT = "3B001";
    /**
     * transaction_resolution_unknown: what {@link #requireReplicated} reports, a class-08 state, so
     * that every path that answers a commit lost in flight answers this one the same way.
     */
    public static final String RESOLUTION_UNKNOWN = "08007";

    /** SQLSTATE of pgjdbc's "This connection has been closed.": checked before anything is sent. */
    public static final String CONNECTION_DOES_NOT_EXIST = "08003";

    private SqlStates() {}

    /** Whether the cause chain holds a serialization failure or a deadlock: the unit may run again. */
    public static boolean isRetryable(Throwable t) {
        return has(t, SERIALIZATION_FAILURE) || has(t, DEADLOCK_DETECTED);
    }

    /**
     * Whether the cause chain says the connection is gone: SQLSTATE class 08 (connection exception),
     * 57P01-57P03 (the server is shutting down or terminated the backend), or any FATAL error.
     */
    public static boolean isConnectionLoss(Throwable t) {
        return any(t, SqlStates::isConnectionLossState) || hasFatal(t);
    }

    /**
     * Whether the cause chain holds a server error of severity FATAL or PANIC: the server (or
     * PgBouncer, e.g. its "invalid server parameter" when a server connection died while it was being
     * set up) ends the session with it, whatever its SQLSTATE; a PANIC ends every session.
     */
    private static boolean hasFatal(Throwable t) {
        return hasSeverity(t, "FATAL") || hasPanic(t);
    }

    /**
     * Whether the cause chain holds a server error of severity PANIC: the server is crashing, also
     * on its way through a COMMIT (flushing its WAL, or after its commit record), which recovery may
     * then keep.
     */
    private static boolean hasPanic(Throwable t) {
        return hasSeverity(t, "PANIC");
    }

    private static boolean hasSeverity(Throwable t, String severity) {
        return anyException(
                t,
                s -> s instanceof PSQLException p
                        && p.getServerErrorMessage() != null
                        && severity.equals(p.getServerErrorMessage().getSeverity()));
    }

    /** Whether {@code state} (null: no) says the connection is gone, as {@link #isConnectionLoss} counts it. */
    public static boolean isConnectionLossState(@Nullable String state) {
        return state != null
                && (state.startsWith("08") || state.equals("57P01") || state.equals("57P02") || state.equals("57P03"));
    }

    /** SQLSTATE of a cancelled statement: the statement_timeout, or a cancel request. */
    public static final String QUERY_CANCELED = "57014";

    /**
     * Whether {@code e} is the server's statement_timeout (not a cancel request, which shares its
     * SQLSTATE 57014): the server words it "canceling statement due to statement timeout".
     */
    public static boolean isStatementTimeout(SQLException e) {
        return QUERY_CANCELED.equals(e.getSQLState())
                && String.valueOf(e.getMessage()).contains("statement timeout");
    }

    /**
     * Whether {@code t}, or an SQLException of its chain, is a wait on another transaction's lock
     * that the session's own bound cut short: {@code lock_timeout} (55P03) or a
     * {@code statement_timeout} (57014) that struck while the statement waited on a row ("while
     * locking tuple", "while inserting index tuple", ...), not one that struck a slow statement.
     */
    public static boolean isLockWaitCut(Throwable t) {
        return anyException(
                t, s -> LOCK_NOT_AVAILABLE.equals(s.getSQLState()) || (isStatementTimeout(s) && waitedOnRow(s)));
    }

    private static boolean waitedOnRow(SQLException e) {
        String where = where(e);
        return where != null && where.startsWith("while ");
    }

    /** The server's context of the error ("while inserting index tuple ...", a PL/pgSQL line), or null. */
    private static @Nullable String where(SQLException e) {
        return e instanceof PSQLException p && p.getServerErrorMessage() != null
                ? p.getServerErrorMessage().getWhere()
                : null;
    }

    /**
     * Whether {@code e} is a statement's own refusal, raised as "more than one row returned by a
     * subquery" (21000) by the statement itself: the WORK_FIRST insert's one-time filter when
     * another transaction holds the key's advisory lock, an effect's record sent with COMMIT when
     * the fence was lost. The same SQLSTATE from a function or trigger run on its behalf (a
     * deferred constraint's at COMMIT) carries a context and is not this.
     */
    public static boolean isRefusedByStatement(SQLException e) {
        if (!CARDINALITY_VIOLATION.equals(e.getSQLState())) {
            return false;
        }
        return where(e) == null;
    }

    /**
     * Whether {@code e} ended a wait on another transaction's uncommitted claim row: a lock timeout
     * (55P03) or statement_timeout whose context is the insert of the row's index entry itself
     * ("while inserting index tuple"), not a statement run on its behalf (a deferred constraint's
     * check at COMMIT, a trigger), which is the caller's own wait and is thrown as it is.
     */
    public static boolean isWaitOnClaimRow(SQLException e) {
        if (!LOCK_NOT_AVAILABLE.equals(e.getSQLState()) && !isStatementTimeout(e)) {
            return false;
        }
        String where = where(e);
        return where != null
                && where.contains("while inserting index tuple")
                && !where.contains("SQL statement")
                && !where.contains("function");
    }

    /**
     * Whether {@code e} says a relation, column, function or schema is not there (42P01, 42703,
     * 42883, 3F000): raised by one of the library's own statements, the claim table is missing or
     * older than this version's migrations.
     */
    public static boolean isNotMigrated(SQLException e) {
        String state = e.getSQLState();
        return "42P01".equals(state) || "42703".equals(state) || "42883".equals(state) || "3F000".equals(state);
    }

    /**
     * The exception for a failure of one of the library's own statements on the claim table of
     * {@code schema}: {@link UnsupportedDatabaseException} where the table is not migrated, else
     * jOOQ's DataAccessException saying {@code what} failed.
     *
     * @param what what failed, as "the claim of the idempotency key failed"
     */
    public static RuntimeException storeFailure(String what, SQLException e, String schema) {
        if (isNotMigrated(e)) {
            return notMigrated(e, schema);
        }
        if (isNoPartition(e)) {
            return noPartition(e, schema);
        }
        return new org.jooq.exception.DataAccessException(what + " (SQLSTATE " + e.getSQLState() + ")", e);
    }

    /** {@link UnsupportedDatabaseException} for a claim table in {@code schema} that {@code e} shows missing or old. */
    public static UnsupportedDatabaseException notMigrated(SQLException e, String schema) {
        return new UnsupportedDatabaseException(
                UnsupportedDatabaseException.Problem.NOT_MIGRATED,
                "the claim table " + schema + "." + io.github.idemtx.db.IdempotencySchema.CLAIM_TABLE
                        + " is missing or older than this version of idemtx (SQLSTATE " + e.getSQLState() + ": "
                        + serverMessage(e) + "). Apply the migrations with IdempotencySchema.migrate(dataSource, \""
                        + schema + "\") before the first call, or point the builder's schema(...) at the schema"
                        + " that holds them; nothing was written",
                e);
    }

    /**
     * Whether {@code e} says a row found no partition of a partitioned table (23514, as a CHECK
     * violation, but from the routine that routes rows to partitions): on the claim table partitioned by key day, a
     * key that carries no day or one whose partition does not exist. Recognised by the server's
     * routine {@code ExecFindPartition}, the same in every language, else by its English message.
     */
    public static boolean isNoPartition(SQLException e) {
        return "23514".equals(e.getSQLState())
                && fromRoutine(
                        e instanceof PSQLException p ? p.getServerErrorMessage() : null,
                        "ExecFindPartition",
                        serverMessage(e).startsWith("no partition of relation"));
    }

    /**
     * Whether the server's report {@code server} comes from its C function {@code routine}, the same
     * in every language; where it names none (not from a PostgreSQL server), {@code english}: what
     * the English message says.
     */
    private static boolean fromRoutine(@Nullable ServerErrorMessage server, String routine, boolean english) {
        String named = server == null ? null : server.getRoutine();
        return named != null ? named.equals(routine) : english;
    }

    /** The error for {@link #isNoPartition}: what the key lacks and what makes a partition. */
    public static RuntimeException noPartition(SQLException e, String schema) {
        return new org.jooq.exception.DataAccessException(
                "the claim table " + schema + "." + io.github.idemtx.db.IdempotencySchema.CLAIM_TABLE
                        + " is partitioned and has no partition for this key (" + serverMessage(e)
                        + "): on the table partitioned by key day a key must begin with its intent's day (yyyyMMdd,"
                        + " UTC; ClaimPartitions.key builds one) and that day's partition must exist"
                        + " (ClaimPartitions.createAhead, run by its migrate()); give the builder partitions(...) to"
                        + " refuse such keys before any SQL. Nothing was written",
                e);
    }

    /**
     * Throws when {@code warnings} (of a statement that carried a COMMIT, or of the connection after
     * {@code commit()}) say the server committed without its synchronous standby's confirmation: a
     * cancel request (an operator's {@code pg_cancel_backend}, a driver's query timeout) ended the
     * COMMIT's wait for the standby, and PostgreSQL then reports success with the WARNING
     * "canceling wait for synchronous replication ... committed locally, but might not have been
     * replicated to the standby". The row is visible, and a failover now could lose it: reported as
     * {@value #RESOLUTION_UNKNOWN}, which the flows answer as a commit of unknown outcome (the retry
     * replays, or runs once if the failover lost it). Recognised by the server's routine
     * {@code SyncRepWaitForLSN}, the same in every language, else by its English message.
     *
     * @throws SQLException with {@value #RESOLUTION_UNKNOWN} and the warning as its cause
     */
    public static void requireReplicated(@Nullable SQLWarning warnings) throws SQLException {
        for (SQLWarning w = warnings; w != null; w = w.getNextWarning()) {
            if (isUnreplicatedCommit(w)) {
                throw new UnreplicatedCommit(
                        "the COMMIT returned before the synchronous standby confirmed it (" + w.getMessage()
                                + "): committed on this server only",
                        RESOLUTION_UNKNOWN,
                        w);
            }
        }
    }

    /**
     * What {@link #requireReplicated} throws: told apart from an 08007 of a driver or a wrapper
     * (one that reports a failover, where nothing committed) by its type.
     */
    private static final class UnreplicatedCommit extends SQLException {
        private static final long serialVersionUID = 1L;

        UnreplicatedCommit(String message, String state, SQLWarning cause) {
            super(message, state, cause);
        }
    }

    /** Whether the cause chain holds what {@link #requireReplicated} throws: committed on this server only. */
    public static boolean isUnreplicatedCommit(Throwable t) {
        return anyException(t, s -> s instanceof UnreplicatedCommit);
    }

    /**
     * What a statement that carried a COMMIT met: {@code e} marked ({@link #isCommitInDoubt}) when
     * it says the connection was lost while the statement was in flight, so the server may have
     * committed: the first SQLSTATE of its chain ({@link #state}, which a wrapper without one
     * passes on) is a connection's, or the server PANICked (or failed with a state a PANIC carries,
     * {@link #isServerFailureState}, then went away). As it is otherwise: when the server failed
     * the statement with an ordinary error first (the first SQLSTATE is then not a connection's), the
     * driver found the connection closed before it sent anything ({@value #CONNECTION_DOES_NOT_EXIST}),
     * or the chain has no SQLSTATE at all (HikariCP's "Connection is closed", before anything is
     * sent), nothing committed.
     */
    public static SQLException inCommit(SQLException e) {
        if (e instanceof UnreplicatedCommit || e instanceof LostInCommit || !isConnectionLoss(e)) {
            return e;
        }
        String first = state(e);
        if (!hasPanic(e)
                && !isServerFailureState(first)
                && (!isConnectionLossState(first) || CONNECTION_DOES_NOT_EXIST.equals(first))) {
            return e;
        }
        return new LostInCommit(e);
    }

    /**
     * Whether {@code state} is one a server's PANIC carries: class XX (internal error), or what a
     * failed write or fsync of the WAL reports for its errno (PostgreSQL's errcode_for_file_access):
     * class 58 (an I/O error, a missing file), class 53 (no space left, too many open files) or
     * 42501 (permission denied, a read-only file system). Followed by the connection's loss, it is
     * taken for a PANIC whatever the severity's text: the server sends that text in its own language
     * ({@code lc_messages}), so "PANIC" is only recognised on an English one. An ordinary error of
     * these states followed by a loss is then in doubt too, which only costs precision: the retry
     * replays or runs once either way.
     */
    private static boolean isServerFailureState(@Nullable String state) {
        return state != null
                && (state.startsWith("XX")
                        || state.startsWith("58")
                        || state.startsWith("53")
                        || state.equals("42501"));
    }

    /** What {@link #inCommit} marks: the connection was lost while a COMMIT was in flight. */
    private static final class LostInCommit extends SQLException {
        private static final long serialVersionUID = 1L;

        LostInCommit(SQLException cause) {
            super(
                    "the connection was lost while a COMMIT was in flight (" + cause.getMessage()
                            + "): it may have committed",
                    RESOLUTION_UNKNOWN,
                    cause);
        }
    }

    /**
     * Whether the cause chain says a COMMIT's outcome is unknown: the connection was lost while it
     * was in flight ({@link #inCommit}), or it committed on this server only ({@link #requireReplicated}).
     */
    public static boolean isCommitInDoubt(Throwable t) {
        return anyException(t, s -> s instanceof UnreplicatedCommit || s instanceof LostInCommit);
    }

    /** Whether the cause chain says the connection was lost while a COMMIT was in flight ({@link #inCommit}). */
    public static boolean isLostInCommit(Throwable t) {
        return anyException(t, s -> s instanceof LostInCommit);
    }

    /**
     * The answer for a COMMIT whose outcome is unknown: {@code e} says its connection was lost in
     * flight, or ({@link #isUnreplicatedCommit}) that {@link #requireReplicated} found it committed
     * on this server only.
     */
    public static CommitOutcomeUnknownException commitUnknown(Scope scope, IdempotencyKey key, Throwable e) {
        if (isUnreplicatedCommit(e)) {
            return new CommitOutcomeUnknownException(
                    scope,
                    key,
                    "the COMMIT returned before the synchronous standby confirmed it (a cancel request ended its"
                            + " wait): it committed on the primary, but a failover now could lose it; retry with the"
                            + " same key, which replays or runs exactly once",
                    e);
        }
        return new CommitOutcomeUnknownException(scope, key, e);
    }

    /**
     * {@link #commitUnknown} when {@code e} says a COMMIT's outcome is unknown ({@link #isCommitInDoubt}),
     * else {@code e} as it is.
     */
    public static RuntimeException commitUnknownOr(Scope scope, IdempotencyKey key, RuntimeException e) {
        return isCommitInDoubt(e) ? commitUnknown(scope, key, e) : e;
    }

    private static boolean isUnreplicatedCommit(SQLWarning w) {
        return fromRoutine(
                w instanceof PSQLWarning p ? p.getServerErrorMessage() : null,
                "SyncRepWaitForLSN",
                "01000".equals(w.getSQLState())
                        && String.valueOf(w.getMessage()).contains("wait for synchronous replication"));
    }

    /** The server's own words for {@code e}, without the driver's position and hint lines. */
    private static String serverMessage(SQLException e) {
        if (e instanceof PSQLException p
                && p.getServerErrorMessage() != null
                && p.getServerErrorMessage().getMessage() != null) {
            return p.getServerErrorMessage().getMessage();
        }
        return String.valueOf(e.getMessage());
    }

    /** The first SQLSTATE of the cause chain (suppressed exceptions aside), or null when none has one. */
    public static @Nullable String state(Throwable t) {
        String[] found = {null};
        anyException(t, s -> (found[0] = s.getSQLState()) != null);
        return found[0];
    }

    /** Whether the cause chain (suppressed exceptions aside) holds an SQLException with {@code state}. */
    public static boolean has(Throwable t, String state) {
        return any(t, state::equals);
    }

    private static boolean any(Throwable t, java.util.function.Predicate<String> stateMatches) {
        return anyException(t, s -> s.getSQLState() != null && stateMatches.test(s.getSQLState()));
    }

    /** Whether an SQLException of the cause chain, or one chained behind it as its next exception, matches. */
    @SuppressWarnings("ReferenceEquality") // identity on purpose: an exception chained behind itself would loop
    private static boolean anyException(Throwable t, java.util.function.Predicate<SQLException> matches) {
        IdentityHashMap<Throwable, Boolean> seen = new IdentityHashMap<>();
        for (Throwable c = t; c != null && seen.put(c, Boolean.TRUE) == null; c = c.getCause()) {
            if (c instanceof SQLException sql) {
                for (SQLException s = sql; s != null; s = s.getNextException()) {
                    if (matches.test(s)) {
                        return true;
                    }
                    if (s.getNextException() == s) {
                        break;
                    }
                }
            }
        }
        return false;
    }
}
