package io.github.idemtx.spring.web;

import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.http.IdempotentResponses;
import io.github.idemtx.http.Problem;
import io.github.idemtx.http.StoredResponse;
import java.net.URI;
import java.util.Objects;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/**
 * Turns an {@link Outcome} (or an external effect's {@link RemoteOutcome}) into the
 * {@link ResponseEntity} a controller returns, with the conventions of {@link IdempotentResponses}:
 * a replay carries {@code Idempotent-Replayed: true}; a call still in progress is 409 with
 * {@code Retry-After}; a key reused for another request and a recorded rejection are 422 problem
 * details; a remote outcome not known yet is 503 with {@code Retry-After}, one being reconciled 502.
 */
public final class IdempotentResponseEntities {

    private IdempotentResponseEntities() {}

    /**
     * The response for an outcome whose value is the response itself (stored with
     * {@code StoredResponseCodec}): replayed byte for byte.
     *
     * @param outcome the call's outcome
     * @return the response to return
     * @throws NullPointerException if {@code outcome} is null, or an executed or replayed call
     *     recorded no response
     */
    public static ResponseEntity<byte[]> of(RemoteOutcome<StoredResponse> outcome) {
        StoredResponse response = IdempotentResponses.toResponse(outcome);
        HttpHeaders headers = new HttpHeaders();
        response.headers().forEach(h -> headers.add(h.name(), h.value()));
        return ResponseEntity.status(response.status()).headers(headers).body(response.body());
    }

    /**
     * The response for an outcome whose value is the body: {@code status} with the value (written by
     * the application's message converters) when executed or replayed, a problem detail otherwise.
     *
     * @param outcome the call's outcome
     * @param status the status of a response with the value, e.g. 201
     * @return the response to return
     * @throws NullPointerException if an argument is null
     */
    public static ResponseEntity<Object> of(RemoteOutcome<?> outcome, HttpStatusCode status) {
        Objects.requireNonNull(outcome, "outcome must not be null");
        Objects.requireNonNull(status, "status must not be null");
        return switch (outcome) {
            case Outcome.Executed<?> e -> ResponseEntity.status(status).body(e.value());
            case Outcome.Replayed<?> r ->
                ResponseEntity.status(status)
                        .header(IdempotentResponses.REPLAYED_HEADER, "true")
                        .body(r.value());
            case Outcome.Rejected<?> f -> {
                ResponseEntity.BodyBuilder b =
                        ResponseEntity.status(422).contentType(MediaType.APPLICATION_PROBLEM_JSON);
                if (f.replayed()) {
                    b.header(IdempotentResponses.REPLAYED_HEADER, "true");
                }
                yield b.body(problemDetail(Problem.rejected(f.failure())));
            }
            case Outcome.FingerprintMismatch<?> m ->
                ResponseEntity.status(422)
                        .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                        .body(problemDetail(Problem.keyReused()));
            case Outcome.InProgress<?> p ->
                ResponseEntity.status(409)
                        .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                        .header(HttpHeaders.RETRY_AFTER, Long.toString(Problem.retryAfterSeconds(p.retryAfter())))
                        .body(problemDetail(Problem.inProgress(p.retryAfter())));
            case RemoteOutcome.Unknown<?> u ->
                ResponseEntity.status(503)
                        .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                        .header(HttpHeaders.RETRY_AFTER, Long.toString(Problem.retryAfterSeconds(u.retryAfter())))
                        .body(problemDetail(Problem.outcomeUnknown(u.retryAfter())));
            case RemoteOutcome.NeedsReconciliation<?> n ->
                ResponseEntity.status(502)
                        .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                        .body(problemDetail(Problem.needsReconciliation()));
        };
    }

    /**
     * {@return the library's problem as Spring's {@link ProblemDetail}, extensions as properties}
     *
     * @param problem the problem
     * @throws NullPointerException if {@code problem} is null
     */
    public static ProblemDetail problemDetail(Problem problem) {
        ProblemDetail detail =
                ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(problem.status()), problem.detail());
        detail.setType(URI.create(problem.type()));
        detail.setTitle(problem.title());
        problem.extensions().forEach(detail::setProperty);
        return detail;
    }
}
