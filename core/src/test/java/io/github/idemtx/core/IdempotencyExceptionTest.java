package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;

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
}
