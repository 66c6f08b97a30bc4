package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

@DatabaseTest
class LedgerHttpTest {

    static final String TOKEN_A = "token-of-a";
    static final String TOKEN_B = "token-of-b";
    static final ObjectMapper JSON = new ObjectMapper();
    static LedgerServer server;
    static HttpClient http;

    @BeforeAll
    static void start() throws Exception {
        server = LedgerServer.startFresh(
                LedgerFixture.args("http", "--port=0", "--tokens=" + TOKEN_A + "=tenant-a," + TOKEN_B + "=tenant-b"));
        http = HttpClient.newHttpClient();
    }

    @AfterAll
    static void stop() {
        server.close();
        LedgerFixture.dropSchema("http");
    }

    record Reply(int status, HttpResponse<String> response) {
        JsonNode json() throws Exception {
            return JSON.readTree(response.body());
        }

        String header(String name) {
            return response.headers().firstValue(name).orElse(null);
        }
    }

    static Reply get(String token, String path) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .GET();
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r);
    }

    static Reply post(String token, String key, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .header("Content-Type", "application/json");
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r);
    }

    static String key() {
        return UUID.randomUUID().toString();
    }

    static String openAccount(String token, String currency) throws Exception {
        Reply r = post(token, key(), "/accounts", "{\"currency\":\"" + currency + "\"}");
        assertThat(r.status()).isEqualTo(201);
        return r.json().get("id").asText();
    }

    static void deposit(String token, String account, String amount) throws Exception {
        assertThat(post(token, key(), "/accounts/" + account + "/deposits", "{\"amount\":\"" + amount + "\"}")
                        .status())
                .isEqualTo(201);
    }

    static String balance(String token, String account) throws Exception {
        return get(token, "/accounts/" + account).json().get("balance").asText();
    }

    private static void assertProblem(Reply r, int status, String code) throws Exception {
        assertThat(r.status()).isEqualTo(status);
        assertThat(r.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(r.json().get("status").asInt()).isEqualTo(status);
        if (code != null) {
            assertThat(r.json().get("type").asText()).endsWith(code);
        }
    }

    @Test
    void answersHealth() throws Exception {
        assertThat(get(null, "/health").status()).isEqualTo(200);
    }

    @Test
    void refusesRequestsWithoutAKnownTokenWith401() throws Exception {
        assertProblem(get(null, "/accounts/" + UUID.randomUUID()), 401, "unauthenticated");
        assertProblem(post("wrong-token", key(), "/accounts", "{\"currency\":\"BRL\"}"), 401, "unauthenticated");
    }

    @Test
    void opensAnAccountAndReplaysTheSameAnswerForTheSameKeyEvenReserialised() throws Exception {
        String key = key();
        Reply first = post(TOKEN_A, key, "/accounts", "{\"currency\":\"BRL\"}");
        Reply again = post(TOKEN_A, "\"" + key + "\"", "/accounts", "{ \"currency\" : \"BRL\" }\n");

        assertThat(first.status()).isEqualTo(201);
        assertThat(first.json().get("balance").asText()).isEqualTo("0.00");
        assertThat(first.header("Location"))
                .isEqualTo("/accounts/" + first.json().get("id").asText());
        assertThat(first.header("Idempotent-Replayed")).isNull();
        assertThat(again.status()).isEqualTo(201);
        assertThat(again.response().body()).isEqualTo(first.response().body());
        assertThat(again.header("Location")).isEqualTo(first.header("Location"));
        assertThat(again.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(get(TOKEN_A, first.header("Location")).status()).isEqualTo(200);
    }

    @Test
    void refusesAKeyReusedWithAnotherRequestWith422() throws Exception {
        String key = key();
        post(TOKEN_A, key, "/accounts", "{\"currency\":\"BRL\"}");
        assertProblem(post(TOKEN_A, key, "/accounts", "{\"currency\":\"USD\"}"), 422, "idempotency-key-reused");
    }

    @Test
    void refusesAMissingOrInvalidKeyWith400BeforeAnySql() throws Exception {
        Reply missing = post(TOKEN_A, null, "/accounts", "{\"currency\":\"BRL\"}");
        assertProblem(missing, 400, "invalid-idempotency-key");
        assertThat(missing.json().get("reason").asText()).isEqualTo("MISSING");
        Reply tooLong = post(TOKEN_A, "k".repeat(256), "/accounts", "{\"currency\":\"BRL\"}");
        assertThat(tooLong.json().get("reason").asText()).isEqualTo("TOO_LONG");
        assertProblem(post(TOKEN_A, "?1", "/accounts", "{\"currency\":\"BRL\"}"), 400, "invalid-idempotency-key");
    }

    @Test
    void refusesABodyOver64KibWith413AndWritesNothing() throws Exception {
        String key = key();
        String huge = "{\"currency\":\"BRL\",\"pad\":\"" + "x".repeat(70_000) + "\"}";
        assertProblem(post(TOKEN_A, key, "/accounts", huge), 413, "body_too_large");
        assertThat(countClaims(key)).isZero();
    }

    @Test
    void recordsABodyThatIsNotJsonAsA400AndReplaysIt() throws Exception {
        String key = key();
        Reply first = post(TOKEN_A, key, "/accounts", "{\"currency\":");
        Reply again = post(TOKEN_A, key, "/accounts", "{\"currency\":");
        assertProblem(first, 400, "invalid_json");
        assertThat(again.response().body()).isEqualTo(first.response().body());
        assertThat(again.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(countClaims(key)).isEqualTo(1);
    }

    @Test
    void recordsAnInvalidRequestAsA400() throws Exception {
        assertProblem(post(TOKEN_A, key(), "/accounts", "{\"currency\":\"brl\"}"), 400, "invalid_request");
        assertProblem(post(TOKEN_A, key(), "/accounts", "[1,2]"), 400, "invalid_request");
        String account = openAccount(TOKEN_A, "BRL");
        assertProblem(
                post(TOKEN_A, key(), "/accounts/" + account + "/deposits", "{\"amount\":\"10.5\"}"),
                400,
                "invalid_request");
        assertProblem(
                post(TOKEN_A, key(), "/accounts/" + account + "/deposits", "{\"amount\":\"0.00\"}"),
                400,
                "invalid_request");
    }

    @Test
    void depositsAndTransfersMoveMoneyAndRecordInsufficientFundsEvenAfterADeposit() throws Exception {
        String alice = openAccount(TOKEN_A, "BRL");
        String bob = openAccount(TOKEN_A, "BRL");
        deposit(TOKEN_A, alice, "100.00");

        Reply moved = post(
                TOKEN_A,
                key(),
                "/transfers",
                "{\"from\":\"" + alice + "\",\"to\":\"" + bob + "\",\"amount\":\"30.00\"}");
        assertThat(moved.status()).isEqualTo(201);
        assertThat(moved.json().get("amount").asText()).isEqualTo("30.00");
        assertThat(moved.json().get("currency").asText()).isEqualTo("BRL");
        assertThat(moved.header("Location"))
                .isEqualTo("/transfers/" + moved.json().get("id").asText());
        assertThat(get(TOKEN_A, moved.header("Location")).json().get("from").asText())
                .isEqualTo(alice);
        assertThat(balance(TOKEN_A, alice)).isEqualTo("70.00");
        assertThat(balance(TOKEN_A, bob)).isEqualTo("30.00");

        String key = key();
        String body = "{\"from\":\"" + alice + "\",\"to\":\"" + bob + "\",\"amount\":\"500.00\"}";
        Reply refused = post(TOKEN_A, key, "/transfers", body);
        deposit(TOKEN_A, alice, "1000.00");
        Reply stillRefused = post(TOKEN_A, key, "/transfers", body);
        assertProblem(refused, 422, "insufficient_funds");
        assertThat(stillRefused.status()).isEqualTo(422);
        assertThat(stillRefused.response().body()).isEqualTo(refused.response().body());
        assertThat(stillRefused.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(balance(TOKEN_A, alice)).isEqualTo("1070.00");
        assertThat(sumOfBalances("tenant-a", "BRL")).isZero();
    }

    @Test
    void refusesACurrencyMismatchWith422AndAnUnknownAccountWith404() throws Exception {
        String brl = openAccount(TOKEN_A, "BRL");
        String usd = openAccount(TOKEN_A, "USD");
        deposit(TOKEN_A, brl, "50.00");
        assertProblem(
                post(
                        TOKEN_A,
                        key(),
                        "/transfers",
                        "{\"from\":\"" + brl + "\",\"to\":\"" + usd + "\",\"amount\":\"1.00\"}"),
                422,
                "currency_mismatch");
        String nobody = UUID.randomUUID().toString();
        String key = key();
        String body = "{\"from\":\"" + brl + "\",\"to\":\"" + nobody + "\",\"amount\":\"1.00\"}";
        assertProblem(post(TOKEN_A, key, "/transfers", body), 404, "account_not_found");
        assertThat(post(TOKEN_A, key, "/transfers", body).header("Idempotent-Replayed"))
                .isEqualTo("true");
        assertProblem(
                post(TOKEN_A, key(), "/accounts/" + nobody + "/deposits", "{\"amount\":\"1.00\"}"),
                404,
                "account_not_found");
        assertProblem(get(TOKEN_A, "/accounts/not-a-uuid"), 404, null);
    }

    @Test
    void keepsTenantsApart() throws Exception {
        String account = openAccount(TOKEN_A, "BRL");
        deposit(TOKEN_A, account, "10.00");
        assertProblem(get(TOKEN_B, "/accounts/" + account), 404, "account_not_found");
        assertProblem(
                post(TOKEN_B, key(), "/accounts/" + account + "/deposits", "{\"amount\":\"1.00\"}"),
                404,
                "account_not_found");

        String key = key();
        Reply mine = post(TOKEN_A, key, "/accounts", "{\"currency\":\"BRL\"}");
        Reply theirs = post(TOKEN_B, key, "/accounts", "{\"currency\":\"BRL\"}");
        assertThat(theirs.status()).isEqualTo(201);
        assertThat(theirs.header("Idempotent-Replayed"))
                .as("another tenant's key is another intent")
                .isNull();
        assertThat(theirs.json().get("id").asText())
                .isNotEqualTo(mine.json().get("id").asText());
        assertProblem(get(TOKEN_B, "/transfers/" + UUID.randomUUID()), 404, "transfer_not_found");
    }

    @Test
    void answers409WithRetryAfterWhileTheFirstRequestIsStillRunning() throws Exception {
        String alice = openAccount(TOKEN_A, "BRL");
        String bob = openAccount(TOKEN_A, "BRL");
        deposit(TOKEN_A, alice, "100.00");
        String key = key();
        String body = "{\"from\":\"" + alice + "\",\"to\":\"" + bob + "\",\"amount\":\"1.00\"}";
        TestDatabase db = TestDatabase.get();
        try (Connection blocker = db.connect()) {
            blocker.setAutoCommit(false);
            try (Statement s = blocker.createStatement()) {
                s.execute("SELECT 1 FROM " + server.schema() + ".account WHERE id = '" + alice + "' FOR UPDATE");
            }
            // the first request claims the key, then waits on the locked account
            CompletableFuture<Reply> first = CompletableFuture.supplyAsync(() -> {
                try {
                    return post(TOKEN_A, key, "/transfers", body);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            waitForClaimHolder();
            Reply duplicate = post(TOKEN_A, key, "/transfers", body);
            assertProblem(duplicate, 409, "request-in-progress");
            assertThat(duplicate.header("Retry-After")).isEqualTo("1");
            blocker.rollback();
            assertThat(first.get().status()).isEqualTo(201);
        }
        assertThat(post(TOKEN_A, key, "/transfers", body).header("Idempotent-Replayed"))
                .isEqualTo("true");
        assertThat(balance(TOKEN_A, alice)).isEqualTo("99.00");
    }

    private static void waitForClaimHolder() throws Exception {
        // the first request claimed the key and now waits on the locked account
        TestDatabase.get()
                .awaitLockWaiters("application_name = '" + LedgerServer.applicationName(server.schema()) + "'", 1);
    }

    private static int countClaims(String key) throws Exception {
        try (Connection c = TestDatabase.get().connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + server.schema()
                        + ".idempotency_claim WHERE idem_key = '" + key + "'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private static int sumOfBalances(String tenant, String currency) throws Exception {
        try (Connection c = TestDatabase.get().connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT sum(balance) FROM " + server.schema()
                        + ".account WHERE tenant = '" + tenant + "' AND currency = '" + currency + "'")) {
            rs.next();
            return rs.getBigDecimal(1).signum();
        }
    }

    @Test
    void metricsCountTheLibrarysOutcomesInPrometheusFormatWithoutTenantData() throws Exception {
        String account = openAccount(TOKEN_A, "BRL");
        String key = key();
        post(TOKEN_A, key, "/accounts/" + account + "/deposits", "{\"amount\":\"5.00\"}");
        post(TOKEN_A, key, "/accounts/" + account + "/deposits", "{\"amount\":\"5.00\"}");
        HttpResponse<String> metrics = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
        assertThat(metrics.body())
                .contains("idemtx_call_seconds_count{")
                .contains("outcome=\"executed\"")
                .contains("outcome=\"replayed\"")
                .contains("idemtx_call_wait_seconds")
                .doesNotContain("tenant-a")
                .doesNotContain(key)
                .doesNotContain(account);
    }
}
