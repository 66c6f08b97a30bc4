package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimView;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The operations page over HTTP, on an effect of its own whose remote never answers (so its claims
 * end needing reconciliation): what it shows and escapes, its actions and refusals, and the
 * cross-site requests it turns away. The browser test runs it inside the ledger.
 */
@DatabaseTest
class OperationsPageTest {

    static final String HOSTILE = "<script>alert(1)</script>\"'&";
    static HikariDataSource pool;
    static String schema;
    static ExternalEffect<Payouts.PayoutRequest, String> effect;
    static ClaimAdmin admin;
    static OperationsPage page;
    static HttpServer server;
    static final Map<String, Remote.Lookup<String>> BANK = new ConcurrentHashMap<>();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        TestDatabase db = TestDatabase.get();
        schema = db.schema() + "_ops_page";
        db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        pool = db.newPool(4);
        IdempotencySchema.migrate(pool, schema);
        DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES);
        Remote<Payouts.PayoutRequest, String> lost = new Remote<>() {
            @Override
            public Reply<String> call(Intent<Payouts.PayoutRequest> intent, Instant deadline) throws Exception {
                throw new IOException("the bank's answer was lost");
            }

            @Override
            public Lookup<String> lookup(Intent<Payouts.PayoutRequest> intent) {
                return Lookup.unknown("the bank's lookup does not answer");
            }
        };
        effect = ExternalEffect.builder(
                        dsl, "payout", ResultCodec.json(Payouts.PayoutRequest.class), ResultCodec.utf8(), lost)
                .schema(schema)
                .lease(Duration.ofMillis(50))
                .lookupSchedule(List.of(Duration.ofMillis(1)))
                .build();
        admin = ClaimAdmin.builder(dsl).schema(schema).effect(effect).build();
        page = new OperationsPage(admin, "payout", key -> {
            Remote.Lookup<String> said = BANK.get(key);
            if (said == null) {
                throw new IOException("the bank is down");
            }
            return said;
        });
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/ops", page::handle);
        server.start();
    }

    @AfterAll
    static void stop() {
        server.stop(0);
        pool.close();
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }

    /** A claim of {@code tenant} that needs reconciliation, with {@code destination} in its request. */
    static ClaimView needingReconciliation(String tenant, String key, String destination) throws Exception {
        Scope scope = Scope.of(tenant);
        IdempotencyKey k = IdempotencyKey.of(key);
        effect.run(
                scope,
                k,
                Fingerprint.sha256(key),
                new Payouts.PayoutRequest(UUID.randomUUID(), new BigDecimal("12.50"), destination));
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < until) {
            ClaimView c = admin.inspect(scope, k).orElseThrow();
            if (c.state() == ClaimView.State.NEEDS_RECONCILIATION) {
                return c;
            }
            Thread.sleep(60);
            effect.recovery().recover(100);
        }
        throw new AssertionError("the claim never needed reconciliation");
    }

    record Reply(int status, String body, HttpResponse<String> response) {
        String header(String name) {
            return response.headers().firstValue(name).orElse(null);
        }
    }

    static Reply get(String pathAndQuery) throws Exception {
        HttpResponse<String> r = HTTP.send(
                HttpRequest.newBuilder(URI.create(base() + pathAndQuery)).build(),
                HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.body(), r);
    }

    static Reply post(String path, Map<String, String> form, String... headers) throws Exception {
        String body = form.entrySet().stream()
                .map(e -> URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8) + "="
                        + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
                .collect(Collectors.joining("&"));
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base() + path))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.body(), r);
    }

    static String base() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    static Map<String, String> form(String... pairs) {
        Map<String, String> form = new LinkedHashMap<>();
        form.put("token", page.token());
        for (int i = 0; i < pairs.length; i += 2) {
            form.put(pairs[i], pairs[i + 1]);
        }
        return form;
    }

    @Test
    void listsClaimsEscapedWithWhatTheBankSaysUnderAStrictPolicy() throws Exception {
        ClaimView hostile = needingReconciliation("tenant-x", "key-" + UUID.randomUUID(), HOSTILE);
        BANK.put(hostile.downstreamKey(), Remote.Lookup.found("ch_" + "<b>"));
        Reply r = get("/ops");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.header("Content-Type")).isEqualTo("text/html; charset=utf-8");
        assertThat(r.header("Content-Security-Policy"))
                .contains("default-src 'none'", "form-action 'self'", "frame-ancestors 'none'");
        assertThat(r.header("X-Frame-Options")).isEqualTo("DENY");
        assertThat(r.body())
                .contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;")
                .doesNotContain("<script>alert(1)")
                .contains("found ch_&lt;b&gt;")
                .contains("value=\"ch_&lt;b&gt;\"")
                .contains(hostile.key().value())
                .contains(hostile.downstreamKey());
    }

    @Test
    void aClaimInFlightIsListedWithoutFormsToSettleIt() throws Exception {
        String key = "key-" + UUID.randomUUID();
        effect.run(
                Scope.of("tenant-f"),
                IdempotencyKey.of(key),
                Fingerprint.sha256(key),
                new Payouts.PayoutRequest(UUID.randomUUID(), new BigDecimal("1.00"), "BR 4"));
        ClaimView c =
                admin.inspect(Scope.of("tenant-f"), IdempotencyKey.of(key)).orElseThrow();
        assertThat(c.state()).isEqualTo(ClaimView.State.IN_FLIGHT);
        BANK.put(c.downstreamKey(), Remote.Lookup.absent());
        String body = get("/ops").body();
        String inFlight = body.substring(body.indexOf("<section id=in-flight>"));
        String row = inFlight.substring(inFlight.indexOf("data-key=\"" + key + "\""));
        row = row.substring(0, row.indexOf("</tr>"));
        assertThat(row).contains("<td class=bank>absent</td>", "1.00 to BR 4").doesNotContain("<form");
    }

    @Test
    void theBankDownIsUnknownWithTheReason() throws Exception {
        ClaimView c = needingReconciliation("tenant-d", "key-" + UUID.randomUUID(), "BR 1");
        Reply r = get("/ops?scope=tenant-d&key=" + c.key().value());
        assertThat(r.body()).contains("unknown: java.io.IOException: the bank is down");
        assertThat(r.body()).contains("needs_reconciliation");
    }

    @Test
    void settlesRefusesWhatTheStateForbidsAndForgets() throws Exception {
        ClaimView c = needingReconciliation("tenant-s", "key-" + UUID.randomUUID(), "BR 2");
        String key = c.key().value();
        Reply forgetTooEarly =
                post("/ops/forget", form("scope", "tenant-s", "key", key, "operator", "ana", "reason", "too early"));
        assertThat(forgetTooEarly.status()).isEqualTo(409);
        assertThat(forgetTooEarly.body()).contains("cannot forget the claim: it needs reconciliation");

        Reply noReason = post(
                "/ops/resolve",
                form("scope", "tenant-s", "key", key, "outcome", "applied", "answer", "ch_1", "operator", "ana"));
        assertThat(noReason.status()).isEqualTo(400);
        assertThat(noReason.body()).contains("reason is required");

        Reply applied = post(
                "/ops/resolve",
                form(
                        "scope",
                        "tenant-s",
                        "key",
                        key,
                        "outcome",
                        "applied",
                        "answer",
                        "ch_1",
                        "operator",
                        "ana",
                        "reason",
                        "on the statement"));
        assertThat(applied.status()).isEqualTo(303);
        String location = applied.header("Location");
        assertThat(location).startsWith("/ops?flash=");
        Reply after = get(location);
        assertThat(after.body())
                .contains("settled tenant-s / " + key + " as applied (ch_1)")
                .contains("<p class=state id=claim-state>completed</p>")
                .contains("resolved_applied")
                .contains("on the statement")
                .contains("id=forget");
        assertThat(get(location).body()).as("the message is shown once").doesNotContain("id=flash");

        Reply again = post(
                "/ops/resolve",
                form(
                        "scope",
                        "tenant-s",
                        "key",
                        key,
                        "outcome",
                        "refused",
                        "code",
                        "x",
                        "message",
                        "y",
                        "operator",
                        "bo",
                        "reason",
                        "stale page"));
        assertThat(again.status()).isEqualTo(409);
        assertThat(again.body()).contains("cannot resolve the claim: it is settled already");

        Reply forgotten = post(
                "/ops/forget", form("scope", "tenant-s", "key", key, "operator", "ana", "reason", "client reuses it"));
        assertThat(forgotten.status()).isEqualTo(303);
        assertThat(get(forgotten.header("Location")).body()).contains("forgot tenant-s / " + key);
        Reply gone = post("/ops/forget", form("scope", "tenant-s", "key", key, "operator", "ana", "reason", "twice"));
        assertThat(gone.status()).isEqualTo(404);
        assertThat(gone.body()).contains("there is no claim for this key");
    }

    @Test
    void anActionInDoubtIsSaidSoEvenWhenTheDatabaseIsGoneAfterIt() throws Exception {
        // a claim to forget, made through the page's own admin
        Scope scope = Scope.of("tenant-d");
        String key = "key-" + UUID.randomUUID();
        ClaimView settled = needingReconciliation(scope.value(), key, "BR 9");
        admin.resolveApplied(scope, settled.key(), "ch_9", new ClaimAdmin.Note("ana", "seen in the statement"));
        // a second page whose database loses the forget's COMMIT (the forget's read is the first
        // connection, its delete the second) and is unreachable after it
        java.util.concurrent.atomic.AtomicInteger acquired = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean gone = new java.util.concurrent.atomic.AtomicBoolean();
        org.jooq.impl.DataSourceConnectionProvider real = new org.jooq.impl.DataSourceConnectionProvider(pool);
        DSLContext flaky = DSL.using(
                new org.jooq.ConnectionProvider() {
                    @Override
                    public java.sql.Connection acquire() {
                        if (gone.get()) {
                            throw new org.jooq.exception.DataAccessException(
                                    "the database is unreachable",
                                    new java.sql.SQLException("Connection refused", "08001"));
                        }
                        java.sql.Connection c = real.acquire();
                        return acquired.incrementAndGet() == 2 ? losingItsCommit(c, gone) : c;
                    }

                    @Override
                    public void release(java.sql.Connection connection) {
                        real.release(connection instanceof LosesCommit l ? l.real() : connection);
                    }
                },
                SQLDialect.POSTGRES);
        OperationsPage doubtful = new OperationsPage(
                ClaimAdmin.builder(flaky).schema(schema).effect(effect).build(), "payout", k -> {
                    throw new IOException("the bank is down");
                });
        HttpServer second = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        second.createContext("/ops", doubtful::handle);
        second.start();
        try {
            Map<String, String> f = new LinkedHashMap<>(
                    form("scope", scope.value(), "key", key, "operator", "ana", "reason", "a wrong answer"));
            f.put("token", doubtful.token());
            String body = f.entrySet().stream()
                    .map(e -> URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8) + "="
                            + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
                    .collect(Collectors.joining("&"));
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create(
                                    "http://127.0.0.1:" + second.getAddress().getPort() + "/ops/forget"))
                            .header("Content-Type", "application/x-www-form-urlencoded")
                            .POST(HttpRequest.BodyPublishers.ofString(body))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());

            assertThat(gone).as("the forget's COMMIT was lost").isTrue();
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.body())
                    .as("the outcome, not the page's own failure")
                    .contains("in doubt")
                    .contains("look the claim up before trying again")
                    .doesNotContain("the page could not be made");
        } finally {
            second.stop(0);
        }
        assertThat(admin.inspect(scope, settled.key()))
                .as("the lost COMMIT rolled back here: the claim is still there")
                .hasValueSatisfying(v -> assertThat(v.answer()).isEqualTo("ch_9"));
    }

    /** A connection whose COMMIT is rolled back and reported lost in flight; the database is gone after it. */
    interface LosesCommit {
        java.sql.Connection real();
    }

    static java.sql.Connection losingItsCommit(
            java.sql.Connection real, java.util.concurrent.atomic.AtomicBoolean gone) {
        return (java.sql.Connection) java.lang.reflect.Proxy.newProxyInstance(
                OperationsPageTest.class.getClassLoader(),
                new Class<?>[] {java.sql.Connection.class, LosesCommit.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("real") && method.getDeclaringClass() == LosesCommit.class) {
                        return real;
                    }
                    if (method.getName().equals("commit")) {
                        real.rollback();
                        gone.set(true);
                        throw new java.sql.SQLException("An I/O error occurred while sending to the backend.", "08006");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Test
    void theSameFormSentTwiceActsOnceAndAnswersAlike() throws Exception {
        ClaimView c = needingReconciliation("tenant-twice", "key-" + UUID.randomUUID(), "BR 5");
        Map<String, String> f = form(
                "submission",
                "s-" + UUID.randomUUID(),
                "scope",
                "tenant-twice",
                "key",
                c.key().value(),
                "outcome",
                "applied",
                "answer",
                "ch_2",
                "operator",
                "ana",
                "reason",
                "double click");
        Reply first = post("/ops/resolve", f);
        Reply again = post("/ops/resolve", f);
        assertThat(first.status()).isEqualTo(303);
        assertThat(again.status()).as("the first answer, not a 409").isEqualTo(303);
        assertThat(get(again.header("Location")).body()).contains("as applied (ch_2)");
        assertThat(admin.inspect(Scope.of("tenant-twice"), c.key())
                        .orElseThrow()
                        .history())
                .hasSize(1);
        Map<String, String> edited = new LinkedHashMap<>(f);
        edited.put("reason", "another reason");
        assertThat(post("/ops/resolve", edited).status())
                .as("the same form with other fields is acted on: and refused")
                .isEqualTo(409);
        assertThat(get("/ops").body()).contains("name=submission value=");
    }

    @Test
    void refusedWithACodeAndMessage() throws Exception {
        ClaimView c = needingReconciliation("tenant-r", "key-" + UUID.randomUUID(), "BR 3");
        Reply refused = post(
                "/ops/resolve",
                form(
                        "scope",
                        "tenant-r",
                        "key",
                        c.key().value(),
                        "outcome",
                        "refused",
                        "code",
                        "bank_declined",
                        "message",
                        "not on the statement",
                        "operator",
                        "ana",
                        "reason",
                        "bank says no"));
        assertThat(refused.status()).isEqualTo(303);
        assertThat(get(refused.header("Location")).body())
                .contains("<p class=state id=claim-state>failed</p>")
                .contains("bank_declined: not on the statement");
    }

    @Test
    void crossSiteRequestsAreForbidden() throws Exception {
        Map<String, String> f = form("scope", "t", "key", "k", "operator", "o", "reason", "r");
        Map<String, String> noToken = new LinkedHashMap<>(f);
        noToken.remove("token");
        assertThat(post("/ops/forget", noToken).status()).isEqualTo(403);
        Map<String, String> wrongToken = new LinkedHashMap<>(f);
        String token = page.token();
        // one character changed, never to itself (a random token starts with 'x' one time in 64)
        wrongToken.put("token", (token.charAt(0) == 'x' ? "y" : "x") + token.substring(1));
        assertThat(wrongToken.get("token")).isNotEqualTo(token);
        assertThat(post("/ops/forget", wrongToken).status()).isEqualTo(403);
        assertThat(post("/ops/forget", f, "Origin", "https://evil.example").status())
                .isEqualTo(403);
        assertThat(post("/ops/forget", f, "Origin", "null").status())
                .as("an opaque origin (a sandboxed frame, a data: page)")
                .isEqualTo(403);
        assertThat(get("/ops").header("Referrer-Policy"))
                .as("not no-referrer: Chromium would send the page's own forms with Origin: null")
                .isEqualTo("same-origin");
        assertThat(post("/ops/forget", f, "Sec-Fetch-Site", "cross-site").status())
                .isEqualTo(403);
        assertThat(post("/ops/forget", f, "Origin", base(), "Sec-Fetch-Site", "same-origin")
                        .status())
                .as("the page's own form passes the checks, and the claim is not there")
                .isEqualTo(404);
        assertThat(rawGet("evil.example:" + server.getAddress().getPort(), "/ops"))
                .startsWith("HTTP/1.1 403");
        assertThat(rawGet("localhost:12345", "/ops")).startsWith("HTTP/1.1 200");
        assertThat(get("/ops/forget").status()).isEqualTo(405);
        assertThat(rawGet("localhost", "/ops?scope=%zz")).startsWith("HTTP/1.1 400");
    }

    /** A GET with the given Host header and raw path (which HttpClient does not let a caller send). */
    static String rawGet(String host, String path) throws IOException {
        return rawGet(server.getAddress().getPort(), host, path);
    }

    /** {@link #rawGet(String, String)} to another port of 127.0.0.1. */
    static String rawGet(int port, String host, String path) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            OutputStream out = s.getOutputStream();
            out.write(("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
