package io.github.idemtx.spring.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.sql.SQLException;
import java.util.Map;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * How the endpoint answers an action the database did not complete: a failure is {@code unavailable};
 * a COMMIT of unknown outcome is {@code outcome_unknown}, which says the action may have been recorded. The actions themselves are in IdempotencyEndpointTest.
 */
class IdempotencyEndpointAnswerTest {

    @Test
    void aFailureOfTheDatabaseIsUnavailable() {
        WebEndpointResponse<Map<String, Object>> response = IdempotencyEndpoint.answer(() -> {
            throw new DataAccessException("statement timeout", new SQLException("canceling statement", "57014"));
        });
        assertThat(response.getStatus()).isEqualTo(503);
        assertThat(response.getBody())
                .containsEntry("error", "unavailable")
                .hasEntrySatisfying(
                        "message",
                        m -> assertThat((String) m)
                                .contains("DataAccessException")
                                .contains("look the claim up"));
    }

    @Test
    void aCommitLostInFlightIsAnUnknownOutcomeNotNothingRecorded() {
        WebEndpointResponse<Map<String, Object>> response = IdempotencyEndpoint.answer(() -> {
            throw new CommitOutcomeUnknownException(
                    Scope.of("payouts"), IdempotencyKey.of("k-1"), new SQLException("I/O error", "08006"));
        });
        assertThat(response.getStatus()).isEqualTo(503);
        assertThat(response.getBody())
                .containsEntry("error", "outcome_unknown")
                .hasEntrySatisfying(
                        "message",
                        m -> assertThat((String) m)
                                .contains("may have been recorded")
                                .contains("look the claim up")
                                .doesNotContain("nothing was recorded"));
    }
}
