package io.github.idemtx.ledger;

import com.sun.net.httpserver.HttpExchange;
import io.github.idemtx.http.Problem;
import io.github.idemtx.http.StoredResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which handler answers a request: method and path to {@link LedgerHandlers}, the tenant from the
 * bearer token (never from anything else the client sends), and a 503 with {@code Retry-After} for
 * a request that failed (a lost connection, a database that went away), which the client sends
 * again with its key.
 */
final class LedgerRoutes {

    private static final Pattern ACCOUNT_PATH = Pattern.compile("/accounts/([^/]+)");
    private static final Pattern DEPOSIT_PATH = Pattern.compile("/accounts/([^/]+)/deposits");
    private static final Pattern TRANSFER_PATH = Pattern.compile("/transfers/([^/]+)");
    private static final Pattern PAYOUT_PATH = Pattern.compile("/payouts/([^/]+)");

    private final LedgerHandlers handlers;
    private final Map<String, String> tenantsByToken;
    private final Supplier<String> metrics;

    /**
     * @param metrics the {@code GET /metrics} body, for Prometheus
     */
    LedgerRoutes(LedgerHandlers handlers, Map<String, String> tenantsByToken, Supplier<String> metrics) {
        this.handlers = handlers;
        this.tenantsByToken = Map.copyOf(tenantsByToken);
        this.metrics = metrics;
    }

    /** The {@code HttpServer}'s handler of every request. */
    void handle(HttpExchange exchange) throws IOException {
        StoredResponse response;
        try {
            response = route(exchange);
        } catch (PostRequest.Refused e) {
            response = e.response();
        } catch (RuntimeException e) {
            // the body says nothing of the internals; the log says what happened
            System.err.println("ledger: " + exchange.getRequestMethod() + " "
                    + exchange.getRequestURI().getPath() + " answered 503: "
                    + e.getClass().getSimpleName() + ": " + oneLine(e));
            response = LedgerJson.problem(
                            503,
                            "unavailable",
                            "Service unavailable",
                            "the request could not be completed; retry it with the same Idempotency-Key")
                    .withHeader("Retry-After", "1");
        }
        send(exchange, response);
    }

    private StoredResponse route(HttpExchange exchange) throws IOException {
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getRawPath();
        if (path.equals("/health") && method.equals("GET")) {
            return StoredResponse.of(200, LedgerJson.JSON, "{\"status\":\"up\"}");
        }
        if (path.equals("/metrics") && method.equals("GET")) {
            // operational data, like /health: no tenant's data in it (the library tags no scope or key)
            return StoredResponse.of(200, "text/plain; version=0.0.4; charset=utf-8", metrics.get());
        }
        String tenant = tenant(exchange);
        if (tenant == null) {
            return Problem.unauthenticated().toResponse().withHeader("WWW-Authenticate", "Bearer");
        }
        Matcher m;
        if (method.equals("GET")) {
            if ((m = ACCOUNT_PATH.matcher(path)).matches()) {
                return handlers.account(tenant, m.group(1));
            }
            if ((m = TRANSFER_PATH.matcher(path)).matches()) {
                return handlers.transfer(tenant, m.group(1));
            }
            if ((m = PAYOUT_PATH.matcher(path)).matches()) {
                return handlers.payout(tenant, m.group(1));
            }
            if (path.equals("/payouts")) {
                return handlers.payouts(tenant, queryParameter(exchange, "state"));
            }
        }
        if (method.equals("POST")) {
            if (path.equals("/payouts")) {
                return handlers.payoutsOn()
                        ? handlers.payout(PostRequest.read(exchange, tenant))
                        : LedgerHandlers.payoutsOff();
            }
            if (path.equals("/accounts")) {
                return handlers.openAccount(PostRequest.read(exchange, tenant));
            }
            if ((m = DEPOSIT_PATH.matcher(path)).matches()) {
                return handlers.deposit(PostRequest.read(exchange, tenant), m.group(1));
            }
            if (path.equals("/transfers")) {
                return handlers.transfer(PostRequest.read(exchange, tenant));
            }
        }
        return LedgerJson.problem(404, "not_found", "Not found", "no such resource: " + method + " " + path);
    }

    /** The tenant of the request's bearer token; null without a known one. */
    private String tenant(HttpExchange exchange) {
        List<String> auth = exchange.getRequestHeaders().get("Authorization");
        if (auth == null || auth.size() != 1 || !auth.get(0).startsWith("Bearer ")) {
            return null;
        }
        return tenantsByToken.get(auth.get(0).substring("Bearer ".length()).trim());
    }

    static String queryParameter(HttpExchange exchange, String name) {
        String query = exchange.getRequestURI().getRawQuery();
        if (query == null) {
            return null;
        }
        for (String pair : query.split("&")) {
            if (pair.startsWith(name + "=")) {
                return URLDecoder.decode(pair.substring(name.length() + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    /** The exception's message in one line, without jOOQ's SQL before it or the server's "Where: ..." after. */
    private static String oneLine(RuntimeException e) {
        String reason = String.valueOf(e.getMessage());
        int sql = reason.startsWith("SQL [") ? reason.indexOf("]; ") : -1; // jOOQ puts the SQL first
        if (sql >= 0) {
            reason = reason.substring(sql + 3);
        }
        return reason.lines().findFirst().orElse("").strip();
    }

    static void send(HttpExchange exchange, StoredResponse response) throws IOException {
        for (StoredResponse.Header h : response.headers()) {
            exchange.getResponseHeaders().add(h.name(), h.value());
        }
        byte[] body = response.body();
        exchange.sendResponseHeaders(response.status(), body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
}
