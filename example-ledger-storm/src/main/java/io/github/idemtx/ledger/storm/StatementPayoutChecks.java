package io.github.idemtx.ledger.storm;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The invariants of the payout storm against the statement bank ({@code --bank=statement}), checked
 * against the bank's {@code payment} table and the ledger's schema once every claim is settled or at
 * an operator and every booking is in a statement the ledger applied:
 *
 * <ul>
 *   <li>no silent double payment: a reference the bank paid n times has n - 1 statement lines
 *       flagged {@code duplicate}; every payment is one line of an applied statement; none foreign;
 *   <li>every claim settled applied has a bank payment of its reference, and its payout is paid with
 *       one; a claim settled refused has none, or one flagged {@code mismatch} (its first send's answer
 *       lost and booked late, its second declined); a claim at an operator was found absent after its
 *       two sends with nothing paid, or flagged a mismatch;
 *   <li>no payout lost: every intent a client saw as paid has one paid payout, with the bank's payment
 *       it was told; each intent's last answer is its claim's; nothing in flight or sent;
 *   <li>the books ({@link PayoutChecks#payoutBooks}); customer debits = paid + held; the bank paid out
 *       what the books say plus the flagged double payments and mismatches, to the cent;
 *   <li>the late bookings after the load each found absent, sent again and flagged a double payment;
 *       some kills landed between send and record.
 * </ul>
 *
 * Every payout claim ends one way, and the report counts them: paid once, absent and sent again
 * (then paid once), flagged double payments, at an operator, refused.
 */
final class StatementPayoutChecks {

    static final String PAID_ONCE = "paid once";
    static final String RESENT = "absent and resent (then paid)";
    static final String DOUBLE = "flagged double payments";
    static final String OPERATOR = "to an operator";
    static final String REFUSED = "refused";
    static final String MID_SEND = "kills between send and record";

    /** A payout claim: its state, the reference it sent (or null), its sends. */
    private record Claim(int state, String reference, int sends) {}

    private final PayoutStorm.Options options;
    private final SideDatabase db;
    private final StatementPayoutChaos chaos;

    StatementPayoutChecks(PayoutStorm.Options options, SideDatabase db, StatementPayoutChaos chaos) {
        this.options = options;
        this.db = db;
        this.chaos = chaos;
    }

    /** The report's line: how each payout ended, and the kills that landed between send and record. */
    static String summary(Map<String, Integer> counts) {
        return counts.entrySet().stream()
                .map(e -> e.getKey() + ": " + e.getValue())
                .collect(Collectors.joining(", "));
    }

    PayoutStorm.Report check(
            List<PayoutStorm.Intent> intents,
            Map<String, PayoutStorm.Answer> answers,
            BigDecimal deposited,
            List<PayoutStorm.Intent> late,
            List<String> changed,
            String unsettled,
            double seconds)
            throws Exception {
        String l = options.ledgerSchema();
        String b = options.bankSchema();
        Map<String, Boolean> invariants = new LinkedHashMap<>();
        invariants.put(
                "every payout claim settled or at an operator, and every bank payment (late bookings included) in a"
                        + " statement the ledger applied" + (unsettled == null ? "" : ": " + unsettled.toUpperCase()),
                unsettled == null);
        Map<String, Claim> claims = new HashMap<>();
        db.query(
                "SELECT idem_key, state, reference, coalesce(sends, 0) FROM " + l
                        + ".idempotency_claim WHERE effect = 'payout'",
                rs -> claims.put(rs.getString(1), new Claim(rs.getInt(2), rs.getString(3), rs.getInt(4))));
        // the bank's payments: id -> reference, amount; the statement lines: entry id -> reference, verdict, amount
        Map<String, String[]> payments = new HashMap<>();
        db.query(
                "SELECT id, reference, amount FROM " + b + ".payment",
                rs -> payments.put(
                        rs.getString(1),
                        new String[] {rs.getString(2), rs.getBigDecimal(3).toPlainString()}));
        Map<String, String[]> lines = new HashMap<>();
        db.query(
                "SELECT entry_id, reference, verdict, amount FROM " + l
                        + ".idempotency_statement_line WHERE effect = 'payout'",
                rs -> lines.put(rs.getString(1), new String[] {
                    rs.getString(2), rs.getString(3), rs.getBigDecimal(4).toPlainString()
                }));
        Map<String, Integer> paid = new HashMap<>(); // payments by reference
        payments.values().forEach(p -> paid.merge(p[0], 1, Integer::sum));
        Map<String, Integer> duplicates = new HashMap<>(); // duplicate lines by reference
        Set<String> mismatched = new java.util.HashSet<>();
        BigDecimal flaggedAmount = BigDecimal.ZERO;
        for (String[] line : lines.values()) {
            if (line[1].equals("duplicate")) {
                duplicates.merge(line[0], 1, Integer::sum);
            }
            if (line[1].equals("mismatch")) {
                mismatched.add(line[0]);
            }
            if (line[1].equals("duplicate") || line[1].equals("mismatch")) {
                flaggedAmount = flaggedAmount.add(new BigDecimal(line[2]));
            }
        }
        Map<String, String[]> payouts = new HashMap<>(); // idem_key -> state, charge_id, amount
        db.query(
                "SELECT idem_key, state, charge_id, amount FROM " + l + ".payout",
                rs -> payouts.put(rs.getString(1), new String[] {
                    rs.getString(2), rs.getString(3), rs.getBigDecimal(4).toPlainString()
                }));

        // the bank's payments and the statements' lines
        boolean eachALine = payments.size() == lines.size()
                && payments.entrySet().stream().allMatch(e -> {
                    String[] line = lines.get(e.getKey());
                    return line != null
                            && line[0].equals(e.getValue()[0])
                            && new BigDecimal(line[2]).compareTo(new BigDecimal(e.getValue()[1])) == 0;
                });
        invariants.put(
                "every bank payment is one line of a statement the ledger applied (its entry id, reference and"
                        + " amount), and every line one payment (" + payments.size() + " payments, " + lines.size()
                        + " lines)",
                eachALine);
        Set<String> references = claims.values().stream()
                .map(Claim::reference)
                .filter(r -> r != null)
                .collect(Collectors.toSet());
        invariants.put(
                "no foreign payment: every bank payment's reference is a payout claim's, and no line is unmatched",
                references.containsAll(paid.keySet())
                        && lines.values().stream().noneMatch(x -> x[1].equals("unmatched")));
        long extra = paid.values().stream().mapToInt(n -> n - 1).sum();
        invariants.put(
                "no silent double payment: every reference the bank paid n > 1 times has exactly n - 1 lines flagged"
                        + " duplicate, and no other reference has one ("
                        + paid.values().stream().filter(n -> n > 1).count() + " references, " + extra
                        + " extra payments)",
                paid.entrySet().stream().allMatch(e -> duplicates.getOrDefault(e.getKey(), 0) == e.getValue() - 1)
                        && paid.keySet().containsAll(duplicates.keySet()));

        // each claim as it ended
        Map<String, Integer> counts = new LinkedHashMap<>();
        List.of(PAID_ONCE, RESENT, DOUBLE, OPERATOR, REFUSED).forEach(k -> counts.put(k, 0));
        List<String> appliedUnpaid = new ArrayList<>();
        List<String> refusedPaid = new ArrayList<>();
        List<String> atOperator = new ArrayList<>();
        int left = 0;
        for (Map.Entry<String, Claim> e : claims.entrySet()) {
            Claim c = e.getValue();
            int n = c.reference() == null ? 0 : paid.getOrDefault(c.reference(), 0);
            boolean mismatch = c.reference() != null && mismatched.contains(c.reference());
            switch (c.state()) {
                case 1 -> {
                    counts.merge(n >= 2 ? DOUBLE : c.sends() >= 2 ? RESENT : PAID_ONCE, 1, Integer::sum);
                    String[] payout = payouts.get(e.getKey());
                    String[] charge = payout == null || payout[1] == null ? null : payments.get(payout[1]);
                    if (n == 0
                            || payout == null
                            || !"paid".equals(payout[0])
                            || charge == null
                            || !charge[0].equals(c.reference())
                            || new BigDecimal(charge[1]).compareTo(new BigDecimal(payout[2])) != 0) {
                        appliedUnpaid.add(e.getKey());
                    }
                }
                case 2 -> {
                    counts.merge(REFUSED, 1, Integer::sum);
                    if (!(n == 0 || (n == 1 && mismatch))) {
                        refusedPaid.add(e.getKey());
                    }
                }
                case 4 -> {
                    counts.merge(OPERATOR, 1, Integer::sum);
                    if (!((c.sends() == 2 && n == 0) || mismatch)) {
                        atOperator.add(e.getKey());
                    }
                }
                default -> left++;
            }
        }
        invariants.put(
                "every claim settled applied has a bank payment of its reference, and its payout is paid with one,"
                        + " of its amount" + (appliedUnpaid.isEmpty() ? "" : "; not: " + appliedUnpaid),
                appliedUnpaid.isEmpty());
        invariants.put(
                "every claim settled refused has no bank payment, or one flagged a mismatch"
                        + (refusedPaid.isEmpty() ? "" : "; not: " + refusedPaid),
                refusedPaid.isEmpty());
        invariants.put(
                "every claim at an operator was found absent after its 2 sends with nothing paid, or flagged a"
                        + " mismatch (" + counts.get(OPERATOR) + ")"
                        + (atOperator.isEmpty() ? "" : "; not: " + atOperator),
                atOperator.isEmpty());
        invariants.put("no payout claim left in flight or sent (" + left + ")", left == 0);
        clients(intents, answers, claims, payouts, payments, invariants);
        books(deposited, flaggedAmount, invariants);

        // the late bookings after the load, and the kills
        boolean lateFlagged = late.stream().allMatch(i -> {
            Claim c = claims.get(i.key());
            PayoutStorm.Answer a = answers.get(i.key());
            return c != null
                    && c.state() == 1
                    && c.sends() == 2
                    && paid.getOrDefault(c.reference(), 0) == 2
                    && duplicates.getOrDefault(c.reference(), 0) == 1
                    && a != null
                    && a.status() == 201;
        });
        invariants.put(
                "each of the " + late.size() + " payouts booked late after the load was found absent, sent again,"
                        + " paid (201), and its second payment flagged a double payment",
                lateFlagged);
        int midSend = chaos.killsBetweenSendAndRecord();
        invariants.put(
                "kills between send and record: " + midSend + " of " + chaos.kills.get() + " (" + options.kills()
                        + " asked for; payouts each left sent and not recorded: " + chaos.sentAtKills + ")",
                options.kills() == 0 || midSend > 0);
        invariants.put(
                "every final answer replays unchanged (" + intents.size() + " intents asked once more"
                        + (changed.isEmpty() ? "" : "; changed: " + changed) + ")",
                changed.isEmpty());
        counts.put(MID_SEND, midSend);
        Map<String, Long> bank = new LinkedHashMap<>();
        bank.put("payments", (long) payments.size());
        bank.put(
                "references paid twice or more",
                paid.values().stream().filter(n -> n > 1).count());
        lines.values().stream()
                .collect(Collectors.groupingBy(x -> x[1] + " lines", java.util.TreeMap::new, Collectors.counting()))
                .forEach(bank::put);
        return new PayoutStorm.Report(
                intents.size(),
                PayoutChecks.answerCounts(intents, answers),
                chaos.kills.get(),
                chaos.restarts.get(),
                List.of(),
                Map.of(),
                invariants,
                seconds,
                bank,
                counts);
    }

    /**
     * No payout lost: every intent a client saw as paid has one paid payout, with the charge it was
     * told, a bank payment of its claim's reference; each intent's last answer is its claim's (201
     * applied, 422 refused, 502 at an operator); one payout per key; a payout held exactly while its
     * claim is at an operator.
     */
    private void clients(
            List<PayoutStorm.Intent> intents,
            Map<String, PayoutStorm.Answer> answers,
            Map<String, Claim> claims,
            Map<String, String[]> payouts,
            Map<String, String[]> payments,
            Map<String, Boolean> invariants)
            throws Exception {
        String l = options.ledgerSchema();
        boolean paidOnce = true;
        boolean asClaimed = true;
        for (PayoutStorm.Intent intent : intents) {
            PayoutStorm.Answer a = answers.get(intent.key());
            Claim c = claims.get(intent.key());
            if (a != null && a.status() == 201) {
                String told = a.json().path("chargeId").asText();
                String[] payout = payouts.get(intent.key());
                String[] payment = payments.get(told);
                paidOnce &= c != null
                        && payout != null
                        && "paid".equals(payout[0])
                        && told.equals(payout[1])
                        && payment != null
                        && payment[0].equals(c.reference());
            }
            int expected = c == null ? -1 : c.state() == 1 ? 201 : c.state() == 2 ? 422 : c.state() == 4 ? 502 : -1;
            asClaimed &= a != null && a.status() == expected;
        }
        invariants.put(
                "no payout lost: every intent a client saw as paid has its one paid payout, with the bank's payment"
                        + " it was told, of its claim's reference",
                paidOnce
                        && db.count("SELECT count(*) FROM (SELECT tenant, idem_key FROM " + l
                                        + ".payout GROUP BY tenant, idem_key HAVING count(*) > 1) x")
                                == 0);
        invariants.put(
                "each intent's last answer is its claim's: 201 applied, 422 refused, 502 at an operator", asClaimed);
        invariants.put(
                "a payout is held exactly while its claim is at an operator",
                db.count("SELECT count(*) FROM (SELECT tenant, idem_key FROM " + l
                                + ".payout WHERE state = 'in_flight') p FULL JOIN (SELECT scope, idem_key FROM " + l
                                + ".idempotency_claim WHERE effect = 'payout' AND state = 4) c"
                                + " ON c.scope = p.tenant AND c.idem_key = p.idem_key"
                                + " WHERE p.idem_key IS NULL OR c.idem_key IS NULL")
                        == 0);
    }

    /**
     * The books: {@link PayoutChecks#payoutBooks}; customer debits = payouts paid + held; the books'
     * paid_out account = the payouts paid; the bank's payments = that + the flagged lines' amounts.
     */
    private void books(BigDecimal deposited, BigDecimal flagged, Map<String, Boolean> invariants) throws Exception {
        String l = options.ledgerSchema();
        BigDecimal balances =
                db.decimal("SELECT coalesce(sum(balance), 0) FROM " + l + ".account WHERE kind = 'customer'");
        BigDecimal paid = db.decimal("SELECT coalesce(sum(amount), 0) FROM " + l + ".payout WHERE state = 'paid'");
        BigDecimal held = db.decimal("SELECT coalesce(sum(amount), 0) FROM " + l + ".payout WHERE state = 'in_flight'");
        invariants.put(
                "balances conserved: customer debits ("
                        + deposited.subtract(balances).toPlainString() + ") = payouts paid (" + paid.toPlainString()
                        + ") + holds (" + held.toPlainString() + ")",
                deposited.subtract(balances).compareTo(paid.add(held)) == 0);
        PayoutChecks.payoutBooks(db, l, held, invariants);
        BigDecimal paidOut = db.decimal("SELECT coalesce(sum(balance), 0) FROM " + l
                + ".account WHERE kind = 'paid_out' AND bank = '" + PayoutStorm.BANK + "'");
        BigDecimal bank = db.decimal("SELECT coalesce(sum(amount), 0) FROM " + options.bankSchema() + ".payment");
        invariants.put(
                "what the books say the bank paid out (" + paidOut.toPlainString() + ") is the payouts paid",
                paidOut.compareTo(paid) == 0);
        invariants.put(
                "the bank paid out (" + bank.toPlainString() + ") what the books say (" + paidOut.toPlainString()
                        + ") + the flagged double payments and mismatches (" + flagged.toPlainString() + ")",
                bank.compareTo(paidOut.add(flagged)) == 0);
    }
}
