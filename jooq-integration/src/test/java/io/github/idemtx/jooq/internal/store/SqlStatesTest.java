package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.sql.SQLException;
import java.sql.SQLWarning;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;
import org.postgresql.util.PSQLWarning;
import org.postgresql.util.ServerErrorMessage;

class SqlStatesTest {

    /** A server message's fields as the protocol carries them; {@code extra} holds e.g. {@code 'W'} or {@code 'R'}. */
    private static ServerErrorMessage message(String severity, String state, String text, char extra, String value) {
        StringBuilder fields = new StringBuilder();
        fields.append('S').append(severity).append('\0');
        fields.append('C').append(state).append('\0');
        fields.append('M').append(text).append('\0');
        if (value != null) {
            fields.append(extra).append(value).append('\0');
        }
        return new ServerErrorMessage(fields.toString());
    }

    private static PSQLException server(String severity, String state, String message, String where) {
        return new PSQLException(message(severity, state, message, 'W', where));
    }

    @Test
    void aFatalErrorIsALostConnectionWhateverItsState() {
        // PgBouncer's answer when a server connection died while it set it up
        PSQLException bouncer = server("FATAL", "08P01", "invalid server parameter", null);
        assertThat(SqlStates.isConnectionLoss(new DataAccessException("wrapped", bouncer)))
                .isTrue();
        assertThat(SqlStates.isConnectionLoss(server("FATAL", "XX000", "anything", null)))
                .isTrue();
        assertThat(SqlStates.isConnectionLoss(server("ERROR", "23505", "duplicate key", null)))
                .isFalse();
    }

    @Test
    void onlyAWaitOnTheClaimRowsIndexEntryIsAHoldersTimeout() {
        assertThat(SqlStates.isWaitOnClaimRow(server(
                        "ERROR",
                        "55P03",
                        "canceling statement due to lock timeout",
                        "while inserting index tuple (0,3) in relation \"idempotency_claim\"")))
                .isTrue();
        assertThat(SqlStates.isWaitOnClaimRow(server(
                        "ERROR",
                        "57014",
                        "canceling statement due to statement timeout",
                        "while inserting index tuple (0,3) in relation \"idempotency_claim\"")))
                .isTrue();
        assertThat(SqlStates.isWaitOnClaimRow(server(
                        "ERROR",
                        "55P03",
                        "canceling statement due to lock timeout",
                        "while locking tuple (0,1) in relation \"parent\"\nSQL statement \"SELECT 1 FROM ONLY \"public\".\"parent\""
                                + " x WHERE \"id\" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x\"")))
                .isFalse();
        assertThat(SqlStates.isWaitOnClaimRow(server(
                        "ERROR",
                        "57014",
                        "canceling statement due to user request",
                        "while inserting index tuple (0,3) in relation \"idempotency_claim\"")))
                .isFalse();
        assertThat(SqlStates.isWaitOnClaimRow(new SQLException("no server message", "55P03")))
                .isFalse();
    }

    @Test
    void aLockWaitCutByTheSessionsBoundIsFoundWhereverItIsWrapped() {
        PSQLException lockTimeout = server(
                "ERROR",
                "55P03",
                "canceling statement due to lock timeout",
                "while inserting index tuple (2,113) in relation \"counter\"");
        assertThat(SqlStates.isLockWaitCut(new DataAccessException("wrapped", lockTimeout)))
                .isTrue();
        assertThat(SqlStates.isLockWaitCut(server(
                        "ERROR",
                        "57014",
                        "canceling statement due to statement timeout",
                        "while locking tuple (0,1) in relation \"account\"")))
                .isTrue();
        assertThat(SqlStates.isLockWaitCut(
                        server("ERROR", "57014", "canceling statement due to statement timeout", null)))
                .as("a slow statement, no row waited on")
                .isFalse();
        assertThat(SqlStates.isLockWaitCut(server(
                        "ERROR",
                        "57014",
                        "canceling statement due to statement timeout",
                        "PL/pgSQL function f() line 3 at SQL statement")))
                .isFalse();
        assertThat(SqlStates.isLockWaitCut(server(
                        "ERROR",
                        "57014",
                        "canceling statement due to user request",
                        "while locking tuple (0,1) in relation \"account\"")))
                .as("a cancel is not the session's bound")
                .isFalse();
        assertThat(SqlStates.isLockWaitCut(new SQLException("statement timeout", "57014")))
                .as("no server message: nothing says a row was waited on")
                .isFalse();
        assertThat(SqlStates.isLockWaitCut(server("ERROR", "23505", "duplicate key", null)))
                .isFalse();
        assertThat(SqlStates.isLockWaitCut(new IllegalStateException("no SQL at all")))
                .isFalse();
    }

    @Test
    void onlyAStatementsOwnCardinalityErrorIsItsRefusal() {
        assertThat(SqlStates.isRefusedByStatement(server(
                        "ERROR", "21000", "more than one row returned by a subquery used as an expression", null)))
                .isTrue();
        assertThat(SqlStates.isRefusedByStatement(new SQLException("no server message", "21000")))
                .isTrue();
        assertThat(SqlStates.isRefusedByStatement(server(
                        "ERROR",
                        "21000",
                        "more than one row returned by a subquery used as an expression",
                        "PL/pgSQL function check_it() line 3 at SQL statement")))
                .as("a deferred trigger's own error at COMMIT")
                .isFalse();
        assertThat(SqlStates.isRefusedByStatement(server("ERROR", "23505", "duplicate key", null)))
                .isFalse();
        assertThat(SqlStates.isRefusedByStatement(new SQLException("no server message", "55P03")))
                .isFalse();
        PSQLException noMessage = new PSQLException("client side", org.postgresql.util.PSQLState.UNKNOWN_STATE) {
            private static final long serialVersionUID = 1L;

            @Override
            public String getSQLState() {
                return "21000";
            }
        };
        assertThat(SqlStates.isRefusedByStatement(noMessage)).isTrue();
    }

    @Test
    void aRetryableFailureIsFoundHoweverDeepItIsWrappedOrChained() {
        SQLException serialization = new SQLException("could not serialize", "40001");
        assertThat(SqlStates.isRetryable(new DataAccessException("wrapped", new RuntimeException(serialization))))
                .isTrue();
        assertThat(SqlStates.isRetryable(new SQLException("deadlock detected", "40P01")))
                .isTrue();
        SQLException batch = new SQLException("batch failed", "22000");
        batch.setNextException(new SQLException("deadlock detected", "40P01"));
        assertThat(SqlStates.isRetryable(batch)).as("the next exception counts").isTrue();
        assertThat(SqlStates.isRetryable(new SQLException("duplicate key", "23505")))
                .isFalse();
        assertThat(SqlStates.isRetryable(new SQLException("no state"))).isFalse();
        assertThat(SqlStates.isRetryable(new IllegalStateException("no SQL at all")))
                .isFalse();
        assertThat(SqlStates.has(
                        new DataAccessException("x", new SQLException("y", "23505")), SqlStates.UNIQUE_VIOLATION))
                .isTrue();
        assertThat(SqlStates.has(new SQLException("y", "23505"), SqlStates.LOCK_NOT_AVAILABLE))
                .isFalse();
    }

    @Test
    void aCauseChainThatLoopsEndsTheSearch() {
        SQLException self = new SQLException("loops", "22000");
        self.setNextException(self);
        RuntimeException a = new RuntimeException("a");
        RuntimeException b = new RuntimeException("b", a);
        a.initCause(b);
        assertThat(SqlStates.isRetryable(self)).isFalse();
        assertThat(SqlStates.isRetryable(a)).isFalse();
    }

    @Test
    void theConnectionIsLostOnClass08AndTheServersShutdownStatesOnly() {
        for (String state : new String[] {"08000", "08003", "08006", "08P01", "57P01", "57P02", "57P03"}) {
            assertThat(SqlStates.isConnectionLossState(state)).as(state).isTrue();
            assertThat(SqlStates.isConnectionLoss(new SQLException("gone", state)))
                    .as(state)
                    .isTrue();
        }
        for (String state : new String[] {"57014", "57P04", "40001", "23505", "58P01"}) {
            assertThat(SqlStates.isConnectionLossState(state)).as(state).isFalse();
        }
        assertThat(SqlStates.isConnectionLossState(null)).isFalse();
        assertThat(SqlStates.isConnectionLoss(new SQLException("no state"))).isFalse();
    }

    @Test
    void aStatementTimeoutIsToldApartFromACancelRequest() {
        assertThat(SqlStates.isStatementTimeout(
                        new SQLException("canceling statement due to statement timeout", "57014")))
                .isTrue();
        assertThat(SqlStates.isStatementTimeout(new SQLException("canceling statement due to user request", "57014")))
                .isFalse();
        assertThat(SqlStates.isStatementTimeout(new SQLException("statement timeout", "55P03")))
                .isFalse();
    }

    private static PSQLWarning warning(String state, String message, String routine) {
        return new PSQLWarning(message("WARNING", state, message, 'R', routine));
    }

    @Test
    void aCommitTheSynchronousStandbyNeverConfirmedIsReportedAsResolutionUnknown() throws Exception {
        SqlStates.requireReplicated(null);
        SqlStates.requireReplicated(warning("01000", "a trigger's own warning", "exec_stmt_raise"));
        SqlStates.requireReplicated(new SQLWarning("a client-side warning", "01000"));
        // recognised by the routine in any language, else by the English message
        PSQLWarning german = warning("01000", "breche Warten auf synchrone Replikation ab", "SyncRepWaitForLSN");
        SQLWarning english = new SQLWarning("canceling wait for synchronous replication due to user request", "01000");
        SQLWarning chain = new SQLWarning("first, unrelated", "01000");
        chain.setNextWarning(warning("01000", "x", "SyncRepWaitForLSN"));
        for (SQLWarning w : new SQLWarning[] {german, english, chain}) {
            assertThatThrownBy(() -> SqlStates.requireReplicated(w))
                    .isInstanceOfSatisfying(SQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo(SqlStates.RESOLUTION_UNKNOWN);
                        assertThat(SqlStates.isConnectionLoss(e)).isTrue();
                    })
                    .hasMessageContaining("before the synchronous standby confirmed it");
        }
        // a routine that is not the wait's decides, whatever the message says
        SqlStates.requireReplicated(
                warning("01000", "canceling wait for synchronous replication", "some_other_routine"));
        SqlStates.requireReplicated(
                new SQLWarning("canceling wait for synchronous replication due to user request", "01001"));
    }

    @Test
    void aCommitNotReplicatedAndACommitLostInFlightAreBothUnknownEachSayingWhy() {
        Scope scope = Scope.of("tenant");
        IdempotencyKey key = IdempotencyKey.of("k-1");
        SQLException refused = catchThrowableOfType(
                SQLException.class,
                () -> SqlStates.requireReplicated(warning("01000", "canceling wait", "SyncRepWaitForLSN")));
        DataAccessException unreplicated = new DataAccessException("commit failed", refused);
        DataAccessException lost = new DataAccessException("commit failed", new SQLException("I/O error", "08006"));
        // a driver's or a failover wrapper's own 08007 (nothing committed) is not the library's finding
        DataAccessException foreign = new DataAccessException(
                "failover", new SQLException("transaction resolution unknown", SqlStates.RESOLUTION_UNKNOWN));
        assertThat(SqlStates.isUnreplicatedCommit(unreplicated)).isTrue();
        assertThat(SqlStates.isUnreplicatedCommit(foreign)).isFalse();
        assertThat(SqlStates.isUnreplicatedCommit(lost)).isFalse();
        assertThat(SqlStates.commitUnknown(scope, key, foreign))
                .hasMessageContaining("the connection was lost while the commit was in flight");

        CommitOutcomeUnknownException notConfirmed = SqlStates.commitUnknown(scope, key, unreplicated);
        CommitOutcomeUnknownException inFlight = SqlStates.commitUnknown(scope, key, lost);

        assertThat(notConfirmed)
                .hasMessageContaining("before the synchronous standby confirmed it")
                .hasMessageContaining("retry with the same key")
                .hasCause(unreplicated);
        assertThat(notConfirmed.scope()).isEqualTo(scope);
        assertThat(notConfirmed.key()).isEqualTo(key);
        assertThat(inFlight)
                .hasMessageContaining("the connection was lost while the commit was in flight")
                .hasCause(lost);
    }

    @Test
    void theStateIsTheFirstOfTheChainThatHasOne() {
        SQLException closed = new SQLException("Connection is closed"); // HikariCP's, with no SQLSTATE
        assertThat(SqlStates.state(new DataAccessException("recording failed", closed)))
                .isNull();
        SQLException next = new SQLException("duplicate key", "23505");
        next.setNextException(new SQLException("terminating connection", "57P01"));
        assertThat(SqlStates.state(new DataAccessException("failed", new SQLException("wrapper", null, next))))
                .isEqualTo("23505");
        assertThat(SqlStates.state(new SQLException("This connection has been closed.", "08003")))
                .isEqualTo("08003");
    }

    @Test
    void onlyAFailureInDoubtBecomesTheKeysUnknownOutcome() {
        Scope scope = Scope.of("s");
        IdempotencyKey key = IdempotencyKey.of("k");
        DataAccessException lost = new DataAccessException(
                "commit failed", SqlStates.inCommit(new SQLException("An I/O error occurred", "08006")));
        assertThat(SqlStates.commitUnknownOr(scope, key, lost))
                .isInstanceOfSatisfying(
                        CommitOutcomeUnknownException.class,
                        e -> assertThat(e.key()).isEqualTo(key))
                .hasCause(lost);
        DataAccessException failed = new DataAccessException("failed", new SQLException("duplicate key", "23505"));
        assertThat(SqlStates.commitUnknownOr(scope, key, failed)).isSameAs(failed);
    }

    @Test
    void aPanicOrALossBehindAWrapperWithoutStateIsInDoubtAClosedConnectionWithoutStateIsNot() {
        // the server crashing on its way through the COMMIT: recovery may keep it
        PSQLException panic = server("PANIC", "XX000", "could not write to file", null);
        assertThat(SqlStates.isConnectionLoss(panic)).isTrue();
        assertThat(SqlStates.isCommitInDoubt(SqlStates.inCommit(panic))).isTrue();
        SQLException failedThenPanic = new SQLException("cannot abort, already committed", "XX000", panic);
        assertThat(SqlStates.isCommitInDoubt(SqlStates.inCommit(failedThenPanic)))
                .isTrue();
        // the same PANIC from a server whose lc_messages is German: its severity's text is
        // translated, its SQLSTATE is not; the driver then meets the closed socket
        PSQLException panik = server("PANIK", "58030", "konnte nicht in Datei schreiben", null);
        panik.setNextException(new SQLException("An I/O error occurred while sending to the backend", "08006"));
        assertThat(SqlStates.isCommitInDoubt(SqlStates.inCommit(panik))).isTrue();
        // an internal error, then the loss: in doubt too (a retry replays or runs once either way)
        SQLException internal = server("ERROR", "XX000", "cannot abort, already committed", null);
        internal.setNextException(new SQLException("An I/O error occurred while sending to the backend", "08006"));
        assertThat(SqlStates.isCommitInDoubt(SqlStates.inCommit(internal))).isTrue();
        // what a failed WAL write reports for its errno: no space left, too many open files, a
        // read-only file system; each then followed by the loss
        for (String state : new String[] {"53100", "53000", "42501", "58P01"}) {
            SQLException walWrite = server("PANIK", state, "konnte nicht in Logdatei schreiben", null);
            walWrite.setNextException(new SQLException("An I/O error occurred while sending to the backend", "08006"));
            assertThat(SqlStates.isCommitInDoubt(SqlStates.inCommit(walWrite)))
                    .as(state)
                    .isTrue();
        }
        // an ordinary error of another state, then the loss: the server failed the statement first
        SQLException refused = server("FEHLER", "42601", "Syntaxfehler", null);
        refused.setNextException(new SQLException("An I/O error occurred while sending to the backend", "08006"));
        assertThat((Throwable) SqlStates.inCommit(refused)).isSameAs(refused);
        // a system error without the loss: the server answered, the connection lives, nothing committed
        SQLException answered = server("ERROR", "58030", "could not read block", null);
        assertThat((Throwable) SqlStates.inCommit(answered)).isSameAs(answered);
        // a proxy's wrapper that carries no SQLSTATE passes the driver's on
        SQLException io = new SQLException("An I/O error occurred while sending to the backend", "08006");
        assertThat(SqlStates.isCommitInDoubt(SqlStates.inCommit(new SQLException("proxy", null, io))))
                .isTrue();
        // an ordinary ERROR first, then the FATAL: the server failed it, nothing committed
        SQLException failedFirst = server("ERROR", "23505", "duplicate key", null);
        failedFirst.setNextException(server("FATAL", "57P01", "terminating connection", null));
        assertThat(SqlStates.isConnectionLoss(failedFirst)).isTrue();
        assertThat((Throwable) SqlStates.inCommit(failedFirst)).isSameAs(failedFirst);
        // HikariCP's closed connection: no SQLSTATE, nothing sent, not a loss it can tell
        SQLException closed = new SQLException("Connection is closed");
        assertThat((Throwable) SqlStates.inCommit(closed)).isSameAs(closed);
    }

    @Test
    void onlyAConnectionLostWithACommitInFlightIsMarkedInDoubt() throws Exception {
        SQLException io = new SQLException("An I/O error occurred while sending to the backend", "08006");
        SQLException terminated = new SQLException("terminating connection due to administrator command", "57P01");
        SQLException marked = SqlStates.inCommit(io);
        assertThat((Throwable) marked)
                .isNotSameAs(io)
                .hasCause(io)
                .hasMessageContaining("while a COMMIT was in flight")
                .hasMessageContaining("An I/O error occurred");
        assertThat(marked.getSQLState()).isEqualTo(SqlStates.RESOLUTION_UNKNOWN);
        assertThat(SqlStates.isConnectionLoss(marked)).isTrue();
        assertThat((Throwable) SqlStates.inCommit(terminated)).hasCause(terminated);
        // marked once: what is marked, or committed on the primary only, stays as it is
        assertThat((Throwable) SqlStates.inCommit(marked)).isSameAs(marked);
        SQLException unreplicated = catchThrowableOfType(
                SQLException.class,
                () -> SqlStates.requireReplicated(warning("01000", "canceling wait", "SyncRepWaitForLSN")));
        assertThat((Throwable) SqlStates.inCommit(unreplicated)).isSameAs(unreplicated);
        // the server failed the statement (its error came first, then the connection went): nothing committed
        SQLException failedFirst = new SQLException("duplicate key", "23505", io);
        assertThat((Throwable) SqlStates.inCommit(failedFirst)).isSameAs(failedFirst);
        // the driver found the connection closed before it sent the COMMIT
        SQLException closed = new SQLException("This connection has been closed.", "08003");
        assertThat((Throwable) SqlStates.inCommit(closed)).isSameAs(closed);
        SQLException notLost = new SQLException("deadlock detected", "40P01");
        assertThat((Throwable) SqlStates.inCommit(notLost)).isSameAs(notLost);

        DataAccessException wrapped = new DataAccessException("the external effect's statement failed", marked);
        assertThat(SqlStates.isLostInCommit(wrapped)).isTrue();
        assertThat(SqlStates.isCommitInDoubt(wrapped)).isTrue();
        assertThat(SqlStates.isUnreplicatedCommit(wrapped)).isFalse();
        assertThat(SqlStates.isCommitInDoubt(new DataAccessException("commit failed", unreplicated)))
                .isTrue();
        assertThat(SqlStates.isLostInCommit(unreplicated)).isFalse();
        // a connection lost outside a COMMIT, and a driver's own 08007, are not in doubt
        assertThat(SqlStates.isCommitInDoubt(new DataAccessException("read failed", io)))
                .isFalse();
        assertThat(SqlStates.isCommitInDoubt(
                        new SQLException("transaction resolution unknown", SqlStates.RESOLUTION_UNKNOWN)))
                .isFalse();
        assertThat(SqlStates.commitUnknown(Scope.of("t"), IdempotencyKey.of("k"), wrapped))
                .hasMessageContaining("the connection was lost while the commit was in flight");
    }

    @Test
    void aRowWithNoPartitionIsNamedAsSuchOtherCheckViolationsAreNot() {
        PSQLException noPartition =
                server("ERROR", "23514", "no partition of relation \"idempotency_claim\" found for row", null);
        assertThat(SqlStates.isNoPartition(noPartition)).isTrue();
        assertThat(SqlStates.isNoPartition(server("ERROR", "23514", "new row violates check constraint", null)))
                .isFalse();
        assertThat(SqlStates.isNoPartition(server("ERROR", "23505", "no partition of relation x", null)))
                .isFalse();
        // the server's routine decides where it is given, in any language
        assertThat(SqlStates.isNoPartition(new PSQLException(
                        message("ERROR", "23514", "keine Partition von Relation gefunden", 'R', "ExecFindPartition"))))
                .isTrue();
        assertThat(SqlStates.isNoPartition(new PSQLException(
                        message("ERROR", "23514", "no partition of relation x", 'R', "ExecConstraints"))))
                .isFalse();
        RuntimeException named = SqlStates.storeFailure("the claim failed", noPartition, "billing");
        assertThat(named)
                .isInstanceOf(DataAccessException.class)
                .hasMessageContaining("billing.idempotency_claim is partitioned and has no partition for this key")
                .hasMessageContaining("no partition of relation \"idempotency_claim\" found for row")
                .hasMessageContaining("ClaimPartitions.createAhead")
                .hasCause(noPartition);
        assertThat(SqlStates.storeFailure(
                        "the claim failed", server("ERROR", "23514", "violates check", null), "billing"))
                .hasMessage("the claim failed (SQLSTATE 23514)");
    }

    @Test
    void aMissingTableColumnFunctionOrSchemaMeansTheClaimTableIsNotMigrated() {
        for (String state : new String[] {"42P01", "42703", "42883", "3F000"}) {
            assertThat(SqlStates.isNotMigrated(new SQLException("missing", state)))
                    .as(state)
                    .isTrue();
        }
        assertThat(SqlStates.isNotMigrated(new SQLException("syntax", "42601"))).isFalse();
        assertThat(SqlStates.isNotMigrated(new SQLException("no state"))).isFalse();

        RuntimeException missing = SqlStates.storeFailure(
                "the claim failed",
                server("ERROR", "42P01", "relation \"billing.idempotency_claim\" does not exist", null),
                "billing");
        assertThat(missing)
                .isInstanceOf(io.github.idemtx.core.UnsupportedDatabaseException.class)
                .hasMessageContaining("the claim table billing.idempotency_claim is missing or older")
                .hasMessageContaining("(SQLSTATE 42P01: relation \"billing.idempotency_claim\" does not exist)")
                .hasMessageContaining("IdempotencySchema.migrate(dataSource, \"billing\")");
        RuntimeException noServerMessage =
                SqlStates.storeFailure("the claim failed", new SQLException("driver words", "42703"), "billing");
        assertThat(noServerMessage).hasMessageContaining("(SQLSTATE 42703: driver words)");

        RuntimeException other =
                SqlStates.storeFailure("the claim failed", new SQLException("full", "53100"), "billing");
        assertThat(other)
                .isExactlyInstanceOf(DataAccessException.class)
                .hasMessageStartingWith("the claim failed (SQLSTATE 53100)");
    }
}
