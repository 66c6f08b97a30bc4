package io.github.idemtx.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.Scope;
import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.http.InvalidIdempotencyKeyException;
import io.github.idemtx.http.InvalidJsonException;
import io.github.idemtx.http.Problem;
import io.github.idemtx.http.RequestFingerprint;
import io.github.idemtx.http.StoredResponse;
import io.github.idemtx.jooq.TransactionalWork;
import java.io.IOException;
import java.io.InputStream;
import org.jooq.DSLContext;

/**
 * A POST as the library needs it: the tenant's scope, the {@code Idempotency-Key}, the request's
 * fingerprint (method, path, query and the canonical JSON body) and the body. The key and the body
 * size are checked before any SQL; a body that is not a JSON object is kept as the refusal to record,
 * so that it is replayed like every other deterministic refusal.
 *
 * @param json the body, when it is a JSON object; else null (read it through {@link #body()})
 * @param refusal the recorded 400 for a body that is not a JSON object; null when it is one
 */
record PostRequest(
        String tenant, Scope scope, IdempotencyKey key, Fingerprint fingerprint, JsonNode json, Rejection refusal) {

    static final int MAX_BODY = 64 * 1024;

    /** What a handler does with the body inside the one transaction. */
    @FunctionalInterface
    interface Work {
        StoredResponse run(JsonNode body, DSLContext tx);
    }

    /** Thrown before anything is claimed: the answer is {@link #response()}, nothing was written. */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient StoredResponse response;

        Refused(StoredResponse response) {
            super(null, null, false, false);
            this.response = response;
        }

        StoredResponse response() {
            return response;
        }
    }

    /**
     * Reads the POST of {@code tenant}.
     *
     * @throws Refused with a 413 for a body over {@link #MAX_BODY}, a 400 for a missing or invalid key
     */
    static PostRequest read(HttpExchange exchange, String tenant) throws IOException {
        byte[] body = readBody(exchange);
        if (body == null) {
            throw new Refused(LedgerJson.problem(
                    413, "body_too_large", "Body too large", "the body must be at most " + MAX_BODY + " bytes"));
        }
        IdempotencyKey key;
        try {
            key = IdempotencyKeyHeader.parse(exchange.getRequestHeaders().get(IdempotencyKeyHeader.NAME));
        } catch (InvalidIdempotencyKeyException e) {
            throw new Refused(Problem.invalidKey(e).toResponse());
        }
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getRawPath();
        String query = exchange.getRequestURI().getRawQuery();
        try {
            Fingerprint fingerprint = RequestFingerprint.json(method, path, query, body);
            JsonNode json = LedgerJson.parse(body);
            return json.isObject()
                    ? new PostRequest(tenant, Scope.of(tenant), key, fingerprint, json, null)
                    : new PostRequest(
                            tenant,
                            Scope.of(tenant),
                            key,
                            fingerprint,
                            null,
                            new Rejection("invalid_request", "the body must be a JSON object"));
        } catch (InvalidJsonException e) {
            return new PostRequest(
                    tenant,
                    Scope.of(tenant),
                    key,
                    RequestFingerprint.raw(method, path, query, body),
                    null,
                    new Rejection("invalid_json", e.getMessage()));
        }
    }

    /** {@code work} over the body, or, for a body that is not a JSON object, a work that records that refusal. */
    TransactionalWork<StoredResponse> work(Work work) {
        return tx -> work.run(body(), tx);
    }

    /** The JSON object sent. @throws Rejection the recorded 400 when the body is not one */
    JsonNode body() {
        if (refusal != null) {
            throw new Rejection(refusal.failure().code(), refusal.failure().message()); // afresh on every attempt
        }
        return json;
    }

    /** The body, or null when it is larger than {@link #MAX_BODY}; read no further than that. */
    private static byte[] readBody(HttpExchange exchange) throws IOException {
        String length = exchange.getRequestHeaders().getFirst("Content-Length");
        if (length != null) {
            try {
                if (Long.parseLong(length.trim()) > MAX_BODY) {
                    return null;
                }
            } catch (NumberFormatException e) {
                return null;
            }
        }
        try (InputStream in = exchange.getRequestBody()) {
            byte[] body = in.readNBytes(MAX_BODY + 1);
            return body.length > MAX_BODY ? null : body;
        }
    }
}
