package io.github.idemtx.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import io.github.idemtx.http.StoredResponse;
import io.github.idemtx.jooq.StatementReconciliation;
import io.github.idemtx.ledger.Payouts.PayoutRequest;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The operators' routes for payouts to the statement bank ({@code LEDGER_BANK_MODE=statement}), on
 * the admin port behind {@link LedgerAdmin}'s checks (loopback, bearer token), over the library's
 * {@link StatementReconciliation}:
 *
 * <ul>
 *   <li>{@code GET /admin/statements/awaiting[?limit=50]}: payouts sent and awaiting a statement,
 *       oldest send first;
 *   <li>{@code GET /admin/statements/unconfirmed[?limit=50]}: payouts the bank's answer said it took
 *       that its statements, covering their window, do not show;
 *   <li>{@code GET /admin/statements/flagged?verdict=duplicate|mismatch|unmatched[&limit=50]}: the
 *       lines no operator handled yet (duplicate: a double payment);
 *   <li>{@code GET /admin/statements/lines?reference=R}: every line of one reference;
 *   <li>{@code POST /admin/statements/lines/{entryId}/work} with {@code {"operator": ..., "note": ...}}:
 *       a flagged line handled (404 when there is no such open line).
 * </ul>
 *
 * With a keyed bank every route answers 404 {@code no_statements}.
 */
final class StatementAdmin {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Pattern WORK = Pattern.compile("/admin/statements/lines/([^/]+)/work");

    private final StatementReconciliation<PayoutRequest, String> statements; // null: a keyed bank

    StatementAdmin(StatementReconciliation<PayoutRequest, String> statements) {
        this.statements = statements;
    }

    /** The answer to a request under {@code /admin/statements}; {@code body} reads a POST's JSON. */
    StoredResponse route(String method, String path, HttpExchange exchange, JsonNode body) {
        if (statements == null) {
            return LedgerJson.problem(
                    404, "no_statements", "No statements", "the ledger's bank is keyed: no statement settles payouts");
        }
        Matcher m;
        if (method.equals("GET")
                && (path.equals("/admin/statements/awaiting") || path.equals("/admin/statements/unconfirmed"))) {
            ObjectNode out = MAPPER.createObjectNode();
            boolean awaiting = path.endsWith("/awaiting");
            ArrayNode list = out.putArray(awaiting ? "awaiting" : "unconfirmed");
            for (StatementReconciliation.Awaiting<PayoutRequest> a :
                    (awaiting ? statements.awaiting(limit(exchange)) : statements.unconfirmed(limit(exchange)))) {
                ObjectNode row = list.addObject()
                        .put("scope", a.scope().value())
                        .put("key", a.key().value())
                        .put("reference", a.reference())
                        .put("sentAt", a.sentAt().toString())
                        .put("sends", a.sends());
                if (a.request() != null) {
                    row.put("account", a.request().account().toString())
                            .put("amount", a.request().amount().toPlainString());
                }
            }
            return StoredResponse.of(200, LedgerJson.JSON, out.toString());
        }
        if (method.equals("GET") && path.equals("/admin/statements/flagged")) {
            String verdict = LedgerRoutes.queryParameter(exchange, "verdict");
            StatementReconciliation.Verdict wanted;
            try {
                wanted = StatementReconciliation.Verdict.valueOf(
                        String.valueOf(verdict).toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "verdict must be duplicate, mismatch or unmatched, was '" + verdict + "'");
            }
            return lines("flagged", statements.flagged(wanted, limit(exchange)));
        }
        if (method.equals("GET") && path.equals("/admin/statements/lines")) {
            String reference = LedgerRoutes.queryParameter(exchange, "reference");
            if (reference == null) {
                throw new IllegalArgumentException("reference is required");
            }
            return lines("lines", statements.lines(reference));
        }
        if (method.equals("POST") && (m = WORK.matcher(path)).matches()) {
            JsonNode given = body == null ? MAPPER.createObjectNode() : body;
            String entry = URLDecoder.decode(m.group(1), StandardCharsets.UTF_8);
            boolean worked = statements.work(
                    entry, given.path("operator").asText(""), given.path("note").asText(""));
            return worked
                    ? StoredResponse.of(
                            200,
                            LedgerJson.JSON,
                            MAPPER.createObjectNode().put("worked", entry).toString())
                    : LedgerJson.problem(
                            404,
                            "line_not_found",
                            "No such line",
                            "no flagged line " + entry + " waits for an operator");
        }
        return LedgerJson.problem(404, "not_found", "Not found", "no such resource: " + method + " " + path);
    }

    private static StoredResponse lines(String name, List<StatementReconciliation.Entry> entries) {
        ObjectNode out = MAPPER.createObjectNode();
        ArrayNode list = out.putArray(name);
        for (StatementReconciliation.Entry e : entries) {
            list.addObject()
                    .put("entryId", e.entryId())
                    .put("statementId", e.statementId())
                    .put("reference", e.reference())
                    .put("amount", e.amount().toPlainString())
                    .put("currency", e.currency())
                    .put("bookingDate", e.bookingDate().toString())
                    .put("verdict", e.verdict().name().toLowerCase(Locale.ROOT))
                    .put("scope", e.scope())
                    .put("key", e.key())
                    .put("detail", e.detail())
                    .put("workedBy", e.workedBy())
                    .put("note", e.note());
        }
        return StoredResponse.of(200, LedgerJson.JSON, out.toString());
    }

    /** The {@code limit} query parameter of an admin listing, 50 when absent. */
    static int limit(HttpExchange exchange) {
        String limit = LedgerRoutes.queryParameter(exchange, "limit");
        try {
            return limit == null ? 50 : Integer.parseInt(limit);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("limit must be a whole number, was '" + limit + "'");
        }
    }
}
