package io.github.idemtx.ledger;

import com.sun.net.httpserver.HttpExchange;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimAdminException;
import io.github.idemtx.jooq.ClaimView;
import io.github.idemtx.jooq.Remote;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The operators' page on the ledger's admin port: the payouts' claims that need reconciliation and
 * those in flight, oldest first, each with what the bank's lookup says of it now; forms to settle a
 * claim as applied (with the bank's charge id) or refused (with a code and message), and to look one
 * claim up with its history and forget it once settled. Every action goes through {@link ClaimAdmin},
 * which records the operator's name and reason with it and refuses what the claim's state does not
 * allow; a refusal is shown on the page with the JSON routes' status (404, 409, 422, 400).
 *
 * <p>Server-side HTML, no script. Every value shown is escaped (a stored request is the client's
 * text). The admin port listens on loopback only, but a browser there can still be led by another
 * site: every POST carries this process's random token, a present {@code Origin} must be the page's
 * own and a present {@code Sec-Fetch-Site} same-origin, and the {@code Host} must be a loopback name
 * (against DNS rebinding); otherwise 403. The Content-Security-Policy allows no script, no frame and
 * forms to this origin only.
 *
 * <ul>
 *   <li>{@code GET /ops[?scope=..&key=..]}: the lists, and the claim looked up;
 *   <li>{@code POST /ops/resolve} ({@code outcome=applied&answer=..} or
 *       {@code outcome=refused&code=..&message=..}, with {@code scope}, {@code key}, {@code operator},
 *       {@code reason}, {@code token});
 *   <li>{@code POST /ops/forget} ({@code scope}, {@code key}, {@code operator}, {@code reason},
 *       {@code token}).
 * </ul>
 *
 * A successful POST redirects (303) to {@code GET /ops} with a message shown once. Each form carries
 * a random {@code submission} id: the same form sent again with the same fields gets the first
 * answer, not a second action (a double click; Chromium resends a POST whose connection dropped).
 */
final class OperationsPage {

    /** What the bank's lookup says of a claim's downstream key. */
    @FunctionalInterface
    interface BankLookup {
        /**
         * Asks the bank, by the downstream key the payout carried.
         *
         * @throws Exception when there is no usable answer (shown as unknown, with the reason)
         */
        Remote.Lookup<String> lookup(String downstreamKey) throws Exception;
    }

    /** The most claims each list shows (the oldest). */
    static final int LIST_LIMIT = 100;

    private static final int MAX_FORM_BYTES = 64 * 1024;
    private static final Duration BANK_WAIT = Duration.ofSeconds(3);
    private static final int MAX_FLASHES = 256;
    private static final int MAX_SUBMISSIONS = 1000;
    private static final String CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self';"
            + " frame-ancestors 'none'; base-uri 'none'";

    private final ClaimAdmin admin;
    private final String effect;
    private final BankLookup bank;
    private final String token;
    private final Map<String, String> flashes = new ConcurrentHashMap<>();
    /** The answers of the last forms submitted, by their fields (a random id among them); the eldest forgotten. */
    private final Map<String, CompletableFuture<Outcome>> submissions = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, CompletableFuture<Outcome>> eldest) {
            return size() > MAX_SUBMISSIONS;
        }
    };

    private final SecureRandom random = new SecureRandom();

    /**
     * @param admin the admin over the payouts' effect
     * @param effect the effect whose claims are listed ({@code payout})
     * @param bank the bank's lookup by downstream key
     */
    OperationsPage(ClaimAdmin admin, String effect, BankLookup bank) {
        this.admin = admin;
        this.effect = effect;
        this.bank = bank;
        this.token = randomToken();
    }

    /** {@return the token every POST must carry (per process)} */
    String token() {
        return token;
    }

    /** The {@code HttpServer}'s handler of {@code /ops} and below. */
    void handle(HttpExchange exchange) throws IOException {
        try {
            route(exchange);
        } catch (IllegalArgumentException e) { // a malformed query (a bad percent-encoding)
            send(exchange, 400, errorPage("bad request: " + e.getMessage()));
        } catch (RuntimeException e) {
            System.err.println("ledger admin: " + exchange.getRequestMethod() + " "
                    + exchange.getRequestURI().getPath() + " failed: " + e);
            send(
                    exchange,
                    503,
                    errorPage("the page could not be made: " + e.getClass().getSimpleName()));
        } finally {
            exchange.close(); // after the answer to a failure too (a try-with-resources closes before its catch)
        }
    }

    private void route(HttpExchange exchange) throws IOException {
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getRawPath();
        if (!loopbackHost(exchange)) {
            send(
                    exchange,
                    403,
                    errorPage("the Host header must name this machine's loopback (localhost,"
                            + " 127.0.0.1 or [::1]); open the page through an ssh -L tunnel"));
            return;
        }
        switch (path) {
            case "/ops", "/ops/" -> {
                if (!method.equals("GET") && !method.equals("HEAD")) {
                    exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                    send(exchange, 405, errorPage("use GET"));
                    return;
                }
                Map<String, String> query = form(exchange.getRequestURI().getRawQuery());
                String flash = query.get("flash") == null ? null : flashes.remove(query.get("flash"));
                send(exchange, 200, page(query.get("scope"), query.get("key"), flash, null, query));
            }
            case "/ops/resolve", "/ops/forget" -> {
                if (!method.equals("POST")) {
                    exchange.getResponseHeaders().set("Allow", "POST");
                    send(exchange, 405, errorPage("use POST"));
                    return;
                }
                post(exchange, path.endsWith("resolve"));
            }
            default -> send(exchange, 404, errorPage("no such page: " + path));
        }
    }

    // ------------------------------------------------------------------ actions

    private void post(HttpExchange exchange, boolean resolve) throws IOException {
        String forbidden = crossSite(exchange);
        Map<String, String> form = null;
        if (forbidden == null) {
            byte[] body = readBody(exchange);
            if (body == null) {
                send(exchange, 413, errorPage("the form is larger than " + MAX_FORM_BYTES + " bytes"));
                return;
            }
            form = form(new String(body, StandardCharsets.UTF_8));
            String given = form.getOrDefault("token", "");
            if (!MessageDigest.isEqual(
                    given.getBytes(StandardCharsets.UTF_8), token.getBytes(StandardCharsets.UTF_8))) {
                forbidden = "the form's token is missing or not this page's (reload the page and try again)";
            }
        }
        if (forbidden != null) {
            send(exchange, 403, errorPage("refused: " + forbidden));
            return;
        }
        Map<String, String> fields = form;
        Outcome outcome =
                form.get("submission") == null ? act(resolve, fields) : once(resolve, form, () -> act(resolve, fields));
        if (outcome.location() != null) {
            redirect(exchange, outcome.location().replace(FLASH, flash(outcome.message())));
        } else {
            send(exchange, outcome.status(), pageOrError(outcome));
        }
    }

    /**
     * The page with {@code outcome}'s message; when the database the action could not complete
     * does not serve the page's lists either, the message alone: what happened to the action comes
     * first (an action in doubt must not read as "the page could not be made").
     */
    private String pageOrError(Outcome outcome) {
        try {
            return page(outcome.scope(), outcome.key(), null, outcome.message());
        } catch (RuntimeException e) {
            System.err.println("ledger admin: the page after \"" + outcome.message() + "\" could not be made: " + e);
            return errorPage(outcome.message() + " (the claim lists could not be loaded: "
                    + e.getClass().getSimpleName() + ")");
        }
    }

    /** What a POST did: a redirect to {@code location} with {@code message} shown there, or an error page. */
    private record Outcome(int status, String location, String message, String scope, String key) {}

    private static final String FLASH = "{flash}";

    private Outcome act(boolean resolve, Map<String, String> form) {
        String scopeText = form.get("scope");
        String keyText = form.get("key");
        try {
            Scope scope = Scope.of(required(form, "scope"));
            IdempotencyKey key = IdempotencyKey.of(required(form, "key"));
            ClaimAdmin.Note note = new ClaimAdmin.Note(required(form, "operator"), required(form, "reason"));
            String done;
            if (resolve) {
                String outcome = required(form, "outcome");
                if (outcome.equals("applied")) {
                    String answer = required(form, "answer").strip();
                    admin.resolveApplied(scope, key, answer, note);
                    done = "settled " + scope.value() + " / " + key.value() + " as applied (" + answer + ")";
                } else if (outcome.equals("refused")) {
                    Failure failure = new Failure(required(form, "code").strip(), required(form, "message"));
                    admin.resolveRefused(scope, key, failure, note);
                    done = "settled " + scope.value() + " / " + key.value() + " as refused (" + failure.code() + ")";
                } else {
                    throw new IllegalArgumentException("outcome must be applied or refused, was '" + outcome + "'");
                }
            } else {
                admin.forget(scope, key, note);
                done = "forgot " + scope.value() + " / " + key.value()
                        + ": the next request with its key runs again (its history is kept)";
            }
            return new Outcome(
                    303,
                    "/ops?flash=" + FLASH + "&scope=" + URLEncoder.encode(scope.value(), StandardCharsets.UTF_8)
                            + "&key=" + URLEncoder.encode(key.value(), StandardCharsets.UTF_8),
                    done,
                    scopeText,
                    keyText);
        } catch (ClaimAdminException e) {
            int status = switch (e.reason()) {
                case NOT_FOUND -> 404;
                case WRONG_STATE -> 409;
                case UNKNOWN_EFFECT -> 422; // as the JSON routes answer it
                case BAD_INPUT -> 400;
            };
            return new Outcome(status, null, "refused: " + e.getMessage(), scopeText, keyText);
        } catch (IllegalArgumentException e) {
            return new Outcome(400, null, "refused: " + e.getMessage(), scopeText, keyText);
        } catch (CommitOutcomeUnknownException e) {
            return new Outcome(503, null, "in doubt: " + LedgerAdmin.IN_DOUBT, scopeText, keyText);
        }
    }

    /**
     * Runs a form's submission once: the same form sent again with the same fields (a double click, or
     * a browser resending a POST whose connection dropped before the answer, as Chromium does) gets the
     * first answer instead of a second action and its refusal. The page's own idempotency key.
     */
    private Outcome once(boolean resolve, Map<String, String> form, java.util.function.Supplier<Outcome> action) {
        String id = HexFormat.of()
                .formatHex(sha256((resolve ? "resolve" : "forget") + "\0" + form)); // the fields, kept small
        CompletableFuture<Outcome> mine = new CompletableFuture<>();
        CompletableFuture<Outcome> first;
        synchronized (submissions) {
            first = submissions.putIfAbsent(id, mine);
        }
        if (first != null) {
            try {
                return first.get(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                // the first attempt failed unexpectedly or is stuck: say so rather than act twice
            }
            return new Outcome(
                    409,
                    null,
                    "this form was sent before and its answer is not known: look the claim up before sending it again",
                    form.get("scope"),
                    form.get("key"));
        }
        try {
            Outcome outcome = action.get();
            mine.complete(outcome);
            return outcome;
        } catch (RuntimeException e) {
            synchronized (submissions) {
                submissions.remove(id);
            }
            mine.completeExceptionally(e);
            throw e;
        }
    }

    /** Why a POST may come from another site; null when it may not. */
    private static String crossSite(HttpExchange exchange) {
        String site = exchange.getRequestHeaders().getFirst("Sec-Fetch-Site");
        if (site != null && !site.equals("same-origin") && !site.equals("none")) {
            return "the browser says this form came from another site (Sec-Fetch-Site: " + site + ")";
        }
        String origin = exchange.getRequestHeaders().getFirst("Origin");
        String host = exchange.getRequestHeaders().getFirst("Host");
        if (origin != null && !origin.equalsIgnoreCase("http://" + host)) {
            return "the form came from " + origin + ", not from this page (http://" + host + ")";
        }
        return null;
    }

    /**
     * Whether the Host names the loopback (the admin port is reached through a tunnel, never by
     * another name): a page of another site that rebinds its own name to 127.0.0.1 is refused.
     */
    static boolean loopbackHost(HttpExchange exchange) {
        String host = exchange.getRequestHeaders().getFirst("Host");
        if (host == null) {
            return false;
        }
        String name = host.toLowerCase(Locale.ROOT);
        if (name.startsWith("[")) {
            int end = name.indexOf(']');
            name = end < 0 ? name : name.substring(0, end + 1);
        } else if (name.contains(":")) {
            name = name.substring(0, name.indexOf(':'));
        }
        return name.equals("localhost") || name.equals("127.0.0.1") || name.equals("[::1]");
    }

    private static String required(Map<String, String> form, String name) {
        String v = form.get(name);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException(name + " is required");
        }
        return v;
    }

    private String flash(String message) {
        if (flashes.size() >= MAX_FLASHES) {
            flashes.clear(); // messages nobody came back for
        }
        String id = randomToken();
        flashes.put(id, message);
        return id;
    }

    // ------------------------------------------------------------------ the page

    private String page(String scope, String key, String flash, String error) {
        return page(scope, key, flash, error, Map.of());
    }

    /** The page; {@code query} may page the lists ({@code per-page}, {@code <list id>-after}). */
    private String page(String scope, String key, String flash, String error, Map<String, String> query) {
        StringBuilder h = new StringBuilder(16_384);
        h.append("<!doctype html><html lang=en><head><meta charset=utf-8><title>ledger operations</title>")
                .append(STYLE)
                .append("</head><body><h1>Ledger operations: ")
                .append(esc(effect))
                .append(" claims</h1>");
        if (flash != null) {
            h.append("<p class=flash id=flash role=status>").append(esc(flash)).append("</p>");
        }
        if (error != null) {
            h.append("<p class=error id=error role=alert>").append(esc(error)).append("</p>");
        }
        lookupForm(h, scope, key);
        if (scope != null && !scope.isBlank() && key != null && !key.isBlank()) {
            lookedUp(h, scope, key);
        }
        ClaimAdmin.Backlog backlog = admin.backlog();
        int perPage = perPage(query.get("per-page"));
        list(
                h,
                "needs-reconciliation",
                "Needs reconciliation",
                backlog.needingReconciliation(),
                ClaimView.State.NEEDS_RECONCILIATION,
                perPage,
                query.get("needs-reconciliation-after"));
        list(
                h,
                "in-flight",
                "In flight",
                backlog.inFlight(),
                ClaimView.State.IN_FLIGHT,
                perPage,
                query.get("in-flight-after"));
        h.append("<p class=muted>Times are UTC. The bank is asked again on every load of this page.</p>");
        return h.append("</body></html>").toString();
    }

    /** {@code per-page}: 1 to {@link #LIST_LIMIT}, else {@link #LIST_LIMIT}. */
    private static int perPage(String given) {
        try {
            int n = given == null ? LIST_LIMIT : Integer.parseInt(given.trim());
            return n >= 1 && n <= LIST_LIMIT ? n : LIST_LIMIT;
        } catch (NumberFormatException e) {
            return LIST_LIMIT;
        }
    }

    private void list(
            StringBuilder h, String id, String title, long total, ClaimView.State state, int perPage, String after) {
        ClaimAdmin.Page page;
        try {
            page = admin.list(state, effect, perPage, after);
        } catch (IllegalArgumentException e) { // an edited or stale position: from the start again
            page = admin.list(state, effect, perPage, null);
        }
        List<ClaimView> claims = page.claims();
        h.append("<section id=")
                .append(id)
                .append("><h2>")
                .append(title)
                .append(" (")
                .append(total);
        if (total > claims.size()) {
            h.append(after == null ? ", the oldest " : ", ")
                    .append(claims.size())
                    .append(" shown");
        }
        h.append(")</h2>");
        if (after != null) {
            h.append("<p><a class=first href=\"/ops?per-page=").append(perPage).append("\">from the oldest</a></p>");
        }
        if (claims.isEmpty()) {
            h.append("<p class=muted>none</p></section>");
            return;
        }
        List<String> says = bankSays(claims);
        h.append("<table><thead><tr><th>scope</th><th>key</th><th>effect</th><th>created</th>"
                + "<th>lookups / next lookup</th><th>request</th><th>downstream key</th><th>bank says</th>");
        if (state == ClaimView.State.NEEDS_RECONCILIATION) {
            h.append("<th>settle</th>");
        }
        h.append("</tr></thead><tbody>");
        for (int i = 0; i < claims.size(); i++) {
            ClaimView c = claims.get(i);
            h.append("<tr class=claim data-key=\"").append(esc(c.key().value())).append("\">");
            cell(h, "scope", c.scope().value());
            h.append("<td class=key><a href=\"/ops?scope=")
                    .append(esc(URLEncoder.encode(c.scope().value(), StandardCharsets.UTF_8)))
                    .append("&amp;key=")
                    .append(esc(URLEncoder.encode(c.key().value(), StandardCharsets.UTF_8)))
                    .append("\">")
                    .append(esc(c.key().value()))
                    .append("</a></td>");
            cell(h, "effect", c.effect());
            cell(h, "created", time(c.createdAt()) + " (" + age(c.createdAt()) + " ago)");
            cell(h, "lookups", lookups(c));
            cell(h, "request", request(c));
            cell(h, "downstream", c.downstreamKey());
            cell(h, "bank", says.get(i));
            if (state == ClaimView.State.NEEDS_RECONCILIATION) {
                h.append("<td class=settle>");
                settleForms(h, c, says.get(i));
                h.append("</td>");
            }
            h.append("</tr>");
        }
        h.append("</tbody></table>");
        if (page.next() != null) {
            h.append("<p><a class=next href=\"/ops?per-page=")
                    .append(perPage)
                    .append("&amp;")
                    .append(id)
                    .append("-after=")
                    .append(esc(URLEncoder.encode(page.next(), StandardCharsets.UTF_8)))
                    .append("\">next ")
                    .append(perPage)
                    .append(" &rarr;</a></p>");
        }
        h.append("</section>");
    }

    private void settleForms(StringBuilder h, ClaimView c, String says) {
        String found = says.startsWith("found ") ? says.substring("found ".length()) : "";
        String id = "f" + randomToken().substring(0, 12); // each form's fields named apart on one page
        h.append("<form method=post action=\"/ops/resolve\" class=applied>");
        hidden(h, c, "applied");
        if (says.equals("absent") || says.startsWith("declined: ")) {
            // the bank's own answer contradicts "applied": say so where the operator is about to record it
            h.append("<p class=warning>The bank says ")
                    .append(esc(says))
                    .append(": record applied only with the bank's statement showing the charge.</p>");
        }
        field(h, id + "-answer", "charge id", "answer", 200, found);
        note(h, id + "-applied");
        h.append("<button type=submit>applied</button></form>");
        h.append("<form method=post action=\"/ops/resolve\" class=refused>");
        hidden(h, c, "refused");
        // the default follows the bank's answer: its own refusal, or no record of the payout at all
        String code = "";
        String message = "";
        if (says.startsWith("declined: ")) {
            String declined = says.substring("declined: ".length());
            int space = declined.indexOf(' ');
            code = space < 0 ? declined : declined.substring(0, space);
            message = space < 0 ? "" : declined.substring(space + 1);
        } else if (says.equals("absent")) {
            code = "not_charged";
            message = "the bank has no record of this payout";
        }
        field(h, id + "-code", "code", "code", 200, code);
        field(h, id + "-message", "message", "message", 4000, message);
        note(h, id + "-refused");
        h.append("<button type=submit>refused</button></form>");
    }

    /** A required text field with its label bound to it ({@code for}), on a line of its own. */
    private static void field(StringBuilder h, String id, String label, String name, int max, String value) {
        h.append("<label for=")
                .append(id)
                .append(">")
                .append(esc(label))
                .append("</label><input id=")
                .append(id)
                .append(" name=")
                .append(name)
                .append(" required maxlength=")
                .append(max)
                .append(" value=\"")
                .append(esc(value))
                .append("\">");
    }

    private void hidden(StringBuilder h, ClaimView c, String outcome) {
        h.append("<input type=hidden name=token value=\"").append(esc(token)).append("\">");
        h.append("<input type=hidden name=submission value=\"")
                .append(randomToken())
                .append("\">");
        h.append("<input type=hidden name=scope value=\"")
                .append(esc(c.scope().value()))
                .append("\">");
        h.append("<input type=hidden name=key value=\"")
                .append(esc(c.key().value()))
                .append("\">");
        if (outcome != null) {
            h.append("<input type=hidden name=outcome value=").append(outcome).append(">");
        }
    }

    private static void note(StringBuilder h, String id) {
        field(h, id + "-operator", "operator", "operator", 255, "");
        field(h, id + "-reason", "reason", "reason", 1000, "");
    }

    private void lookupForm(StringBuilder h, String scope, String key) {
        h.append("<form method=get action=\"/ops\" id=lookup class=lookup>");
        field(h, "lookup-scope", "scope", "scope", 255, scope == null ? "" : scope);
        field(h, "lookup-key", "key", "key", 255, key == null ? "" : key);
        h.append("<button type=submit>look up</button></form>");
    }

    private void lookedUp(StringBuilder h, String scopeText, String keyText) {
        h.append("<section id=claim><h2>")
                .append(esc(scopeText))
                .append(" / ")
                .append(esc(keyText))
                .append("</h2>");
        Optional<ClaimView> found;
        try {
            found = admin.inspect(Scope.of(scopeText), IdempotencyKey.of(keyText));
        } catch (IllegalArgumentException e) {
            h.append("<p class=error>").append(esc(e.getMessage())).append("</p></section>");
            return;
        }
        if (found.isEmpty()) {
            List<ClaimView.Action> history = admin.history(Scope.of(scopeText), IdempotencyKey.of(keyText));
            h.append("<p class=state id=claim-state>no claim for this key (never made, purged or forgotten)</p>");
            if (!history.isEmpty()) {
                h.append("<h3>history</h3><p class=muted>What operators recorded on this key, kept after the claim"
                        + " was forgotten.</p>");
                history(h, history);
            }
            h.append("</section>");
            return;
        }
        ClaimView c = found.get();
        h.append("<p class=state id=claim-state>").append(esc(c.state().tag())).append("</p><dl>");
        dt(h, "operation", c.operation());
        dt(h, "created", time(c.createdAt()));
        dt(h, "settled or handed over", time(c.completedAt()));
        dt(h, "expires", time(c.expiresAt()) + (c.expired() ? " (expired)" : ""));
        dt(h, "lookups / next lookup", lookups(c));
        dt(h, "request", request(c));
        dt(h, "downstream key", c.downstreamKey());
        dt(h, "answer", c.answerText());
        dt(
                h,
                "failure",
                c.failure() == null
                        ? null
                        : c.failure().code() + ": " + c.failure().message());
        dt(h, "could not decode", c.undecodable());
        boolean unsettled = c.state() == ClaimView.State.IN_FLIGHT || c.state() == ClaimView.State.NEEDS_RECONCILIATION;
        String says =
                unsettled && c.downstreamKey() != null ? bankSays(List.of(c)).get(0) : "";
        dt(h, "bank says", says);
        h.append("</dl><h3>history</h3>");
        if (c.history().isEmpty()) {
            h.append("<p class=muted>no operator has acted on it</p>");
        } else {
            history(h, c.history());
        }
        if (c.state() == ClaimView.State.NEEDS_RECONCILIATION) {
            h.append("<h3>settle</h3><div class=settle>");
            settleForms(h, c, says);
            h.append("</div>");
        }
        if (c.state() == ClaimView.State.COMPLETED || c.state() == ClaimView.State.FAILED) {
            h.append("<h3>forget</h3><p class=muted>The next request with this key runs again: the payout would"
                    + " be made again.</p><form method=post action=\"/ops/forget\" id=forget>");
            hidden(h, c, null);
            note(h, "forget");
            h.append("<button type=submit>forget</button></form>");
        }
        h.append("</section>");
    }

    private static void history(StringBuilder h, List<ClaimView.Action> history) {
        h.append("<table id=history><thead><tr><th>at</th><th>action</th><th>operator</th><th>reason</th>"
                + "</tr></thead><tbody>");
        for (ClaimView.Action a : history) {
            h.append("<tr>");
            cell(h, "at", time(a.at()));
            cell(h, "action", a.action());
            cell(h, "operator", a.operator());
            cell(h, "reason", a.reason());
            h.append("</tr>");
        }
        h.append("</tbody></table>");
    }

    /** What the bank says of each claim, asked concurrently, each within {@link #BANK_WAIT}. */
    private List<String> bankSays(List<ClaimView> claims) {
        List<String> says = new ArrayList<>(claims.size());
        try (ExecutorService asking = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Remote.Lookup<String>>> answers = new ArrayList<>();
            for (ClaimView c : claims) {
                answers.add(c.downstreamKey() == null ? null : asking.submit(() -> bank.lookup(c.downstreamKey())));
            }
            long until = System.nanoTime() + BANK_WAIT.toNanos();
            for (Future<Remote.Lookup<String>> answer : answers) {
                says.add(answer == null ? "unknown: no downstream key" : said(answer, until));
            }
            asking.shutdownNow(); // the ones still asking: their answer is not waited for
        }
        return says;
    }

    private static String said(Future<Remote.Lookup<String>> answer, long until) {
        try {
            Remote.Lookup<String> lookup = answer.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
            return switch (lookup) {
                case Remote.Lookup.Found<String> f -> "found " + f.result();
                case Remote.Lookup.Refused<String> r ->
                    "declined: " + r.failure().code() + " " + r.failure().message();
                case Remote.Lookup.Absent<String> a -> "absent";
                case Remote.Lookup.Unknown<String> u -> "unknown: " + u.reason();
            };
        } catch (java.util.concurrent.TimeoutException e) {
            answer.cancel(true);
            return "unknown: no answer within " + BANK_WAIT.toSeconds() + " s";
        } catch (java.util.concurrent.ExecutionException e) {
            return "unknown: " + e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown: interrupted";
        }
    }

    private static String request(ClaimView c) {
        if (c.request() instanceof Payouts.PayoutRequest r) {
            return r.amount().toPlainString() + " to " + r.destination() + " (from account " + r.account() + ")";
        }
        if (c.request() != null) {
            return String.valueOf(c.request());
        }
        return c.undecodable() != null ? "undecodable: " + c.undecodable() : "";
    }

    private static String lookups(ClaimView c) {
        String n = c.lookups() == null ? "" : c.lookups() + " unanswered";
        if (c.state() == ClaimView.State.NEEDS_RECONCILIATION) {
            // never looked up again: the schedule ran out, an operator decides now
            return n + (n.isEmpty() ? "" : "; ") + "handed over"
                    + (c.completedAt() == null ? "" : " at " + time(c.completedAt()))
                    + ": no more lookups";
        }
        String next = c.nextLookupAt() == null ? "" : "next " + time(c.nextLookupAt());
        return n.isEmpty() || next.isEmpty() ? n + next : n + ", " + next;
    }

    private static String time(Instant at) {
        return at == null ? "" : at.truncatedTo(ChronoUnit.SECONDS).toString().replace('T', ' ');
    }

    private static String age(Instant at) {
        Duration d = Duration.between(at, Instant.now());
        if (d.isNegative() || d.toSeconds() < 60) {
            return Math.max(0, d.toSeconds()) + " s";
        }
        return d.toHours() > 0 ? d.toHours() + " h " + d.toMinutesPart() + " min" : d.toMinutes() + " min";
    }

    private static void cell(StringBuilder h, String cls, String text) {
        h.append("<td class=").append(cls).append(">").append(esc(text)).append("</td>");
    }

    private static void dt(StringBuilder h, String term, String text) {
        if (text != null && !text.isEmpty()) {
            h.append("<dt>")
                    .append(esc(term))
                    .append("</dt><dd>")
                    .append(esc(text))
                    .append("</dd>");
        }
    }

    /** The text, HTML-escaped for an element's content or a double- or single-quoted attribute. */
    static String esc(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            switch (ch) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(ch);
            }
        }
        return out.toString();
    }

    // Fits a 1366 px wide window: the tables take the page's width and wrap long values (keys, downstream
    // keys, requests) anywhere; each form is a grid of label and field, one pair a line, its button under.
    private static final String STYLE = "<style>body{font:14px system-ui,sans-serif;margin:1em;color:#222}"
            + "table{border-collapse:collapse;margin:.5em 0 1.5em;width:100%;table-layout:fixed}"
            + "th,td{border:1px solid #ccc;padding:.3em .4em;vertical-align:top;text-align:left;"
            + "overflow-wrap:anywhere}th{background:#f3f3f3}th:last-child{width:17em}"
            + "form{margin:.2em 0 .6em;display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em .4em;"
            + "align-items:center;max-width:32em}form button,form p{grid-column:1/-1;justify-self:start;margin:0}"
            + "input{min-width:0;width:100%;box-sizing:border-box}"
            + ".warning{background:#fff4d6;border:1px solid #d9a400;padding:.3em}"
            + ".flash{background:#e7f6e7;border:1px solid #7c7;padding:.5em}"
            + ".error{background:#fbe9e9;border:1px solid #d77;padding:.5em}.muted{color:#777}"
            + "td.downstream{font-family:monospace;font-size:12px}.state{font-weight:bold}"
            + "dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em}"
            + "dd{margin:0;overflow-wrap:anywhere}</style>";

    // ------------------------------------------------------------------ HTTP

    private String errorPage(String message) {
        return "<!doctype html><html lang=en><head><meta charset=utf-8><title>ledger operations</title>" + STYLE
                + "</head><body><p class=error id=error role=alert>" + esc(message)
                + "</p><p><a href=\"/ops\">operations</a></p></body></html>";
    }

    private static byte[] readBody(HttpExchange exchange) throws IOException {
        try (InputStream in = exchange.getRequestBody()) {
            byte[] body = in.readNBytes(MAX_FORM_BYTES + 1);
            return body.length > MAX_FORM_BYTES ? null : body;
        }
    }

    /** An {@code application/x-www-form-urlencoded} body or query, the first value of each name. */
    static Map<String, String> form(String encoded) {
        Map<String, String> values = new LinkedHashMap<>();
        if (encoded == null || encoded.isEmpty()) {
            return values;
        }
        for (String pair : encoded.split("&")) {
            int eq = pair.indexOf('=');
            String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            values.putIfAbsent(name, value);
        }
        return values;
    }

    private static void headers(HttpExchange exchange) {
        var h = exchange.getResponseHeaders();
        h.set("Content-Security-Policy", CSP);
        h.set("X-Frame-Options", "DENY");
        h.set("X-Content-Type-Options", "nosniff");
        // not no-referrer: under it Chromium sends "Origin: null" with the page's own forms, which the check
        // above must refuse; same-origin keeps the page's URLs (scopes, keys) from other sites all the same
        h.set("Referrer-Policy", "same-origin");
        h.set("Cache-Control", "no-store");
    }

    private static void send(HttpExchange exchange, int status, String html) throws IOException {
        headers(exchange);
        exchange.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
        byte[] body = html.getBytes(StandardCharsets.UTF_8);
        boolean head = exchange.getRequestMethod().equals("HEAD");
        exchange.sendResponseHeaders(status, head ? -1 : body.length);
        if (!head) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    private static void redirect(HttpExchange exchange, String to) throws IOException {
        headers(exchange);
        exchange.getResponseHeaders().set("Location", URI.create(to).toString());
        exchange.sendResponseHeaders(303, -1);
    }

    private static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    private String randomToken() {
        byte[] bytes = new byte[32];
        random.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }
}
