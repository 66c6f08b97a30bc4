package io.github.idemtx.http;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.internal.JsonText;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * An RFC 9457 problem detail ({@code application/problem+json}), with factories for the answers
 * an idempotent endpoint gives: 400 for a missing or invalid key, 401 without an authenticated
 * scope, 409 while the first call is still running, 422 for a key reused with another request and
 * for a recorded rejection.
 *
 * @param type a URI reference naming the problem type
 * @param title a short summary of the type
 * @param status the HTTP status
 * @param detail this occurrence, for people
 * @param extensions further members (strings, numbers, booleans), written sorted by name
 */
public record Problem(String type, String title, int status, String detail, Map<String, Object> extensions) {

    /** The media type of a problem detail. */
    public static final String CONTENT_TYPE = "application/problem+json";

    /** The prefix of this library's problem type URIs. */
    public static final String TYPE_PREFIX = "urn:idemtx:problem:";

    /**
     * Validates the components and copies {@code extensions}.
     *
     * @throws NullPointerException if {@code type}, {@code title}, {@code detail} or {@code extensions}
     *     (or one of its keys or values) is null
     * @throws IllegalArgumentException if {@code status} is not from 400 to 599, or an extension is not a
     *     string, number or boolean, or is named like a standard member
     */
    public Problem {
        Objects.requireNonNull(type, "type must not be null");
        Objects.requireNonNull(title, "title must not be null");
        Objects.requireNonNull(detail, "detail must not be null");
        if (status < 400 || status > 599) {
            throw new IllegalArgumentException("a problem's status must be between 400 and 599, was " + status);
        }
        extensions = Map.copyOf(new LinkedHashMap<>(Objects.requireNonNull(extensions, "extensions must not be null")));
        for (Map.Entry<String, Object> e : extensions.entrySet()) {
            Object v = e.getValue();
            if (!(v instanceof String || v instanceof Number || v instanceof Boolean)) {
                throw new IllegalArgumentException("extension " + e.getKey() + " must be a string, number or boolean");
            }
            if (Map.of("type", 0, "title", 0, "status", 0, "detail", 0, "instance", 0)
                    .containsKey(e.getKey())) {
                throw new IllegalArgumentException("extension " + e.getKey() + " would shadow a standard member");
            }
        }
    }

    /**
     * {@return 400: the {@code Idempotency-Key} header is missing or unusable} The reason is a member.
     *
     * @param e the refusal; its message becomes the detail
     * @throws NullPointerException if {@code e} is null
     */
    public static Problem invalidKey(InvalidIdempotencyKeyException e) {
        return new Problem(
                TYPE_PREFIX + "invalid-idempotency-key",
                "Missing or invalid Idempotency-Key",
                400,
                Objects.requireNonNullElse(e.getMessage(), "invalid Idempotency-Key"),
                Map.of("reason", e.reason().name()));
    }

    /** {@return 401: no authenticated principal, so no scope for the key} */
    public static Problem unauthenticated() {
        return new Problem(
                TYPE_PREFIX + "unauthenticated",
                "Authentication required",
                401,
                "the request carries no valid credentials, and idempotency keys belong to an authenticated principal",
                Map.of());
    }

    /**
     * {@return 409: a request with this key is still being processed}
     *
     * @param retryAfter when to retry; the detail names it in whole seconds
     * @throws NullPointerException if {@code retryAfter} is null
     */
    public static Problem inProgress(Duration retryAfter) {
        return new Problem(
                TYPE_PREFIX + "request-in-progress",
                "Request in progress",
                409,
                "a request with this Idempotency-Key is still being processed; retry after "
                        + retryAfterSeconds(retryAfter) + " s with the same key",
                Map.of());
    }

    /**
     * {@return 503: the call to a remote system (a payment provider) ended without saying whether it
     * applied the request} Retrying with the same key looks it up and answers for good.
     *
     * @param retryAfter when to retry; the detail names it in whole seconds
     * @throws NullPointerException if {@code retryAfter} is null
     */
    public static Problem outcomeUnknown(Duration retryAfter) {
        return new Problem(
                TYPE_PREFIX + "outcome-unknown",
                "Outcome not known yet",
                503,
                "the request reached a system that has not confirmed whether it was carried out; retry after "
                        + retryAfterSeconds(retryAfter) + " s with the same Idempotency-Key, which never repeats it",
                Map.of());
    }

    /** {@return 502: the remote system never confirmed the outcome; it is being reconciled by hand} */
    public static Problem needsReconciliation() {
        return new Problem(
                TYPE_PREFIX + "needs-reconciliation",
                "Outcome being reconciled",
                502,
                "the system this request reached never confirmed whether it was carried out; it is being reconciled"
                        + " and a retry with the same Idempotency-Key will answer once it is",
                Map.of());
    }

    /** {@return 422: the key was used before with a different request} */
    public static Problem keyReused() {
        return new Problem(
                TYPE_PREFIX + "idempotency-key-reused",
                "Idempotency-Key reused",
                422,
                "this Idempotency-Key was already used for a different request; use a new key for a new request",
                Map.of());
    }

    /**
     * {@return 422: the request was rejected, as recorded} The failure's code is a member.
     *
     * @param failure the recorded failure; its message becomes the detail
     * @throws NullPointerException if {@code failure} is null
     */
    public static Problem rejected(Failure failure) {
        return new Problem(
                TYPE_PREFIX + "rejected", "Request rejected", 422, failure.message(), Map.of("code", failure.code()));
    }

    /** {@return the problem as UTF-8 JSON: type, title, status, detail, then the extensions} */
    public byte[] toJson() {
        StringBuilder out = new StringBuilder(128).append('{');
        JsonText.appendString(out.append("\"type\":"), type);
        JsonText.appendString(out.append(",\"title\":"), title);
        out.append(",\"status\":").append(status);
        JsonText.appendString(out.append(",\"detail\":"), detail);
        new java.util.TreeMap<>(extensions).forEach((k, v) -> {
            JsonText.appendString(out.append(','), k).append(':');
            if (v instanceof String s) {
                JsonText.appendString(out, s);
            } else if (v instanceof BigDecimal d) {
                out.append(d.toPlainString());
            } else {
                out.append(v);
            }
        });
        return out.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }

    /** {@return the problem as a response with {@code Content-Type: application/problem+json}} */
    public StoredResponse toResponse() {
        return StoredResponse.of(status, CONTENT_TYPE, toJson());
    }

    /**
     * {@return whole seconds for a {@code Retry-After} header: the duration rounded up, at least 1}
     *
     * @param retryAfter the hint to round
     * @throws NullPointerException if {@code retryAfter} is null
     */
    public static long retryAfterSeconds(Duration retryAfter) {
        Objects.requireNonNull(retryAfter, "retryAfter must not be null");
        long seconds = retryAfter.getSeconds() + (retryAfter.getNano() > 0 ? 1 : 0);
        return Math.max(1, seconds);
    }
}
