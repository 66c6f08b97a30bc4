package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

class SqlStatesTest {

    private static PSQLException server(String severity, String state, String message, String where) {
        StringBuilder fields = new StringBuilder().append('S').append(severity).append('\0')
                .append('C').append(state).append('\0').append('M').append(message).append('\0');
        if (where != null) {
            fields.append('W').append(where).append('\0');
        }
        return new PSQLException(new ServerErrorMessage(fields.toString()));
    }

    @Test
    void aFatalErrorIsALostConnectionWhateverItsState() {
        // PgBouncer's answer when a server connection died while it set it up
        PSQLException bouncer = server("FATAL", "08P01", "invalid server parameter", null);
        assertThat(SqlStates.isConnectionLoss(new DataAccessException("wrapped", bouncer))).isTrue();
        assertThat(SqlStates.isConnectionLoss(server("FATAL", "XX000", "anything", null))).isTrue();
        assertThat(SqlStates.isConnectionLoss(server("ERROR", "23505", "duplicate key", null))).isFalse();
    }

    @Test
    void onlyAWaitOnTheClaimRowsIndexEntryIsAHoldersTimeout() {
        assertThat(SqlStates.isWaitOnClaimRow(server("ERROR", "55P03", "canceling statement due to lock timeout",
                "while inserting index tuple (0,3) in relation \"idempotency_claim\""))).isTrue();
        assertThat(SqlStates.isWaitOnClaimRow(server("ERROR", "57014", "canceling statement due to statement timeout",
                "while inserting index tuple (0,3) in relation \"idempotency_claim\""))).isTrue();
        assertThat(SqlStates.isWaitOnClaimRow(server("ERROR", "55P03", "canceling statement due to lock timeout",
                "while locking tuple (0,1) in relation \"parent\"\nSQL statement \"SELECT 1 FROM ONLY \"public\".\"parent\""
                        + " x WHERE \"id\" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x\""))).isFalse();
        assertThat(SqlStates.isWaitOnClaimRow(server("ERROR", "57014", "canceling statement due to user request",
                "while inserting index tuple (0,3) in relation \"idempotency_claim\""))).isFalse();
        assertThat(SqlStates.isWaitOnClaimRow(new SQLException("no server message", "55P03"))).isFalse();
    }
}
