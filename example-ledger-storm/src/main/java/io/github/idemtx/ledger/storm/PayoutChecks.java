package io.github.idemtx.ledger.storm;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.ExternalEffect;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The payout storm's invariants, checked against the bank's records and the ledger's database
 * once the faults stopped and the recoverer finished: each intent charged at most once and no
 * charge that no payout asked for; every intent a client saw as paid charged and posted exactly
 * once; no hold without a claim in flight; customer debits = bank charges + holds; the books
 * ({@link StormChecks#books} over every account, the bank's clearing and paid_out accounts
 * included), each payout's movements as its state says, the clearing account = the payouts held,
 * the paid_out account = the bank's records; nothing left in flight; every claim needing
 * reconciliation is one whose bank lookups went unanswered.
 */
final class PayoutChecks {

    private final PayoutStorm.Options options;
    private final SideDatabase db;
    private final PayoutChaos chaos;

    PayoutChecks(PayoutStorm.Options options, SideDatabase db, PayoutChaos chaos) {
        this.options = options;
        this.db = db;
        this.chaos = chaos;
    }

    /**
     * The payouts in the double-entry books: the books' invariants over every account (customer,
     * funding, each bank's clearing and paid_out); each payout's movements as its state says; each
     * bank's clearing account holding exactly the payouts in flight there; what the books say the
     * bank paid out equal to the bank's own records, payout by payout and in total.
     */
    private void books(
            BigDecimal charged,
            BigDecimal held,
            Map<String, String[]> payouts,
            Map<String, String[]> bankCharges,
            Map<String, Boolean> invariants)
            throws Exception {
        String l = options.ledgerSchema();
        payoutBooks(db, l, held, invariants);
        BigDecimal paidOut = db.decimal("SELECT coalesce(sum(balance), 0) FROM " + l
                + ".account WHERE kind = 'paid_out' AND bank = '" + PayoutStorm.BANK + "'");
        boolean eachAsCharged = payouts.values().stream()
                .filter(p -> "paid".equals(p[0]))
                .allMatch(p -> bankCharges.values().stream()
                        .anyMatch(c -> c[0].equals(p[1])
                                && "succeeded".equals(c[1])
                                && new BigDecimal(c[2]).compareTo(new BigDecimal(p[2])) == 0));
        invariants.put(
                "what the books say the bank paid out (" + paidOut.toPlainString() + ") is what its own records"
                        + " charged (" + charged.toPlainString() + "), payout by payout",
                paidOut.compareTo(charged) == 0 && eachAsCharged);
    }

    /**
     * The books' invariants over every account of ledger schema {@code l} ({@link StormChecks#books});
     * each payout's movements as its state says; each bank's clearing account holding exactly the
     * payouts in flight there ({@code held} in all): whichever bank the payouts went to.
     */
    static void payoutBooks(SideDatabase db, String l, BigDecimal held, Map<String, Boolean> invariants)
            throws Exception {
        StormChecks.books(db, l, invariants);
        invariants.put(
                "every payout has the movements its state says (hold; then settle if paid, release if refused),"
                        + " each of its amount, between its customer and its bank's accounts",
                db.count("SELECT count(*) FROM " + l + ".payout p WHERE (SELECT string_agg(t.kind || ':' || f.kind"
                                + " || '>' || o.kind, ',' ORDER BY t.kind) FROM " + l + ".transfer t JOIN " + l
                                + ".account f ON f.id = t.from_account JOIN " + l
                                + ".account o ON o.id = t.to_account WHERE t.payout_id = p.id AND t.amount = p.amount"
                                + " AND (f.id = p.account_id OR f.bank = p.bank) AND (o.id = p.account_id OR o.bank = p.bank))"
                                + " IS DISTINCT FROM CASE p.state WHEN 'in_flight' THEN 'hold:customer>clearing'"
                                + " WHEN 'paid' THEN 'hold:customer>clearing,settle:clearing>paid_out'"
                                + " ELSE 'hold:customer>clearing,release:clearing>customer' END"
                                + " OR (SELECT count(*) FROM " + l + ".transfer t WHERE t.payout_id = p.id)"
                                + " <> CASE p.state WHEN 'in_flight' THEN 1 ELSE 2 END")
                        == 0);
        BigDecimal clearing =
                db.decimal("SELECT coalesce(sum(balance), 0) FROM " + l + ".account WHERE kind = 'clearing'");
        invariants.put(
                "each bank's clearing account holds exactly its payouts in flight or awaiting reconciliation"
                        + " (clearing " + clearing.toPlainString() + ", held " + held.toPlainString() + ")",
                clearing.compareTo(held) == 0
                        && db.count("SELECT count(*) FROM " + l + ".account a WHERE a.kind = 'clearing'"
                                        + " AND a.balance <> (SELECT coalesce(sum(p.amount), 0) FROM " + l
                                        + ".payout p WHERE p.tenant = a.tenant AND p.currency = a.currency"
                                        + " AND p.bank = a.bank AND p.state = 'in_flight')")
                                == 0
                        && db.count("SELECT count(*) FROM " + l + ".payout p WHERE p.state = 'in_flight' AND NOT EXISTS"
                                        + " (SELECT 1 FROM " + l + ".account a WHERE a.kind = 'clearing'"
                                        + " AND a.tenant = p.tenant AND a.currency = p.currency AND a.bank = p.bank)")
                                == 0);
    }

    /**
     * What the storm's operator did: the payouts of the lookup outage after the load and their answers
     * before anyone resolved them; the claims resolved through the admin routes; how many second
     * resolutions were refused; how many intents were asked once more at the end, and those whose
     * answer changed; the chaos' rounds of lookup outage.
     */
    record Reconciliation(
            List<PayoutStorm.Intent> outage,
            Map<String, PayoutStorm.Answer> outageAnswers,
            List<PayoutReconciler.Resolution> resolutions,
            int refusedAgain,
            int replayed,
            List<String> changed,
            int chaosOutages) {}

    /**
     * The operator's invariants: the outage after the load handed each of its payouts to
     * reconciliation; every claim needing it was resolved through the admin routes (200), a second
     * resolution refused (409); none left unsettled; each resolved claim answers its client with the
     * resolution (the bank's charge, or the failure); every final answer replays unchanged.
     */
    private Map<String, Integer> reconciled(
            Map<String, PayoutStorm.Answer> answers, Reconciliation r, Map<String, Boolean> invariants)
            throws Exception {
        String l = options.ledgerSchema();
        long outage502 = r.outage().stream()
                .filter(i -> {
                    PayoutStorm.Answer a = r.outageAnswers().get(i.key());
                    return a != null && a.status() == 502;
                })
                .count();
        invariants.put(
                "the lookup outage after the load handed each of its "
                        + r.outage().size() + " payouts to reconciliation (502 until resolved)",
                outage502 == r.outage().size());
        Set<String> resolvedKeys = new LinkedHashSet<>();
        r.resolutions().forEach(x -> resolvedKeys.add(x.key()));
        boolean outageAmongThem = r.outage().stream().allMatch(i -> resolvedKeys.contains(i.key()));
        long applied = r.resolutions().stream().filter(x -> x.applied()).count();
        long ok = r.resolutions().stream()
                .filter(x -> x.status() == 200 && x.recorded())
                .count();
        invariants.put(
                "every claim needing reconciliation was resolved through the admin routes ("
                        + r.resolutions().size()
                        + ": " + applied + " applied, " + (r.resolutions().size() - applied) + " refused;"
                        + " the outage's among them), each answered 200 with the claim settled and the operator's"
                        + " action in its history",
                ok == r.resolutions().size()
                        && outageAmongThem
                        && resolvedKeys.size() == r.resolutions().size());
        invariants.put(
                "the admin's listing showed, for each, the bank's lookup saying what the bank's statement says",
                r.resolutions().stream().allMatch(x -> x.bankAgreed()));
        invariants.put(
                "a second resolution of a resolved claim is refused (409: " + r.refusedAgain() + " of "
                        + r.resolutions().size() + ")",
                r.refusedAgain() == r.resolutions().size());
        invariants.put(
                "no payout claim left in flight or needing reconciliation",
                db.count("SELECT count(*) FROM " + l + ".idempotency_claim WHERE effect = 'payout' AND state IN (3, 4)")
                        == 0);
        boolean asResolved = true;
        for (PayoutReconciler.Resolution x : r.resolutions()) {
            PayoutStorm.Answer a = answers.get(x.key());
            asResolved &= a != null
                    && (x.applied()
                            ? a.status() == 201
                                    && x.chargeId()
                                            .equals(a.json().path("chargeId").asText())
                            : a.status() == 422
                                    && x.code().equals(a.json().path("code").asText()));
        }
        invariants.put(
                "each resolved claim answers its client with the resolution (the bank's charge, or the failure)",
                asResolved);
        invariants.put(
                "every final answer replays unchanged (" + r.replayed() + " intents asked once more"
                        + (r.changed().isEmpty() ? "" : "; changed: " + r.changed()) + ")",
                r.changed().isEmpty());
        Map<String, Integer> counts = new LinkedHashMap<>();
        counts.put("applied", (int) applied);
        counts.put("refused", r.resolutions().size() - (int) applied);
        counts.put("from the outage after the load", r.outage().size());
        counts.put("chaos lookup outages", r.chaosOutages());
        return counts;
    }

    /** The intents' final answers by kind: paid, refused:code, reconciliation (502), status N, none. */
    static Map<String, Integer> answerCounts(
            List<PayoutStorm.Intent> intents, Map<String, PayoutStorm.Answer> answers) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (PayoutStorm.Intent intent : intents) {
            PayoutStorm.Answer a = answers.get(intent.key());
            String kind = a == null
                    ? "none"
                    : a.status() == 201
                            ? "paid"
                            : a.status() == 422
                                    ? "refused:" + a.json().path("code").asText()
                                    : a.status() == 502 ? "reconciliation" : "status " + a.status();
            counts.merge(kind, 1, Integer::sum);
        }
        return counts;
    }

    PayoutStorm.Report check(
            List<PayoutStorm.Intent> intents,
            Map<String, PayoutStorm.Answer> answers,
            BigDecimal deposited,
            Reconciliation reconciliation,
            double seconds)
            throws Exception {
        Map<String, Boolean> invariants = new LinkedHashMap<>();
        String l = options.ledgerSchema();
        String b = options.bankSchema();
        Map<String, Integer> counts = answerCounts(intents, answers);
        // the bank's charges by the downstream key the ledger sent, the ledger's payouts by the client's key
        Map<String, String[]> bankCharges = new ConcurrentHashMap<>();
        db.query(
                "SELECT idem_key, id, status, amount FROM " + b + ".charge",
                rs -> bankCharges.put(rs.getString(1), new String[] {
                    rs.getString(2), rs.getString(3), rs.getBigDecimal(4).toPlainString()
                }));
        Map<String, String[]> payouts = new ConcurrentHashMap<>();
        db.query(
                "SELECT idem_key, state, charge_id, amount FROM " + l + ".payout",
                rs -> payouts.put(rs.getString(1), new String[] {
                    rs.getString(2), rs.getString(3), rs.getBigDecimal(4).toPlainString()
                }));
        Set<String> chargeIdsOfPaidPayouts = new LinkedHashSet<>();
        payouts.values().stream().filter(p -> "paid".equals(p[0])).forEach(p -> chargeIdsOfPaidPayouts.add(p[1]));
        long paidPayouts =
                payouts.values().stream().filter(p -> "paid".equals(p[0])).count();

        invariants.put(
                "each payout intent charged at the bank at most once, and no charge that no payout asked for",
                db.count("SELECT count(*) FROM (SELECT idem_key FROM " + b
                                        + ".charge GROUP BY idem_key HAVING count(*) > 1) x")
                                == 0
                        // one payout row per key: the storm forgets no claim (a forgotten one may run again)
                        && db.count("SELECT count(*) FROM (SELECT tenant, idem_key FROM " + l
                                        + ".payout GROUP BY tenant, idem_key HAVING count(*) > 1) x")
                                == 0
                        && bankCharges.size() <= payouts.size()
                        && bankCharges.values().stream()
                                        .filter(c -> "succeeded".equals(c[1]))
                                        .count()
                                == paidPayouts
                        && bankCharges.values().stream()
                                .filter(c -> "succeeded".equals(c[1]))
                                .allMatch(c -> chargeIdsOfPaidPayouts.contains(c[0])));
        boolean paidOnce = true;
        for (PayoutStorm.Intent intent : intents) {
            PayoutStorm.Answer a = answers.get(intent.key());
            if (a != null && a.status() == 201) {
                String told = a.json().path("chargeId").asText();
                String[] payout = payouts.get(intent.key());
                long charges = bankCharges.values().stream()
                        .filter(c -> c[0].equals(told) && "succeeded".equals(c[1]))
                        .count();
                paidOnce &= payout != null && "paid".equals(payout[0]) && told.equals(payout[1]) && charges == 1;
            }
        }
        invariants.put(
                "every intent a client saw as paid is charged exactly once (the charge it was told) and posted exactly once",
                paidOnce);
        invariants.put(
                "no hold without a claim in flight or awaiting reconciliation",
                db.count(
                                "SELECT count(*) FROM " + l
                                        + ".payout p WHERE p.state = 'in_flight' AND NOT EXISTS (SELECT 1 FROM " + l
                                        + ".idempotency_claim c WHERE c.scope = p.tenant AND c.idem_key = p.idem_key AND c.state IN (3, 4))")
                        == 0);
        BigDecimal balances =
                db.decimal("SELECT coalesce(sum(balance), 0) FROM " + l + ".account WHERE kind = 'customer'");
        BigDecimal charged =
                db.decimal("SELECT coalesce(sum(amount), 0) FROM " + b + ".charge WHERE status = 'succeeded'");
        BigDecimal held = db.decimal("SELECT coalesce(sum(amount), 0) FROM " + l + ".payout WHERE state = 'in_flight'");
        invariants.put(
                "balances conserved: customer debits ("
                        + deposited.subtract(balances).toPlainString() + ") = bank charges (" + charged.toPlainString()
                        + ") + holds (" + held.toPlainString() + ")",
                deposited.subtract(balances).compareTo(charged.add(held)) == 0);
        books(charged, held, payouts, bankCharges, invariants);
        invariants.put(
                "nothing left in flight",
                db.count("SELECT count(*) FROM " + l + ".idempotency_claim WHERE effect = 'payout' AND state = 3")
                        == 0);
        Map<String, Integer> reconciled = reconciled(answers, reconciliation, invariants);
        List<String> reconciliationKeys = new ArrayList<>();
        reconciliation.resolutions().forEach(r -> reconciliationKeys.add(r.key()));
        // a claim is handed to reconciliation only after lookups of its downstream key went unanswered
        Set<String> unanswered = ConcurrentHashMap.newKeySet();
        db.query("SELECT idem_key FROM " + b + ".lookup WHERE NOT answered", rs -> unanswered.add(rs.getString(1)));
        List<String> handedOver = new ArrayList<>();
        reconciliation.resolutions().forEach(r -> handedOver.add(r.downstreamKey()));
        db.query(
                "SELECT scope, idem_key, created_at FROM " + l
                        + ".idempotency_claim WHERE effect = 'payout' AND state = 4",
                rs -> handedOver.add(ExternalEffect.downstreamKey(
                        "payout",
                        Scope.of(rs.getString(1)),
                        IdempotencyKey.of(rs.getString(2)),
                        rs.getObject(3, OffsetDateTime.class).toInstant())));
        long unexplained =
                handedOver.stream().filter(k -> !unanswered.contains(k)).count();
        invariants.put(
                "every claim needing reconciliation is one whose bank lookups went unanswered", unexplained == 0);
        Map<String, Long> bankFigures = new LinkedHashMap<>();
        db.query(
                "SELECT status, count(*) FROM " + b + ".charge GROUP BY status ORDER BY status",
                rs -> bankFigures.put(rs.getString(1) + " charges", rs.getLong(2)));
        db.query(
                "SELECT answered, count(*) FROM " + b + ".lookup GROUP BY answered ORDER BY answered",
                rs -> bankFigures.put(rs.getBoolean(1) ? "lookups answered" : "lookups unanswered", rs.getLong(2)));
        return new PayoutStorm.Report(
                intents.size(),
                counts,
                chaos.kills.get(),
                chaos.restarts.get(),
                reconciliationKeys,
                reconciled,
                invariants,
                seconds,
                bankFigures,
                Map.of());
    }
}
