package io.github.idemtx.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.http.StoredResponse;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimAdminException;
import io.github.idemtx.jooq.ClaimView;
import io.github.idemtx.jooq.Remote;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The operators' side of the ledger, on a port of its own bound to 127.0.0.1 ({@code LEDGER_ADMIN_PORT}):
 * JSON over the library's {@link ClaimAdmin}, so that a person (or the storm) can see what the claim
 * table holds and settle the payouts whose outcome nobody could learn. Reach it through an SSH tunnel;
 * nothing on it is for tenants.
 *
 * <ul>
 *   <li>{@code GET /admin/backlog}: how many claims are in flight and need reconciliation, the oldest of each;
 *   <li>{@code GET /admin/claims?state=needs_reconciliation|in_flight|sent[&effect=payout][&limit=50][&after=...]}:
 *       oldest first, {@code next} continues the listing; each with what the bank's lookup says now;
 *   <li>{@code GET /admin/claims/{scope}/{key}}: one claim with its history;
 *   <li>{@code POST /admin/claims/{scope}/{key}/resolve} with {@code {"outcome": "applied", "answer":
 *       "<charge id>", "operator": ..., "reason": ...}} or {@code {"outcome": "refused", "failure":
 *       {"code": ..., "message": ...}, "operator": ..., "reason": ...}};
 *   <li>{@code POST /admin/claims/{scope}/{key}/forget} with {@code {"operator": ..., "reason": ...}};
 *   <li>{@code /admin/statements/...}: with the statement bank, the payouts awaiting a statement, the
 *       flagged lines (double payments, mismatches, unmatched) and an operator's handling of one
 *       ({@link StatementAdmin}).
 * </ul>
 *
 * <p>Every request to these JSON routes carries {@code Authorization: Bearer <admin token>}
 * ({@code LEDGER_ADMIN_TOKEN}, or the one printed at start): the port is bound to the loopback, but
 * any local process (a sidecar in the same pod) reaches it, and the routes both write (resolve a
 * payout as paid, forget a claim) and show decoded requests (the payouts' accounts and
 * destinations). Without it, or with another, the answer is 401 and nothing is read or written. The
 * operations page ({@code /ops}) is for a browser: its forms carry a token of their own, and what it
 * shows is readable by any local process that can reach the port.
 *
 * <p>Scope and key are percent-encoded path segments. Writes take {@code application/json} only (a
 * browser cannot send that to another origin without asking first), and every request must name the
 * loopback in its {@code Host} (a rebound name of another site is refused). Refusals are problem+json: 404
 * no such claim, 409 its state does not allow it, 422 an effect the ledger does not know, 400 bad input.
 */
final class LedgerAdmin implements AutoCloseable {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** What an operator is told of an action whose COMMIT has an unknown outcome. */
    static final String IN_DOUBT = "the action's COMMIT has an unknown outcome (the connection was lost while it was"
            + " in flight, or the synchronous standby did not confirm it): it may have been recorded;"
            + " look the claim up before trying again";

    private static final Pattern CLAIM = Pattern.compile("/admin/claims/([^/]+)/([^/]+)");
    private static final Pattern ACTION = Pattern.compile("/admin/claims/([^/]+)/([^/]+)/(resolve|forget)");
    private static final int MAX_BODY = 64 * 1024;

    private final ClaimAdmin admin;
    private final Payouts payouts; // null without a bank
    private final StatementAdmin statements;
    private final HttpServer server;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    /** {@code Bearer <token>}, compared in constant time. */
    private final byte[] bearer;

    private LedgerAdmin(ClaimAdmin admin, Payouts payouts, int port, String token) throws IOException {
        this.admin = admin;
        this.bearer = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
        this.payouts = payouts;
        this.statements = new StatementAdmin(payouts == null ? null : payouts.statements());
        this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 64);
        server.setExecutor(executor);
        server.createContext("/admin/", this::handle);
        // the same calls as a page for a browser (OperationsPage: escaped, CSRF-checked forms)
        server.createContext(
                "/ops",
                new OperationsPage(
                        admin,
                        "payout",
                        key -> payouts == null
                                ? Remote.Lookup.unknown("no bank: LEDGER_BANK_URL is unset")
                                : payouts.bankSays(key))::handle);
        server.start();
    }

    /** Serves the admin routes on {@code port} (0: a free one) of 127.0.0.1, to holders of {@code token}. */
    static LedgerAdmin start(ClaimAdmin admin, Payouts payouts, int port, String token) throws IOException {
        return new LedgerAdmin(admin, payouts, port, token);
    }

    /** The port it listens on. */
    int port() {
        return server.getAddress().getPort();
    }

    /** The admin API it serves, for pages built on the same calls. */
    ClaimAdmin admin() {
        return admin;
    }

    /** Adds a handler under {@code path} on the admin port (the operations page). */
    void serve(String path, com.sun.net.httpserver.HttpHandler handler) {
        server.createContext(path, handler);
    }

    @Override
    public void close() {
        server.stop(2);
        executor.close();
    }

    private void handle(HttpExchange exchange) throws IOException {
        StoredResponse response;
        try {
            response = route(exchange);
        } catch (ClaimAdminException e) {
            response = switch (e.reason()) {
                case NOT_FOUND -> LedgerJson.problem(404, "claim_not_found", "No such claim", e.getMessage());
                case WRONG_STATE ->
                    LedgerJson.problem(409, "claim_state", "The claim's state does not allow it", e.getMessage());
                case UNKNOWN_EFFECT -> LedgerJson.problem(422, "unknown_effect", "Unknown effect", e.getMessage());
                case BAD_INPUT -> LedgerJson.problem(400, "bad_input", "Bad input", e.getMessage());
            };
        } catch (IllegalArgumentException e) {
            response = LedgerJson.problem(400, "bad_input", "Bad input", e.getMessage());
        } catch (CommitOutcomeUnknownException e) {
            response = LedgerJson.problem(503, "outcome_unknown", "Outcome unknown", IN_DOUBT);
        } catch (RuntimeException e) {
            System.err.println("ledger admin: " + exchange.getRequestMethod() + " "
                    + exchange.getRequestURI().getRawPath() + " failed: " + e);
            response = LedgerJson.problem(
                    503,
                    "unavailable",
                    "Service unavailable",
                    "the action could not be completed;" + " look the claim up before trying again");
        }
        LedgerRoutes.send(exchange, response);
    }

    private StoredResponse route(HttpExchange exchange) throws IOException {
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getRawPath();
        if (!OperationsPage.loopbackHost(exchange)) {
            // another site's page whose name was rebound to 127.0.0.1 would be same-origin to itself
            return LedgerJson.problem(
                    403,
                    "not_loopback",
                    "Forbidden",
                    "the Host header must name this machine's loopback (localhost, 127.0.0.1 or [::1])");
        }
        String given = exchange.getRequestHeaders().getFirst("Authorization");
        if (given == null || !java.security.MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), bearer)) {
            exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"ledger-admin\"");
            return LedgerJson.problem(
                    401,
                    "unauthorized",
                    "Unauthorized",
                    "the admin routes need Authorization: Bearer <LEDGER_ADMIN_TOKEN, or the token the ledger"
                            + " printed at start>");
        }
        if (path.startsWith("/admin/statements/")) {
            return statements.route(method, path, exchange, method.equals("POST") ? body(exchange) : null);
        }
        Matcher m;
        if (method.equals("GET")) {
            if (path.equals("/admin/backlog")) {
                return json(backlog(admin.backlog()));
            }
            if (path.equals("/admin/claims")) {
                return json(list(exchange));
            }
            if ((m = CLAIM.matcher(path)).matches()) {
                Scope scope = scope(m.group(1));
                IdempotencyKey key = key(m.group(2));
                return admin.inspect(scope, key)
                        .map(v -> json(view(v, bankSays(v))))
                        .orElseGet(() -> LedgerJson.problem(
                                404, "claim_not_found", "No such claim", "there is no claim for this scope and key"));
            }
        }
        if (method.equals("POST") && (m = ACTION.matcher(path)).matches()) {
            Scope scope = scope(m.group(1));
            IdempotencyKey key = key(m.group(2));
            JsonNode body = body(exchange);
            ClaimAdmin.Note note = new ClaimAdmin.Note(text(body, "operator"), text(body, "reason"));
            if (m.group(3).equals("forget")) {
                ObjectNode out = MAPPER.createObjectNode();
                out.set("forgotten", view(admin.forget(scope, key, note), null));
                return json(out);
            }
            String outcome = text(body, "outcome");
            ClaimView now = switch (outcome) {
                case "applied" -> admin.resolveApplied(scope, key, answer(body), note);
                case "refused" -> {
                    if (body.has("answer")) {
                        throw new IllegalArgumentException("outcome refused takes a failure, not an answer");
                    }
                    JsonNode failure = body.path("failure");
                    yield admin.resolveRefused(
                            scope, key, new Failure(text(failure, "code"), text(failure, "message")), note);
                }
                default ->
                    throw new IllegalArgumentException(
                            "outcome must be \"applied\" or \"refused\", was \"" + outcome + "\"");
            };
            return json(view(now, null));
        }
        return LedgerJson.problem(404, "not_found", "Not found", "no such resource: " + method + " " + path);
    }

    private ObjectNode list(HttpExchange exchange) {
        String state = LedgerRoutes.queryParameter(exchange, "state");
        if (state == null) {
            throw new IllegalArgumentException("state must be needs_reconciliation, in_flight or sent");
        }
        ClaimView.State wanted;
        try {
            wanted = ClaimView.State.valueOf(state.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "state must be needs_reconciliation, in_flight or sent, was '" + state + "'");
        }
        ClaimAdmin.Page page = admin.list(
                wanted,
                LedgerRoutes.queryParameter(exchange, "effect"),
                StatementAdmin.limit(exchange),
                LedgerRoutes.queryParameter(exchange, "after"));
        List<Remote.Lookup<String>> bank = bankSays(page.claims());
        ObjectNode out = MAPPER.createObjectNode();
        ArrayNode claims = out.putArray("claims");
        for (int i = 0; i < page.claims().size(); i++) {
            claims.add(view(page.claims().get(i), bank.get(i)));
        }
        out.put("next", page.next());
        return out;
    }

    /**
     * What the bank's lookup says now of each unsettled payout (null for other claims), asked side by
     * side so that a slow bank costs one timeout, not one per row.
     */
    List<Remote.Lookup<String>> bankSays(List<ClaimView> claims) {
        List<Future<Remote.Lookup<String>>> asked = new ArrayList<>();
        for (ClaimView c : claims) {
            asked.add(executor.submit(() -> bankSays(c)));
        }
        List<Remote.Lookup<String>> out = new ArrayList<>();
        for (Future<Remote.Lookup<String>> f : asked) {
            try {
                out.add(f.get());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                out.add(Remote.Lookup.unknown("interrupted"));
            } catch (java.util.concurrent.ExecutionException e) {
                out.add(Remote.Lookup.unknown(String.valueOf(e.getCause())));
            }
        }
        return out;
    }

    /** What the bank says of an unsettled payout's downstream key; null for any other claim. */
    Remote.Lookup<String> bankSays(ClaimView claim) {
        boolean unsettled =
                claim.state() == ClaimView.State.IN_FLIGHT || claim.state() == ClaimView.State.NEEDS_RECONCILIATION;
        if (payouts == null || !unsettled || !"payout".equals(claim.effect()) || claim.downstreamKey() == null) {
            return null;
        }
        return payouts.bankSays(claim.downstreamKey());
    }

    /** A lookup's answer in a few words, as the JSON and the page show it. */
    static String describe(Remote.Lookup<String> lookup) {
        return switch (lookup) {
            case Remote.Lookup.Found<String> f -> "found " + f.result();
            case Remote.Lookup.Refused<String> r ->
                "refused: " + r.failure().code() + " (" + r.failure().message() + ")";
            case Remote.Lookup.Absent<String> a -> "absent";
            case Remote.Lookup.Unknown<String> u -> "unknown: " + u.reason();
        };
    }

    static ObjectNode view(ClaimView v, Remote.Lookup<String> bank) {
        ObjectNode o = MAPPER.createObjectNode();
        o.put("scope", v.scope().value());
        o.put("key", v.key().value());
        o.put("state", v.state().tag());
        o.put("operation", v.operation());
        o.put("effect", v.effect());
        o.put("fingerprint", v.fingerprint());
        o.put("createdAt", instant(v.createdAt()));
        o.put("completedAt", instant(v.completedAt()));
        o.put("expiresAt", instant(v.expiresAt()));
        o.put("expired", v.expired());
        o.put("fence", v.fence());
        o.put("leaseUntil", instant(v.leaseUntil()));
        o.put("lookups", v.lookups());
        o.put("nextLookupAt", instant(v.nextLookupAt()));
        o.put("downstreamKey", v.downstreamKey());
        o.set("request", tree(v.request()));
        o.set("answer", tree(v.answer()));
        o.put("answerText", v.answerText());
        if (v.failure() != null) {
            o.putObject("failure")
                    .put("code", v.failure().code())
                    .put("message", v.failure().message());
        } else {
            o.putNull("failure");
        }
        o.put("undecodable", v.undecodable());
        if (bank != null) {
            ObjectNode b = o.putObject("bank");
            b.put("says", describe(bank));
            switch (bank) {
                case Remote.Lookup.Found<String> f -> b.put("answer", "found").put("charge", f.result());
                case Remote.Lookup.Refused<String> r ->
                    b.put("answer", "refused")
                            .put("code", r.failure().code())
                            .put("message", r.failure().message());
                case Remote.Lookup.Absent<String> a -> b.put("answer", "absent");
                case Remote.Lookup.Unknown<String> u ->
                    b.put("answer", "unknown").put("reason", u.reason());
            }
        }
        ArrayNode history = o.putArray("history");
        for (ClaimView.Action a : v.history()) {
            history.addObject()
                    .put("at", a.at().toString())
                    .put("action", a.action())
                    .put("operator", a.operator())
                    .put("reason", a.reason());
        }
        return o;
    }

    /** A decoded value as JSON; its text where Jackson cannot write it. */
    private static JsonNode tree(Object value) {
        if (value == null) {
            return null;
        }
        try {
            return MAPPER.valueToTree(value);
        } catch (IllegalArgumentException e) {
            return MAPPER.getNodeFactory().textNode(value.toString());
        }
    }

    private static ObjectNode backlog(ClaimAdmin.Backlog b) {
        ObjectNode o = MAPPER.createObjectNode();
        o.put("inFlight", b.inFlight());
        o.put("needingReconciliation", b.needingReconciliation());
        o.put("oldestInFlight", instant(b.oldestInFlight()));
        o.put("oldestNeedingReconciliation", instant(b.oldestNeedingReconciliation()));
        return o;
    }

    /**
     * The answer as the payout effect stores it: a JSON string's text, or the JSON of anything else.
     * Required: a misspelt or forgotten field must not record a payout with no charge for good.
     */
    private static String answer(JsonNode body) {
        JsonNode answer = body.get("answer");
        if (answer == null || answer.isNull()) {
            throw new IllegalArgumentException("outcome applied needs the answer: the bank's charge id");
        }
        if (body.has("failure")) {
            throw new IllegalArgumentException("outcome applied takes an answer, not a failure");
        }
        return answer.isTextual() ? answer.asText() : answer.toString();
    }

    private static String text(JsonNode body, String field) {
        JsonNode value = body.get(field);
        if (value == null || !value.isTextual()) {
            throw new IllegalArgumentException(field + " is required, as a JSON string");
        }
        return value.asText();
    }

    private static JsonNode body(HttpExchange exchange) throws IOException {
        String type = exchange.getRequestHeaders().getFirst("Content-Type");
        if (type == null || !type.toLowerCase(Locale.ROOT).startsWith("application/json")) {
            throw new IllegalArgumentException("the body must be application/json");
        }
        byte[] bytes;
        try (InputStream in = exchange.getRequestBody()) {
            bytes = in.readNBytes(MAX_BODY + 1);
        }
        if (bytes.length > MAX_BODY) {
            throw new IllegalArgumentException("the body must be at most " + MAX_BODY + " bytes");
        }
        JsonNode body;
        try {
            body = MAPPER.readTree(bytes);
        } catch (IOException e) {
            throw new IllegalArgumentException("the body is not JSON: "
                    + e.getMessage().lines().findFirst().orElse(""));
        }
        if (body == null || !body.isObject()) {
            throw new IllegalArgumentException("the body must be a JSON object");
        }
        return body;
    }

    private static Scope scope(String raw) {
        return Scope.of(segment(raw));
    }

    private static IdempotencyKey key(String raw) {
        return IdempotencyKey.of(segment(raw));
    }

    /** A percent-encoded path segment's text ('+' is itself in a path, not a space). */
    private static String segment(String raw) {
        return URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    private static String instant(Instant at) {
        return at == null ? null : at.toString();
    }

    private static StoredResponse json(JsonNode body) {
        return StoredResponse.of(200, LedgerJson.JSON, body.toString());
    }
}
