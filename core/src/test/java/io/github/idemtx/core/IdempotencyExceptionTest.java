package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.io.IOException;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

class IdempotencyExceptionTest {

    private static final Scope SCOPE = Scope.of("tenant-1");
    private static final IdempotencyKey KEY = IdempotencyKey.of("order-42");

    @Test
    void carriesScopeKeyAndCauseAndNamesThemInTheMessage() {
        IOException cause = new IOException("io");

        IdempotencyException exception = new IdempotencyException(SCOPE, KEY, "stored result is unreadable", cause);

        assertThat(exception)
                .isInstanceOf(RuntimeException.class)
                .hasMessage("stored result is unreadable (scope 'tenant-1', key 'order-42')")
                .hasCause(cause);
        assertThat(exception.scope()).isEqualTo(SCOPE);
        assertThat(exception.key()).isEqualTo(KEY);
    }

    @Test
    void resultTooLargeReportsSizeAndLimit() {
        ResultTooLargeException exception = new ResultTooLargeException(SCOPE, KEY, 2048, 1024);

        assertThat(exception).isInstanceOf(IdempotencyException.class).hasNoCause();
        assertThat(exception.size()).isEqualTo(2048);
        assertThat(exception.limit()).isEqualTo(1024);
        assertThat(exception.getMessage()).contains("2048", "1024", "maxResultBytes", "tenant-1", "order-42");
    }

    @Test
    void retriesExhaustedReportsAttemptsAndKeepsTheLastFailure() {
        SQLException last = new SQLException("could not serialize access", "40001");

        RetriesExhaustedException exception = new RetriesExhaustedException(SCOPE, KEY, 5, last);

        assertThat(exception).isInstanceOf(IdempotencyException.class).hasCause(last);
        assertThat(exception.attempts()).isEqualTo(5);
        assertThat(exception.getMessage()).contains("5 attempts", "maxAttempts", "tenant-1", "order-42");
    }

    @Test
    void workFailedWrapsTheCheckedCause() {
        IOException cause = new IOException("disk full");

        WorkFailedException exception = new WorkFailedException(SCOPE, KEY, cause);

        assertThat(exception).isInstanceOf(IdempotencyException.class).hasCause(cause);
        assertThat(exception.getMessage()).contains("disk full", "tenant-1", "order-42");
        assertThat(exception.scope()).isEqualTo(SCOPE);
        assertThat(exception.key()).isEqualTo(KEY);
    }

    @Test
    void anOperationThatIsNotOneCallHasNoScopeOrKeyInItsMessage() {
        IdempotencyException exception = new IdempotencyException(null, null, "purge failed", null);

        assertThat(exception).hasMessage("purge failed").hasNoCause();
        assertThat(exception.scope()).isNull();
        assertThat(exception.key()).isNull();
    }

    @Test
    void unsupportedDatabaseNamesTheProblemAndKeepsTheMessageAsWritten() {
        SQLException cause = new SQLException("relation \"idempotency_claim\" does not exist", "42P01");

        UnsupportedDatabaseException exception = new UnsupportedDatabaseException(
                UnsupportedDatabaseException.Problem.NOT_MIGRATED, "apply the migrations to schema app", cause);

        assertThat(exception)
                .isInstanceOf(IdempotencyException.class)
                .hasMessage("apply the migrations to schema app")
                .hasCause(cause);
        assertThat(exception.problem()).isEqualTo(UnsupportedDatabaseException.Problem.NOT_MIGRATED);
        assertThat(exception.scope()).isNull();
        assertThat(exception.key()).isNull();
        assertThatNullPointerException()
                .isThrownBy(() -> new UnsupportedDatabaseException(null, "m", null))
                .withMessage("problem must not be null");
    }

    @Test
    void workEndedTransactionRefusedInTimeSaysNothingWasCommitted() {
        WorkEndedTransactionException exception =
                new WorkEndedTransactionException(SCOPE, KEY, "Connection.commit()", false, null);

        assertThat(exception).isInstanceOf(IdempotencyException.class);
        assertThat(exception.attempted()).isEqualTo("Connection.commit()");
        assertThat(exception.committedByWork()).isFalse();
        assertThat(exception.getMessage())
                .startsWith("the work must not end the transaction that holds the idempotency claim, but it called"
                        + " Connection.commit(): refused before it reached the database; nothing was committed and the"
                        + " key is free. Let the library commit, and write only through tx")
                .endsWith("(scope 'tenant-1', key 'order-42')")
                .doesNotContain("may have committed");
    }

    @Test
    void workEndedTransactionThatDidEndSaysTheWorksWritesMayHaveCommitted() {
        SQLException shown = new SQLException("there is no transaction in progress", "25P01");

        WorkEndedTransactionException exception =
                new WorkEndedTransactionException(SCOPE, KEY, "the statement 'commit'", true, shown);

        assertThat(exception).hasCause(shown);
        assertThat(exception.attempted()).isEqualTo("the statement 'commit'");
        assertThat(exception.committedByWork()).isTrue();
        assertThat(exception.getMessage())
                .contains("it called the statement 'commit': that ended the transaction, so what the work wrote before"
                        + " it may have committed without any claim")
                .doesNotContain("the key is free");
    }
}
