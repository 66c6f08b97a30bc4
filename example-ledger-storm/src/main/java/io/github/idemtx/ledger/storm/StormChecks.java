package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.ledger.storm.StormClients.Intent;
import io.github.idemtx.ledger.storm.StormTally.Answer;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.http.HttpResponse;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The invariants the storm checks when the load is over: in the ledger's database when the storm
 * started the ledger (every acknowledged intent took effect exactly once, every intent has one
 * recorded answer, balances per tenant and currency sum to zero, no customer balance is negative,
 * postings match balances), over HTTP for a ledger it did not start, and against the library's own
 * counts from {@code GET /metrics}; and every answer for a key was byte-identical to the first.
 */
final class StormChecks {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final StormClients clients;
    private final StormTally tally;
    private final SideDatabase db; // null for a ledger the storm did not start
    private final String schema;
    private final java.io.PrintStream progress;

    StormChecks(StormClients clients, StormTally tally, SideDatabase db, String schema, java.io.PrintStream progress) {
        this.clients = clients;
        this.tally = tally;
        this.db = db;
        this.schema = schema;
        this.progress = progress;
    }

    /** The ids of every transfer in the ledger. */
    Set<String> transferIds() throws SQLException {
        return db.strings("SELECT id FROM " + schema + ".transfer");
    }

    /** The checks in the database, {@code before} the transfers that were there before the load. */
    Map<String, Boolean> inDatabase(List<Intent> intents, Set<String> before) throws Exception {
        Map<String, Boolean> results = new LinkedHashMap<>();
        Set<String> after = transferIds();
        after.removeAll(before);
        Set<String> acknowledged = new HashSet<>();
        boolean everyIntentAnswered = tally.finalAnswers.size() == intents.size();
        for (Answer a : tally.finalAnswers.values()) {
            if (a.status() == 201) {
                acknowledged.add(MAPPER.readTree(a.body()).get("id").asText());
            }
        }
        results.put("every intent got a final answer", everyIntentAnswered);
        results.put(
                "every acknowledged intent took effect exactly once (" + acknowledged.size() + " transfers)",
                after.equals(acknowledged));
        results.put(
                "each intent's key holds exactly one recorded answer",
                db.count("SELECT count(*) FROM " + schema + ".idempotency_claim WHERE state IN (1, 2)"
                                + " AND idem_key IN (" + keys(intents) + ")")
                        == intents.size());
        books(db, schema, results);
        results.put("every answer for a key was byte-identical to the first", tally.mismatchedReplays.get() == 0);
        return results;
    }

    /**
     * The double-entry invariants, in the database, over every account (customer, funding, and the
     * banks' clearing and paid_out accounts the payouts move money through): balances sum to zero per
     * tenant and currency, no balance but a funding account's is negative, every transfer (payout
     * movements included) has two postings summing to zero, every balance equals the sum of its
     * postings. Shared by every storm that can see the ledger's database.
     */
    static void books(SideDatabase db, String schema, Map<String, Boolean> results) throws SQLException {
        results.put(
                "balances sum to zero per tenant and currency",
                db.count("SELECT count(*) FROM (SELECT tenant, currency FROM " + schema + ".account"
                                + " GROUP BY tenant, currency HAVING sum(balance) <> 0) x")
                        == 0);
        results.put(
                "no balance is negative but a funding account's (customer, clearing, paid_out)",
                db.count("SELECT count(*) FROM " + schema + ".account WHERE kind <> 'funding' AND balance < 0") == 0);
        results.put(
                "every transfer has two postings summing to zero",
                db.count(
                                "SELECT count(*) FROM (SELECT t.id FROM " + schema + ".transfer t LEFT JOIN " + schema
                                        + ".posting p ON p.transfer_id = t.id GROUP BY t.id, t.amount"
                                        + " HAVING count(p.id) <> 2 OR coalesce(sum(p.amount), 1) <> 0 OR max(p.amount) <> t.amount) x")
                        == 0);
        results.put(
                "every balance equals the sum of its postings",
                db.count("SELECT count(*) FROM " + schema
                                + ".account a WHERE a.balance <> (SELECT coalesce(sum(p.amount), 0)" + " FROM " + schema
                                + ".posting p WHERE p.account_id = a.id)")
                        == 0);
    }

    /**
     * The checks a client can make over HTTP against a ledger whose database it cannot see: every
     * acknowledged transfer is there, and each of the storm's accounts holds exactly what its
     * deposits and the acknowledged intents say (so nothing unacknowledged moved, nothing moved twice).
     */
    Map<String, Boolean> overHttp(List<Intent> intents) throws Exception {
        Map<String, Boolean> results = new LinkedHashMap<>();
        results.put("every intent got a final answer", tally.finalAnswers.size() == intents.size());
        Map<String, BigDecimal> expected = new LinkedHashMap<>(clients.setUpBalances());
        boolean transfersThere = true;
        String token = clients.tokens().keySet().iterator().next();
        for (Intent intent : intents) {
            Answer a = tally.finalAnswers.get(intent.index());
            if (a == null || a.status() != 201) {
                continue;
            }
            BigDecimal amount = new BigDecimal(intent.body().get("amount"));
            if (intent.path().endsWith("/deposits")) {
                String to = intent.path().split("/")[2];
                expected.merge(to, amount, BigDecimal::add);
            } else {
                expected.merge(intent.body().get("from"), amount.negate(), BigDecimal::add);
                expected.merge(intent.body().get("to"), amount, BigDecimal::add);
            }
            String id = MAPPER.readTree(a.body()).get("id").asText();
            transfersThere &= clients.get(token, "/transfers/" + id).status() == 200;
        }
        results.put("every acknowledged transfer is there", transfersThere);
        boolean balances = true;
        boolean nonNegative = true;
        for (Map.Entry<String, BigDecimal> e : expected.entrySet()) {
            Answer account = clients.get(token, "/accounts/" + e.getKey());
            BigDecimal balance = new BigDecimal(
                    MAPPER.readTree(account.body()).get("balance").asText());
            if (balance.compareTo(e.getValue()) != 0) {
                balances = false;
                progress.println("storm: account " + e.getKey() + " holds " + balance
                        + ", the acknowledged intents say " + e.getValue());
            }
            nonNegative &= balance.signum() >= 0;
        }
        results.put(
                "every account holds what its deposits and the acknowledged intents say (" + expected.size()
                        + " accounts)",
                balances);
        results.put("no customer balance is negative", nonNegative);
        results.put("every answer for a key was byte-identical to the first", tally.mismatchedReplays.get() == 0);
        return results;
    }

    /**
     * The library's own count of what it did, from the ledger's {@code GET /metrics}: the calls of
     * {@code idemtx.call} by outcome (and exception), summed over their other tags. Empty when the
     * ledger has no metrics.
     */
    Map<String, Long> libraryCounts() {
        Map<String, Long> counts = new TreeMap<>();
        try {
            HttpResponse<String> r = clients.metrics();
            if (r.statusCode() != 200) {
                return counts;
            }
            for (String line : r.body().split("\n")) {
                if (!line.startsWith("idemtx_call_seconds_count{") || !line.contains("operation=\"transaction\"")) {
                    continue;
                }
                String outcome = label(line, "outcome");
                String exception = label(line, "exception");
                String key = "failed".equals(outcome) ? "failed:" + exception : outcome;
                long value = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                counts.merge(key, value, Long::sum);
            }
        } catch (IOException | RuntimeException e) {
            progress.println("storm: could not read the ledger's /metrics: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return counts;
    }

    private static String label(String line, String name) {
        int at = line.indexOf(name + "=\"");
        if (at < 0) {
            return "";
        }
        int from = at + name.length() + 2;
        return line.substring(from, line.indexOf('"', from));
    }

    /**
     * Where the library's count and the clients' tally must agree: each intent that took effect was
     * executed once (or its commit's answer was lost: CommitOutcomeUnknownException), and clients
     * cannot have seen more replays than the library served.
     */
    void againstMetrics(Map<String, Long> library, long clientReplays, Map<String, Boolean> invariants) {
        long executed = library.getOrDefault("executed", 0L);
        long commitUnknown = library.getOrDefault("failed:CommitOutcomeUnknownException", 0L);
        long tookEffect = tally.finalAnswers.values().stream()
                .filter(a -> a.status() == 201)
                .count();
        invariants.put(
                "the library's executed count (" + executed + ", + " + commitUnknown + " commit-unknown) matches the "
                        + tookEffect + " intents that took effect",
                executed <= tookEffect && tookEffect <= executed + commitUnknown);
        long served = library.getOrDefault("replayed", 0L) + library.getOrDefault("rejected", 0L);
        invariants.put(
                "replays seen by clients (" + clientReplays + ") <= answers the library served from a record"
                        + " (replayed + rejected: " + served + ")",
                clientReplays <= served);
    }

    private static String keys(List<Intent> intents) {
        StringBuilder out = new StringBuilder();
        for (Intent i : intents) {
            if (!out.isEmpty()) {
                out.append(',');
            }
            out.append('\'').append(i.key().value()).append('\''); // UUIDs: no quoting issues
        }
        return out.toString();
    }

    /** The final answers by status (and problem code). */
    Map<String, Integer> answerCounts() {
        Map<String, Integer> counts = new TreeMap<>();
        for (Answer a : tally.finalAnswers.values()) {
            String label = a.status() == 201 ? "201" : a.status() + " " + code(a.body());
            counts.merge(label, 1, Integer::sum);
        }
        return counts;
    }

    private static String code(byte[] body) {
        try {
            JsonNode json = MAPPER.readTree(body);
            return json.path("code").asText("?");
        } catch (IOException e) {
            return "?";
        }
    }
}
