package io.github.idemtx.spring.web;

import io.github.idemtx.http.InvalidIdempotencyKeyException;
import io.github.idemtx.http.InvalidJsonException;
import io.github.idemtx.http.Problem;
import java.util.Map;
import java.util.Objects;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Answers the request-level refusals as problem details ({@code application/problem+json}): a
 * missing or malformed {@code Idempotency-Key} (400, the reason as a member), a JSON body that
 * cannot be fingerprinted (400), no scope for the request (401), an invalid one (400), and no
 * {@link IdempotencyScopeResolver} where one is needed (500, naming the fix). Ordered just ahead
 * of an application's catch-all handlers; an application's own handler for these types with a
 * higher precedence wins.
 */
@RestControllerAdvice
@Order(Ordered.LOWEST_PRECEDENCE - 100)
public class IdempotencyExceptionHandler {

    /** Stateless and thread-safe; the web auto-configuration registers one. */
    public IdempotencyExceptionHandler() {}

    /**
     * {@return 400 with the reason as a member}
     *
     * @param e the refusal
     */
    @ExceptionHandler(InvalidIdempotencyKeyException.class)
    public ResponseEntity<ProblemDetail> invalidKey(InvalidIdempotencyKeyException e) {
        return problem(Problem.invalidKey(e));
    }

    /**
     * {@return 400 naming what is wrong with the body}
     *
     * @param e the refusal
     */
    @ExceptionHandler(InvalidJsonException.class)
    public ResponseEntity<ProblemDetail> invalidJson(InvalidJsonException e) {
        return problem("invalid-json", "Invalid JSON body", 400, e, "the body is not acceptable JSON");
    }

    /**
     * {@return 401: no scope for the key (no authenticated principal, by default)}
     *
     * @param e the refusal
     */
    @ExceptionHandler(MissingScopeException.class)
    public ResponseEntity<ProblemDetail> missingScope(MissingScopeException e) {
        return problem(Problem.unauthenticated());
    }

    /**
     * {@return 400 naming where the scope came from and what is wrong with it}
     *
     * @param e the refusal
     */
    @ExceptionHandler(InvalidScopeException.class)
    public ResponseEntity<ProblemDetail> invalidScope(InvalidScopeException e) {
        return problem("invalid-scope", "Invalid scope", 400, e, "the request's scope is not valid");
    }

    /**
     * {@return 500 naming the fix: the application has not said where scopes come from}
     *
     * @param e the refusal
     */
    @ExceptionHandler(ScopeNotConfiguredException.class)
    public ResponseEntity<ProblemDetail> scopeNotConfigured(ScopeNotConfiguredException e) {
        return problem(
                "scope-not-configured",
                "Idempotency scope not configured",
                500,
                e,
                "define an IdempotencyScopeResolver bean");
    }

    /** A problem of this module's own {@code type}, whose detail is the exception's message, else {@code fallback}. */
    private static ResponseEntity<ProblemDetail> problem(
            String type, String title, int status, RuntimeException e, String fallback) {
        return problem(new Problem(
                Problem.TYPE_PREFIX + type,
                title,
                status,
                Objects.requireNonNullElse(e.getMessage(), fallback),
                Map.of()));
    }

    private static ResponseEntity<ProblemDetail> problem(Problem problem) {
        return ResponseEntity.status(problem.status())
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(IdempotentResponseEntities.problemDetail(problem));
    }
}
