package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The payout storm's operator: lists the payout claims that need reconciliation through the
 * ledger's admin routes, looks each up in the bank's own records (its statement, read directly, as
 * an operator with access to it would) by the claim's downstream key, and resolves it through the
 * admin routes: applied with the bank's charge id when the bank charged it, refused when the bank
 * declined it ({@code bank_declined}, what the bank's lookup would have said) or has no charge for it
 * ({@code not_charged}: nothing left the bank, and the ledger never sends a claim that needs
 * reconciliation again, so the hold can be released).
 */
final class PayoutReconciler {

    static final String OPERATOR = "payout-storm";
    static final String NOT_CHARGED = "not_charged";

    /**
     * One claim resolved: {@code chargeId} for applied, {@code code} for refused; {@code status} the
     * admin's answer; {@code recorded} whether the view it answered shows the claim settled that way
     * with this operator's action in its history; {@code bankAgreed} whether the admin's listing showed
     * the bank's lookup saying what the statement says.
     */
    record Resolution(
            String scope,
            String key,
            String downstreamKey,
            boolean applied,
            String chargeId,
            String code,
            int status,
            boolean recorded,
            boolean bankAgreed) {}

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final int adminPort;
    private final String adminToken;
    private final SideDatabase db;
    private final String bankSchema;
    private final java.io.PrintStream progress;

    PayoutReconciler(
            int adminPort, String adminToken, SideDatabase db, String bankSchema, java.io.PrintStream progress) {
        this.adminPort = adminPort;
        this.adminToken = adminToken;
        this.db = db;
        this.bankSchema = bankSchema;
        this.progress = progress;
    }

    /** Every payout claim that needs reconciliation, through the admin's paged list. */
    List<JsonNode> needingReconciliation() throws IOException, InterruptedException {
        List<JsonNode> out = new ArrayList<>();
        String after = null;
        for (int page = 0; page < 1000; page++) {
            String path = "/admin/claims?state=needs_reconciliation&effect=payout&limit=50"
                    + (after == null ? "" : "&after=" + URLEncoder.encode(after, StandardCharsets.UTF_8));
            HttpResponse<String> r = send("GET", path, null);
            if (r.statusCode() != 200) {
                throw new IllegalStateException("GET " + path + " answered " + r.statusCode() + ": " + r.body());
            }
            JsonNode body = MAPPER.readTree(r.body());
            body.path("claims").forEach(out::add);
            JsonNode next = body.path("next");
            if (next.isNull() || next.isMissingNode()) {
                return out;
            }
            after = next.asText();
        }
        throw new IllegalStateException("the admin's list of claims did not end after 1000 pages");
    }

    /** Looks each claim up in the bank's records and resolves it; the resolutions, in the list's order. */
    List<Resolution> resolveAll(List<JsonNode> claims) throws Exception {
        List<Resolution> out = new ArrayList<>();
        for (JsonNode claim : claims) {
            out.add(resolve(claim));
        }
        return out;
    }

    private Resolution resolve(JsonNode claim) throws Exception {
        String scope = claim.path("scope").asText();
        String key = claim.path("key").asText();
        String downstreamKey = claim.path("downstreamKey").asText();
        if (!downstreamKey.matches("[A-Za-z0-9:_.-]{1,255}")) {
            throw new IllegalStateException("unexpected downstream key '" + downstreamKey + "' for " + key);
        }
        // the bank's statement, by the key the ledger sent
        String[] charge = {null, null};
        db.query("SELECT id, status FROM " + bankSchema + ".charge WHERE idem_key = '" + downstreamKey + "'", rs -> {
            charge[0] = rs.getString(1);
            charge[1] = rs.getString(2);
        });
        ObjectNode body = MAPPER.createObjectNode().put("operator", OPERATOR);
        boolean applied = "succeeded".equals(charge[1]);
        String code = null;
        if (applied) {
            body.put("outcome", "applied")
                    .put("reason", "the bank's statement shows charge " + charge[0] + " for " + downstreamKey);
            body.set("answer", MAPPER.getNodeFactory().textNode(charge[0]));
        } else {
            code = charge[1] == null ? NOT_CHARGED : "bank_declined";
            body.put("outcome", "refused")
                    .put(
                            "reason",
                            charge[1] == null
                                    ? "the bank's statement has no charge for " + downstreamKey
                                    : "the bank's statement shows charge " + charge[0] + " declined");
            body.putObject("failure")
                    .put("code", code)
                    .put(
                            "message",
                            charge[1] == null
                                    ? "the bank has no charge for this payout"
                                    : "the bank declined the payout");
        }
        // the admin's listing carries what the bank's lookup says now (the faults are off): the same
        String said = claim.path("bank").path("answer").asText();
        boolean bankAgreed = applied
                ? said.equals("found")
                        && claim.path("bank").path("charge").asText().equals(charge[0])
                : charge[1] == null ? said.equals("absent") : said.equals("refused");
        HttpResponse<String> r = send("POST", claimPath(scope, key) + "/resolve", body.toString());
        boolean recorded = false;
        if (r.statusCode() == 200) {
            JsonNode view = MAPPER.readTree(r.body());
            JsonNode last = view.path("history").path(0);
            recorded = view.path("state").asText().equals(applied ? "completed" : "failed")
                    && last.path("operator").asText().equals(OPERATOR)
                    && last.path("action").asText().equals(applied ? "resolved_applied" : "resolved_refused");
        } else {
            progress.println("payout storm: resolving " + key + " answered " + r.statusCode() + ": " + r.body());
        }
        return new Resolution(
                scope, key, downstreamKey, applied, charge[0], code, r.statusCode(), recorded, bankAgreed);
    }

    /** Resolves an already resolved claim once more (as refused): the admin's status, 409 when it refuses. */
    int resolveAgain(Resolution done) throws IOException, InterruptedException {
        ObjectNode body = MAPPER.createObjectNode()
                .put("outcome", "refused")
                .put("reason", "a second resolution, which must be refused")
                .put("operator", OPERATOR);
        body.putObject("failure").put("code", NOT_CHARGED).put("message", "the bank has no charge for this payout");
        return send("POST", claimPath(done.scope(), done.key()) + "/resolve", body.toString())
                .statusCode();
    }

    private static String claimPath(String scope, String key) {
        return "/admin/claims/" + segment(scope) + "/" + segment(key);
    }

    private static String segment(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private HttpResponse<String> send(String method, String path, String body)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort + path))
                .timeout(Duration.ofSeconds(15))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + adminToken);
        b = body == null ? b.GET() : b.method(method, HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }
}
