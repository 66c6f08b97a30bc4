package io.github.idemtx.spring.actuate;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimAdminException;
import io.github.idemtx.jooq.ClaimView;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The {@code idempotency} Actuator endpoint, over {@link ClaimAdmin}. Read-only by default: reads are
 * on wherever the endpoint is exposed ({@code management.endpoints.web.exposure.include=idempotency});
 * the writes need {@code management.endpoint.idempotency.access=unrestricted}.
 *
 * <table>
 *   <caption>operations (under {@code /actuator/idempotency})</caption>
 *   <tr><th>request</th><th>what</th></tr>
 *   <tr><td>{@code GET /}</td><td>the backlog: claims in flight and needing reconciliation, the oldest of each</td></tr>
 *   <tr><td>{@code GET /{state}?effect=&limit=&after=}</td><td>a page of {@code in_flight},
 *       {@code needs_reconciliation} or {@code sent} claims, oldest first; {@code next} continues it</td></tr>
 *   <tr><td>{@code GET /{scope}/{key}}</td><td>one claim with its history; 404 when there is none</td></tr>
 *   <tr><td>{@code POST /{scope}/{key}}</td><td>a JSON body {@code {"outcome": "applied", "answer": "<result as
 *       stored, e.g. JSON text>", "operator": ..., "reason": ...}} or {@code {"outcome": "refused", "code": ...,
 *       "message": ..., "operator": ..., "reason": ...}}: resolves a claim that needs reconciliation</td></tr>
 *   <tr><td>{@code DELETE /{scope}/{key}?operator=&reason=}</td><td>forgets a settled claim</td></tr>
 *   <tr><td>{@code GET /?scope=&key=}, {@code POST /} with {@code scope} and {@code key} in the body,
 *       {@code DELETE /?scope=&key=&operator=&reason=}</td><td>the same for a scope or key holding {@code /} or
 *       {@code \}, which servlet containers refuse in a path even percent-encoded</td></tr>
 * </table>
 *
 * <p>Refusals answer {@code {"error": reason, "message": ...}}: 404 {@code not_found}, 409
 * {@code wrong_state}, 422 {@code unknown_effect}, 400 {@code bad_input} (a bad or missing scope, key,
 * state, limit, cursor, note or answer), 503 {@code unavailable} (the database did not complete it;
 * look the claim up before trying again) and 503 {@code outcome_unknown} (the action's COMMIT has an
 * unknown outcome: the connection was lost while it was in flight, or the synchronous standby did not
 * confirm it; it may have been recorded). Every write names its operator and reason, recorded with the
 * action.
 */
@Endpoint(id = "idempotency", defaultAccess = Access.READ_ONLY)
public class IdempotencyEndpoint {

    /** How many claims a page lists when the request does not say. */
    public static final int DEFAULT_PAGE = 50;

    private final ClaimAdmin admin;
    private final Clock clock;

    /**
     * An endpoint over {@code admin}.
     *
     * @param admin the claims' admin
     * @param clock measures the oldest in-flight claim's age
     * @throws NullPointerException if an argument is null
     */
    public IdempotencyEndpoint(ClaimAdmin admin, Clock clock) {
        this.admin = Objects.requireNonNull(admin, "admin must not be null");
        this.clock = Objects.requireNonNull(clock, "clock must not be null");
    }

    /**
     * {@return the backlog and the effects this endpoint can resolve; with {@code scope} and {@code
     * key}, the claim instead (the form for a scope or key holding {@code /} or {@code \}, which
     * servlet containers refuse in a path)}
     *
     * @param scope with {@code key}: the claim's scope
     * @param key with {@code scope}: the claim's key
     */
    @ReadOperation
    public WebEndpointResponse<Map<String, @Nullable Object>> backlog(@Nullable String scope, @Nullable String key) {
        if (scope != null && key != null) {
            return inspect(scope, key);
        }
        if (scope != null || key != null) {
            return answer(() -> {
                throw new IllegalArgumentException((scope == null ? "scope" : "key") + " is required with "
                        + (scope == null ? "key" : "scope") + " (or neither, for the backlog)");
            });
        }
        return answer(() -> {
            ClaimAdmin.Backlog b = admin.backlog();
            Map<String, @Nullable Object> out = new LinkedHashMap<>();
            out.put("inFlight", b.inFlight());
            out.put("needingReconciliation", b.needingReconciliation());
            out.put("oldestInFlight", text(b.oldestInFlight()));
            out.put(
                    "oldestInFlightAge",
                    b.oldestInFlight() == null
                            ? null
                            : b.oldestInFlightAge(clock.instant()).toString());
            out.put("oldestNeedingReconciliation", text(b.oldestNeedingReconciliation()));
            out.put("effects", List.copyOf(admin.effects()));
            return out;
        });
    }

    /**
     * {@return a page of the claims in {@code state}}
     *
     * @param state {@code in_flight}, {@code needs_reconciliation} or {@code sent} (an effect settled by
     *     statement)
     * @param effect only this effect's claims; null for all
     * @param limit claims per page, 1 to {@value ClaimAdmin#MAX_PAGE}; null for {@value #DEFAULT_PAGE}
     * @param after the {@code next} of the page before; null for the first page
     */
    @ReadOperation
    public WebEndpointResponse<Map<String, @Nullable Object>> list(
            @Selector String state, @Nullable String effect, @Nullable String limit, @Nullable String after) {
        return answer(() -> {
            int n;
            try {
                n = limit == null ? DEFAULT_PAGE : Integer.parseInt(limit.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("limit must be a whole number, was '" + limit + "'");
            }
            ClaimAdmin.Page page = admin.list(state(state), effect, n, after);
            List<Map<String, @Nullable Object>> claims = new ArrayList<>();
            page.claims().forEach(c -> claims.add(view(c)));
            Map<String, @Nullable Object> out = new LinkedHashMap<>();
            out.put("claims", claims);
            out.put("next", page.next());
            return out;
        });
    }

    /**
     * {@return the claim of ({@code scope}, {@code key}) with its history; 404 when there is none}
     *
     * @param scope the claim's scope
     * @param key the claim's key
     */
    @ReadOperation
    public WebEndpointResponse<Map<String, @Nullable Object>> inspect(@Selector String scope, @Selector String key) {
        return answer(() -> {
            Scope s = scope(scope);
            IdempotencyKey k = key(key);
            return admin.inspect(s, k)
                    .map(IdempotencyEndpoint::view)
                    .orElseThrow(() -> new ClaimAdminException(
                            ClaimAdminException.Reason.NOT_FOUND,
                            s,
                            k,
                            "no claim for this scope and key (never made, purged, or forgotten)"));
        });
    }

    /**
     * Resolves a claim that needs reconciliation: the remote applied it ({@code outcome=applied}, with
     * {@code answer}) or refused it ({@code outcome=refused}, with {@code code} and {@code message}).
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param outcome {@code applied} or {@code refused}
     * @param answer for applied, required: the result in the effect codec's stored form, as text: a
     *     JSON string in the body, e.g. {@code "answer": "{\"reference\": \"bank-77\"}"} (a JSON object
     *     there is refused by Spring Boot's Actuator, which reads the body as text values, with a bare
     *     400 before this method runs); a result that is null is resolved through {@link ClaimAdmin}
     *     itself
     * @param code for refused: the failure's code
     * @param message for refused: the failure's message
     * @param operator who resolves it
     * @param reason why, in their words
     * @return the claim as it is now, or the refusal
     */
    @WriteOperation
    public WebEndpointResponse<Map<String, @Nullable Object>> resolve(
            @Selector String scope,
            @Selector String key,
            @Nullable String outcome,
            @Nullable String answer,
            @Nullable String code,
            @Nullable String message,
            @Nullable String operator,
            @Nullable String reason) {
        return answer(() -> {
            Scope s = scope(scope);
            IdempotencyKey k = key(key);
            ClaimAdmin.Note note = new ClaimAdmin.Note(required("operator", operator), required("reason", reason));
            String how = required("outcome", outcome);
            ClaimView after = switch (how.toLowerCase(Locale.ROOT)) {
                case "applied" -> {
                    if (code != null || message != null) {
                        throw new IllegalArgumentException("outcome applied takes an answer, not a code or a message"
                                + " (those are for outcome refused)");
                    }
                    if (answer == null) {
                        throw new IllegalArgumentException("outcome applied needs the answer: the remote's result"
                                + " in the form the effect's codec stores (JSON text for a JSON codec)");
                    }
                    yield admin.resolveApplied(s, k, answer, note);
                }
                case "refused" -> {
                    if (answer != null) {
                        throw new IllegalArgumentException("outcome refused takes a code and a message, not an answer"
                                + " (that is for outcome applied)");
                    }
                    yield admin.resolveRefused(
                            s, k, Failure.of(required("code", code), required("message", message)), note);
                }
                default -> throw new IllegalArgumentException("outcome must be applied or refused, was '" + how + "'");
            };
            return view(after);
        });
    }

    /**
     * {@link #resolve} with the scope and key in the body: the form for a scope or key holding
     * {@code /} or {@code \}, which servlet containers refuse in a path.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param outcome {@code applied} or {@code refused}
     * @param answer for applied, required: the result as the effect's codec stores it, as text
     * @param code for refused: the failure's code
     * @param message for refused: the failure's message
     * @param operator who resolves it
     * @param reason why, in their words
     * @return the claim as it is now, or the refusal
     */
    @WriteOperation
    public WebEndpointResponse<Map<String, @Nullable Object>> resolveByBody(
            @Nullable String scope,
            @Nullable String key,
            @Nullable String outcome,
            @Nullable String answer,
            @Nullable String code,
            @Nullable String message,
            @Nullable String operator,
            @Nullable String reason) {
        if (scope == null || key == null) {
            return answer(() -> {
                throw new IllegalArgumentException(
                        (scope == null ? "scope" : "key") + " is required in the body (or in the path)");
            });
        }
        return resolve(scope, key, outcome, answer, code, message, operator, reason);
    }

    /**
     * Forgets a settled claim, so that the next call with its key runs again.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param operator who forgets it
     * @param reason why, in their words
     * @return the claim as it was, or the refusal
     */
    @DeleteOperation
    public WebEndpointResponse<Map<String, @Nullable Object>> forget(
            @Selector String scope, @Selector String key, @Nullable String operator, @Nullable String reason) {
        return answer(() -> {
            Scope s = scope(scope);
            IdempotencyKey k = key(key);
            return view(admin.forget(
                    s, k, new ClaimAdmin.Note(required("operator", operator), required("reason", reason))));
        });
    }

    /**
     * {@link #forget} with the scope and key as query parameters: the form for a scope or key holding
     * {@code /} or {@code \}.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param operator who forgets it
     * @param reason why, in their words
     * @return the claim as it was, or the refusal
     */
    @DeleteOperation
    public WebEndpointResponse<Map<String, @Nullable Object>> forgetByQuery(
            @Nullable String scope, @Nullable String key, @Nullable String operator, @Nullable String reason) {
        if (scope == null || key == null) {
            return answer(() -> {
                throw new IllegalArgumentException(
                        (scope == null ? "scope" : "key") + " is required as a query parameter (or in the path)");
            });
        }
        return forget(scope, key, operator, reason);
    }

    private static String required(String name, @Nullable String value) {
        if (value == null) {
            throw new IllegalArgumentException(name + " is required");
        }
        return value;
    }

    /** {@code action}'s map with 200, or the error its failure maps to (see the class comment). */
    static WebEndpointResponse<Map<String, @Nullable Object>> answer(Supplier<Map<String, @Nullable Object>> action) {
        try {
            return new WebEndpointResponse<>(action.get(), WebEndpointResponse.STATUS_OK);
        } catch (ClaimAdminException e) {
            int status = switch (e.reason()) {
                case NOT_FOUND -> WebEndpointResponse.STATUS_NOT_FOUND;
                case WRONG_STATE -> 409;
                // the request is fine; this application cannot run the effect's writes (docs/on-call.md)
                case UNKNOWN_EFFECT -> 422;
                case BAD_INPUT -> WebEndpointResponse.STATUS_BAD_REQUEST;
            };
            return new WebEndpointResponse<>(error(e.reason().name().toLowerCase(Locale.ROOT), e.getMessage()), status);
        } catch (IllegalArgumentException | NullPointerException e) {
            return new WebEndpointResponse<>(
                    error("bad_input", e.getMessage()), WebEndpointResponse.STATUS_BAD_REQUEST);
        } catch (CommitOutcomeUnknownException e) {
            LOG.log(System.Logger.Level.WARNING, "idemtx: an operator's action through the endpoint is in doubt", e);
            return new WebEndpointResponse<>(
                    error(
                            "outcome_unknown",
                            "the action's COMMIT has an unknown outcome (the connection was lost while it was in flight,"
                                    + " or the synchronous standby did not confirm it): it may have been recorded;"
                                    + " look the claim up before trying again"),
                    WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
        } catch (RuntimeException e) {
            // the database did not complete it (a lock held past statement_timeout, a lost connection):
            // the action was rolled back, or (the read of the claim after a resolution failed) it was
            // recorded; what is stored now is what inspect shows
            LOG.log(System.Logger.Level.WARNING, "idemtx: an operator's action through the endpoint failed", e);
            return new WebEndpointResponse<>(
                    error(
                            "unavailable",
                            "the database did not complete the action ("
                                    + e.getClass().getSimpleName()
                                    + "): look the claim up before trying again"),
                    WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
        }
    }

    private static final System.Logger LOG = System.getLogger("io.github.idemtx");

    private static Map<String, @Nullable Object> error(String error, @Nullable String message) {
        Map<String, @Nullable Object> out = new LinkedHashMap<>();
        out.put("error", error);
        out.put("message", message);
        return out;
    }

    private static ClaimView.State state(String state) {
        String tag = state.toLowerCase(Locale.ROOT).replace('-', '_');
        for (ClaimView.State s : ClaimView.State.values()) {
            if (s.tag().equals(tag)) {
                return s;
            }
        }
        throw new IllegalArgumentException(
                "state must be in_flight, needs_reconciliation or sent, was '" + state + "'");
    }

    private static Scope scope(String scope) {
        try {
            return Scope.of(scope);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("scope: " + e.getMessage(), e);
        }
    }

    private static IdempotencyKey key(String key) {
        try {
            return IdempotencyKey.of(key);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("key: " + e.getMessage(), e);
        }
    }

    private static @Nullable String text(@Nullable Instant at) {
        return at == null ? null : at.toString();
    }

    /** A claim as plain JSON values (the scope and key as strings, times in ISO-8601). */
    static Map<String, @Nullable Object> view(ClaimView c) {
        Map<String, @Nullable Object> out = new LinkedHashMap<>();
        out.put("scope", c.scope().value());
        out.put("key", c.key().value());
        out.put("state", c.state().tag());
        out.put("operation", c.operation());
        out.put("effect", c.effect());
        out.put("fingerprint", c.fingerprint());
        out.put("createdAt", text(c.createdAt()));
        out.put("completedAt", text(c.completedAt()));
        out.put("expiresAt", text(c.expiresAt()));
        out.put("expired", c.expired());
        out.put("fence", c.fence());
        out.put("leaseUntil", text(c.leaseUntil()));
        out.put("lookups", c.lookups());
        out.put("nextLookupAt", text(c.nextLookupAt()));
        out.put("downstreamKey", c.downstreamKey());
        out.put("request", c.request());
        out.put("answer", c.answer());
        out.put("answerText", c.answerText());
        Failure failure = c.failure();
        out.put("failure", failure == null ? null : Map.of("code", failure.code(), "message", failure.message()));
        out.put("undecodable", c.undecodable());
        List<Map<String, Object>> history = new ArrayList<>();
        for (ClaimView.Action a : c.history()) {
            history.add(Map.of(
                    "at", a.at().toString(), "action", a.action(), "operator", a.operator(), "reason", a.reason()));
        }
        out.put("history", history);
        return out;
    }
}
