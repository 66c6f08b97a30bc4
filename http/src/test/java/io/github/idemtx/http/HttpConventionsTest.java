package io.github.idemtx.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HttpConventionsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final StoredResponse created = new StoredResponse(
            201,
            List.of(
                    new StoredResponse.Header("Content-Type", "application/json"),
                    new StoredResponse.Header("Location", "/transfers/42"),
                    new StoredResponse.Header("ETag", "\"v1\""),
                    new StoredResponse.Header("Date", "Mon, 30 Nov 2026 20:00:00 GMT"),
                    new StoredResponse.Header("X-Request-Id", "req-123"),
                    new StoredResponse.Header("traceparent", "00-abc-def-01"),
                    new StoredResponse.Header("Set-Cookie", "session=secret")),
            "{\"id\":\"42\"}".getBytes(UTF_8));

    @Test
    void storesStatusBodyAndOnlyTheAllowedHeaders() {
        StoredResponse replayed = StoredResponseCodec.defaults()
                .decode(StoredResponseCodec.defaults().encode(created));

        assertThat(replayed.status()).isEqualTo(201);
        assertThat(replayed.bodyText()).isEqualTo("{\"id\":\"42\"}");
        assertThat(replayed.headers())
                .extracting(StoredResponse.Header::name)
                .containsExactly("Content-Type", "Location", "ETag");
    }

    @Test
    void anAllowListCanGrowButNeverTakeAPerRequestHeader() {
        StoredResponseCodec codec = StoredResponseCodec.defaults().allowing("X-Ledger-Balance");
        StoredResponse response = created.withHeader("X-Ledger-Balance", "10.00");
        assertThat(codec.decode(codec.encode(response)).header("x-ledger-balance"))
                .contains("10.00");

        for (String header : List.of("Date", "Set-Cookie", "X-Request-Id", "traceparent", "Content-Length")) {
            assertThatThrownBy(() -> StoredResponseCodec.defaults().allowing(header))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("never replayed");
        }
    }

    @Test
    void roundTripsAnEmptyBodyAndNonAsciiHeaderValues() {
        StoredResponse noContent = new StoredResponse(
                204, List.of(new StoredResponse.Header("Content-Language", "pt-BR, é")), new byte[0]);
        assertThat(StoredResponseCodec.defaults()
                        .decode(StoredResponseCodec.defaults().encode(noContent)))
                .isEqualTo(noContent);
    }

    @Test
    void refusesATruncatedOrForeignStoredForm() {
        byte[] stored = StoredResponseCodec.defaults().encode(created);
        assertThatThrownBy(() -> StoredResponseCodec.defaults().decode(java.util.Arrays.copyOf(stored, 6)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("truncated");
        assertThatThrownBy(() -> StoredResponseCodec.defaults().decode(new byte[] {9, 0, 0}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("version");
    }

    @Test
    void refusesInvalidStatusesAndHeaders() {
        assertThatThrownBy(() -> StoredResponse.of(99, "text/plain", "x")).hasMessageContaining("status");
        assertThatThrownBy(() -> StoredResponse.of(600, "text/plain", "x")).hasMessageContaining("status");
        assertThatThrownBy(() -> new StoredResponse.Header("Bad Name", "v")).hasMessageContaining("token");
        assertThatThrownBy(() -> new StoredResponse.Header("X", "a\r\nInjected: yes"))
                .hasMessageContaining("CR, LF");
    }

    @Test
    void isImmutableAndComparesByValue() {
        byte[] body = "abc".getBytes(UTF_8);
        StoredResponse r = StoredResponse.of(200, "text/plain", body);
        body[0] = 'X';
        r.body()[1] = 'Y';
        assertThat(r.bodyText()).isEqualTo("abc");
        assertThat(r)
                .isEqualTo(StoredResponse.of(200, "text/plain", "abc"))
                .hasSameHashCodeAs(StoredResponse.of(200, "text/plain", "abc"));
    }

    @Test
    void writesProblemDetailsAsValidProblemJson() throws Exception {
        Problem problem = Problem.invalidKey(new InvalidIdempotencyKeyException(
                InvalidIdempotencyKeyException.Reason.TOO_LONG, "the key must be at most 255 characters, was \"300\""));
        StoredResponse response = problem.toResponse();

        assertThat(response.status()).isEqualTo(400);
        assertThat(response.header("Content-Type")).contains("application/problem+json");
        JsonNode json = JSON.readTree(response.body());
        assertThat(json.get("type").asText()).isEqualTo("urn:idemtx:problem:invalid-idempotency-key");
        assertThat(json.get("status").asInt()).isEqualTo(400);
        assertThat(json.get("reason").asText()).isEqualTo("TOO_LONG");
        assertThat(json.get("detail").asText()).contains("\"300\"");
    }

    @Test
    void hasAProblemForEachIdempotencyAnswer() throws Exception {
        assertThat(Problem.unauthenticated().status()).isEqualTo(401);
        assertThat(Problem.inProgress(Duration.ofMillis(1500)).status()).isEqualTo(409);
        assertThat(Problem.keyReused().status()).isEqualTo(422);
        Problem rejected = Problem.rejected(Failure.of("insufficient_funds", "balance 5.00 < 10.00"));
        assertThat(rejected.status()).isEqualTo(422);
        assertThat(JSON.readTree(rejected.toJson()).get("code").asText()).isEqualTo("insufficient_funds");
    }

    @Test
    void roundsRetryAfterUpToWholeSecondsAndAtLeastOne() {
        assertThat(Problem.retryAfterSeconds(Duration.ZERO)).isEqualTo(1);
        assertThat(Problem.retryAfterSeconds(Duration.ofMillis(1500))).isEqualTo(2);
        assertThat(Problem.retryAfterSeconds(Duration.ofSeconds(3))).isEqualTo(3);
    }

    @Test
    void refusesProblemsThatWouldBeInvalid() {
        assertThatThrownBy(() -> new Problem("t", "x", 200, "d", Map.of())).hasMessageContaining("400 and 599");
        assertThatThrownBy(() -> new Problem("t", "x", 400, "d", Map.of("status", 1)))
                .hasMessageContaining("shadow");
        assertThatThrownBy(() -> new Problem("t", "x", 400, "d", Map.of("o", new Object())))
                .hasMessageContaining("string, number or boolean");
    }

    @Test
    void mapsEveryOutcomeToTheResponseTheDraftDescribes() throws Exception {
        Instant then = Instant.parse("2026-11-30T20:00:00Z");

        assertThat(IdempotentResponses.toResponse(new Outcome.Executed<>(created)))
                .isEqualTo(created);

        StoredResponse replay = IdempotentResponses.toResponse(new Outcome.Replayed<>(created, then));
        assertThat(replay.status()).isEqualTo(201);
        assertThat(replay.header("Location")).contains("/transfers/42");
        assertThat(replay.header("Idempotent-Replayed")).contains("true");
        assertThat(replay.body()).isEqualTo(created.body());

        StoredResponse mismatch = IdempotentResponses.toResponse(new Outcome.FingerprintMismatch<>());
        assertThat(mismatch.status()).isEqualTo(422);
        assertThat(JSON.readTree(mismatch.body()).get("type").asText()).endsWith("idempotency-key-reused");

        StoredResponse busy = IdempotentResponses.toResponse(new Outcome.InProgress<>(Duration.ofMillis(2500)));
        assertThat(busy.status()).isEqualTo(409);
        assertThat(busy.header("Retry-After")).contains("3");
        assertThat(busy.header("Content-Type")).contains(Problem.CONTENT_TYPE);

        Failure noFunds = Failure.of("insufficient_funds", "no");
        StoredResponse first = IdempotentResponses.toResponse(new Outcome.Rejected<>(noFunds, then, false));
        StoredResponse again = IdempotentResponses.toResponse(new Outcome.Rejected<>(noFunds, then, true));
        assertThat(first.status()).isEqualTo(422);
        assertThat(first.header("Idempotent-Replayed")).isEmpty();
        assertThat(again.header("Idempotent-Replayed")).contains("true");
        assertThat(again.body()).isEqualTo(first.body());

        StoredResponse notFound = IdempotentResponses.toResponse(
                new Outcome.Rejected<>(Failure.of("account_not_found", "x"), then, false),
                f -> f.code().equals("account_not_found")
                        ? Problem.rejected(f).toResponse().withHeader("X-Status", "404")
                        : null);
        assertThat(notFound.header("X-Status")).contains("404");
    }

    @Test
    void anExternalEffectsUnknownOutcomeIs503WithRetryAfterAndReconciliationIs502() throws Exception {
        StoredResponse unknown = IdempotentResponses.toResponse(
                new io.github.idemtx.core.RemoteOutcome.Unknown<StoredResponse>(Duration.ofMillis(1500), "timeout"));
        assertThat(unknown.status()).isEqualTo(503);
        assertThat(unknown.header("Retry-After")).contains("2");
        assertThat(JSON.readTree(unknown.body()).get("type").asText()).endsWith("outcome-unknown");
        assertThat(unknown.bodyText()).doesNotContain("timeout"); // the reason is for logs, not clients

        StoredResponse reconciling = IdempotentResponses.toResponse(
                new io.github.idemtx.core.RemoteOutcome.NeedsReconciliation<StoredResponse>(java.time.Instant.now()));
        assertThat(reconciling.status()).isEqualTo(502);
        assertThat(reconciling.header("Retry-After")).isEmpty();
        assertThat(JSON.readTree(reconciling.body()).get("type").asText()).endsWith("needs-reconciliation");

        // the shared cases answer as for an in-transaction call
        io.github.idemtx.core.RemoteOutcome<StoredResponse> busy = new Outcome.InProgress<>(Duration.ofSeconds(1));
        assertThat(IdempotentResponses.toResponse(busy).status()).isEqualTo(409);
    }
}
