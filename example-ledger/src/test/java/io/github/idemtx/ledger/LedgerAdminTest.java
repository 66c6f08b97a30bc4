package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.ledger.LedgerHttpTest.Reply;
import io.github.idemtx.ledger.bank.BankServer;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The operators' port: payouts whose outcome the bank never told end needing reconciliation, are
 * listed with what the bank says now, and are settled (and refused where their state does not allow
 * it) through the JSON routes, with the ledger's books following.
 */
@DatabaseTest
class LedgerAdminTest {

    static final String TOKEN = "token-admin";
    static final String TENANT = "tenant-admin";
    static BankServer bank;
    static LedgerServer ledger;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        bank = io.github.idemtx.ledger.bank.BankFixture.start("admin_bank", "--hang-ms=4500");
        ledger = LedgerServer.startFresh(LedgerFixture.args(
                "admin",
                "--port=0",
                "--admin-port=0",
                "--tokens=" + TOKEN + "=" + TENANT,
                "--bank-url=http://127.0.0.1:" + bank.port()));
    }

    @AfterAll
    static void stop() {
        ledger.close();
        bank.close();
        LedgerFixture.dropSchema("admin");
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + TestDatabase.get().schema() + "_admin_bank CASCADE");
    }

    private static Reply tenant(String method, String path, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ledger.port() + path))
                .header("Authorization", "Bearer " + TOKEN)
                .header("Content-Type", "application/json");
        b = body == null ? b.GET() : b.method(method, HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r);
    }

    private static Reply admin(String method, String path, String body, String contentType) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ledger.adminPort() + path))
                .header("Authorization", "Bearer " + ledger.adminToken());
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        b = body == null ? b.GET() : b.method(method, HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r);
    }

    private static Reply admin(String path, String body) throws Exception {
        return admin("POST", path, body, "application/json");
    }

    private static String claimPath(String key) {
        return "/admin/claims/" + URLEncoder.encode(TENANT, StandardCharsets.UTF_8) + "/"
                + URLEncoder.encode(key, StandardCharsets.UTF_8);
    }

    private static String fundedAccount(String amount) throws Exception {
        String account = tenant("POST", "/accounts", UUID.randomUUID().toString(), "{\"currency\":\"BRL\"}")
                .json()
                .get("id")
                .asText();
        assertThat(tenant(
                                "POST",
                                "/accounts/" + account + "/deposits",
                                UUID.randomUUID().toString(),
                                "{\"amount\":\"" + amount + "\"}")
                        .status())
                .isEqualTo(201);
        return account;
    }

    private static String balance(String account) throws Exception {
        return tenant("GET", "/accounts/" + account, null, null)
                .json()
                .get("balance")
                .asText();
    }

    /** A payout the bank applied (or not) but whose answer and every lookup were lost. */
    private static String unknownPayout(String account, String amount) throws Exception {
        String key = UUID.randomUUID().toString();
        Reply r = tenant(
                "POST",
                "/payouts",
                key,
                "{\"from\":\"" + account + "\",\"amount\":\"" + amount + "\",\"destination\":\"BR12 3456\"}");
        assertThat(r.status()).as(r.response().body()).isEqualTo(503);
        return key;
    }

    private static JsonNode awaitNeedingReconciliation(String key) throws Exception {
        long deadline = System.nanoTime() + 90_000_000_000L;
        while (System.nanoTime() < deadline) {
            JsonNode claim = admin("GET", claimPath(key), null, null).json();
            if (claim.path("state").asText().equals("needs_reconciliation")) {
                return claim;
            }
            Thread.sleep(250);
        }
        throw new AssertionError("the payout " + key + " never reached reconciliation");
    }

    @Test
    void theJsonRoutesAnswerOnlyTheAdminTokenAndWriteNothingWithoutIt() throws Exception {
        String account = fundedAccount("10.00");
        String key = UUID.randomUUID().toString();
        Reply paid = tenant(
                "POST",
                "/payouts",
                key,
                "{\"from\":\"" + account + "\",\"amount\":\"5.00\",\"destination\":\"BR12 3456\"}");
        assertThat(paid.status()).as(paid.response().body()).isEqualTo(201);
        String forget = "{\"operator\":\"mallory\",\"reason\":\"a sidecar\"}";
        for (String authorization :
                new String[] {null, "Bearer wrong-token-0123456789", "Bearer " + TOKEN, ledger.adminToken()}) {
            for (String[] request : new String[][] {
                {"GET", "/admin/backlog", null},
                {"GET", claimPath(key), null},
                {"POST", claimPath(key) + "/forget", forget}
            }) {
                HttpRequest.Builder b = HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + ledger.adminPort() + request[1]))
                        .header("Content-Type", "application/json");
                if (authorization != null) {
                    b.header("Authorization", authorization);
                }
                b = request[2] == null ? b.GET() : b.POST(HttpRequest.BodyPublishers.ofString(request[2]));
                HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode())
                        .as(authorization + " " + request[0] + " " + request[1])
                        .isEqualTo(401);
                assertThat(r.headers().firstValue("WWW-Authenticate"))
                        .hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
                assertThat(r.body()).doesNotContain("BR12").contains("LEDGER_ADMIN_TOKEN");
            }
        }
        assertThat(admin("GET", claimPath(key), null, null).json().path("state").asText())
                .as("nothing forgotten")
                .isEqualTo("completed");
    }

    @Test
    void payoutsNobodyCouldSettleAreListedAndSettledByAnOperatorThroughTheAdminPort() throws Exception {
        String account = fundedAccount("100.00");
        bank.faults().set(Map.of("timeoutAfterApplyRate", "1", "lookupErrorRate", "1"));
        String charged;
        String notCharged;
        try {
            charged = unknownPayout(account, "30.00");
            JsonNode inFlight = admin("GET", "/admin/claims?state=in_flight&effect=payout", null, null)
                    .json();
            assertThat(inFlight.path("claims").findValuesAsText("key")).contains(charged);
            bank.faults().set(Map.of("timeoutAfterApplyRate", "0", "errorBeforeApplyRate", "1"));
            notCharged = unknownPayout(account, "20.00");
            awaitNeedingReconciliation(charged);
            awaitNeedingReconciliation(notCharged);
        } finally {
            bank.faults()
                    .set(Map.of("timeoutAfterApplyRate", "0", "errorBeforeApplyRate", "0", "lookupErrorRate", "0"));
        }
        assertThat(balance(account)).as("both held").isEqualTo("50.00");

        JsonNode backlog = admin("GET", "/admin/backlog", null, null).json();
        assertThat(backlog.path("needingReconciliation").asLong()).isEqualTo(2);
        assertThat(backlog.path("oldestNeedingReconciliation").isTextual()).isTrue();

        JsonNode listed = admin("GET", "/admin/claims?state=needs_reconciliation&effect=payout&limit=1", null, null)
                .json();
        assertThat(listed.path("claims")).hasSize(1);
        JsonNode first = listed.path("claims").get(0);
        assertThat(first.path("key").asText()).as("oldest first").isEqualTo(charged);
        assertThat(first.path("request").path("amount").decimalValue()).isEqualByComparingTo("30.00");
        assertThat(first.path("bank").path("answer").asText()).isEqualTo("found");
        String charge = first.path("bank").path("charge").asText();
        assertThat(charge).startsWith("ch_");
        String next = listed.path("next").asText();
        JsonNode second = admin(
                        "GET",
                        "/admin/claims?state=needs_reconciliation&effect=payout&limit=1&after=" + next,
                        null,
                        null)
                .json();
        assertThat(second.path("claims").get(0).path("key").asText()).isEqualTo(notCharged);
        assertThat(second.path("claims").get(0).path("bank").path("answer").asText())
                .isEqualTo("absent");

        // refusals write nothing
        String note = "\"operator\":\"alice\",\"reason\":\"bank statement 2026-12-02\"";
        assertThat(admin(claimPath(charged) + "/forget", "{" + note + "}").status())
                .as("forgetting an unsettled payout could pay it twice")
                .isEqualTo(409);
        assertThat(admin(claimPath(charged) + "/resolve", "{\"outcome\":\"maybe\"," + note + "}")
                        .status())
                .isEqualTo(400);
        assertThat(admin(claimPath(charged) + "/resolve", "{\"outcome\":\"applied\",\"answer\":\"" + charge + "\"}")
                        .status())
                .as("no operator, no reason")
                .isEqualTo(400);
        assertThat(admin(
                                claimPath(charged) + "/resolve",
                                "{\"outcome\":\"applied\",\"answr\":\"" + charge + "\"," + note + "}")
                        .status())
                .as("a misspelt answer must not record a payout without its charge")
                .isEqualTo(400);
        assertThat(admin("POST", claimPath(charged) + "/resolve", "{}", "text/plain")
                        .status())
                .as("a browser's cross-site form cannot send JSON")
                .isEqualTo(400);
        assertThat(admin(
                                claimPath(UUID.randomUUID().toString()) + "/resolve",
                                "{\"outcome\":\"refused\",\"failure\":" + "{\"code\":\"x\",\"message\":\"y\"}," + note
                                        + "}")
                        .status())
                .isEqualTo(404);
        assertThat(balance(account)).isEqualTo("50.00");
        assertThat(OperationsPageTest.rawGet(ledger.adminPort(), "attacker.example", "/admin/backlog"))
                .as("a rebound name is not the loopback")
                .startsWith("HTTP/1.1 403");

        Reply applied = admin(
                claimPath(charged) + "/resolve",
                "{\"outcome\":\"applied\",\"answer\":\"" + charge + "\"," + note + "}");
        assertThat(applied.status()).as(applied.response().body()).isEqualTo(200);
        assertThat(applied.json().path("state").asText()).isEqualTo("completed");
        assertThat(applied.json().path("history").get(0).path("action").asText())
                .isEqualTo("resolved_applied");
        assertThat(admin(
                                claimPath(charged) + "/resolve",
                                "{\"outcome\":\"applied\",\"answer\":\"" + charge + "\"," + note + "}")
                        .status())
                .as("only once")
                .isEqualTo(409);

        Reply refused = admin(
                claimPath(notCharged) + "/resolve",
                "{\"outcome\":\"refused\",\"failure\":{\"code\":\"not_charged\",\"message\":\"not on the statement\"},"
                        + note + "}");
        assertThat(refused.status()).as(refused.response().body()).isEqualTo(200);
        assertThat(refused.json().path("state").asText()).isEqualTo("failed");
        assertThat(balance(account)).as("the refused payout's hold given back").isEqualTo("70.00");
        assertThat(admin("GET", "/admin/backlog", null, null)
                        .json()
                        .path("needingReconciliation")
                        .asLong())
                .isZero();

        // the tenant's retries now replay what the operator recorded
        Reply paid = tenant(
                "POST",
                "/payouts",
                charged,
                "{\"from\":\"" + account + "\",\"amount\":\"30.00\",\"destination\":\"BR12 3456\"}");
        assertThat(paid.status()).isEqualTo(201);
        assertThat(paid.json().path("chargeId").asText()).isEqualTo(charge);

        // a settled claim can be forgotten, with its history kept
        Reply forgotten = admin(claimPath(notCharged) + "/forget", "{" + note + "}");
        assertThat(forgotten.status()).as(forgotten.response().body()).isEqualTo(200);
        assertThat(admin("GET", claimPath(notCharged), null, null).status()).isEqualTo(404);
        assertThat(admin("GET", "/admin/claims?state=completed", null, null).status())
                .isEqualTo(400);

        // as the page and the docs promise, the key's next request runs again: a new payout, paid
        Reply again = tenant(
                "POST",
                "/payouts",
                notCharged,
                "{\"from\":\"" + account + "\",\"amount\":\"20.00\",\"destination\":\"BR12 3456\"}");
        assertThat(again.status()).as(again.response().body()).isEqualTo(201);
        assertThat(again.json().path("state").asText()).isEqualTo("paid");
        String newPayout = again.json().path("id").asText();
        Reply replayed = tenant(
                "POST",
                "/payouts",
                notCharged,
                "{\"from\":\"" + account + "\",\"amount\":\"20.00\",\"destination\":\"BR12 3456\"}");
        assertThat(replayed.status()).isEqualTo(201);
        assertThat(replayed.json().path("id").asText())
                .as("its retries replay it")
                .isEqualTo(newPayout);
        assertThat(balance(account)).as("paid once more, after the refusal").isEqualTo("50.00");
        assertThat(tenant("GET", "/payouts?state=refused", null, null).json().findValuesAsText("id"))
                .as("the forgotten claim's payout stays in the books")
                .isNotEmpty()
                .doesNotContain(newPayout);
    }
}
