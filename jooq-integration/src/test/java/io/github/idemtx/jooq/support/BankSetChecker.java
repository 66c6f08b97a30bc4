package io.github.idemtx.jooq.support;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.RetriesExhaustedException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;

/**
 * A checker in the style of Jepsen's bank and set tests, for transfers driven through
 * {@code run}. Callers {@link #record} every call's outcome (or error) as it happens, from any
 * thread; {@link #check} then compares the history with what the database holds:
 *
 * <ul>
 *   <li>bank: the total balance is conserved, every balance equals its opening balance plus its
 *       postings, every transfer has exactly its two postings, no balance is negative;
 *   <li>set: every key that was acknowledged (Executed or Replayed) is present exactly once, with
 *       the request that was acknowledged and the answer every acknowledgement carried; nothing is
 *       present that no caller asked for; a key whose every call failed definitely (the library
 *       said nothing was committed) is absent; a rejected key has no transfer; a key reused with
 *       another request was refused, never applied;
 *   <li>errors: each call ended in an outcome, a lost connection (the outcome of that call is
 *       unknown: its key may or may not be present) or {@link RetriesExhaustedException}; any other
 *       error is reported.
 * </ul>
 *
 * Keys whose calls all ended with unknown outcomes may be present or absent; the summary counts
 * both ("recovered" and "absent"), as Jepsen's set checker does.
 */
public final class BankSetChecker {

    /** What a caller asked for: move {@code amount} from one account to another, under {@code key}. */
    public record Intent(IdempotencyKey key, int from, int to, long amount) {
        public Fingerprint fingerprint() {
            return Fingerprint.sha256("transfer " + from + " " + to + " " + amount);
        }

        boolean matches(Bank.TransferRow row) {
            return row.key().equals(key.value()) && row.from() == from && row.to() == to && row.amount() == amount;
        }
    }

    /**
     * How a call ended. {@code REJECTION_THROWN}: the work's {@link Rejection} came out of {@code run}
     * as an exception, which the contract never allows (it was a bug once: a rejection whose rollback
     * met a dead connection, see {@code RejectionOnDeadConnectionTest}); it counts as a violation.
     */
    public enum Kind {
        EXECUTED,
        REPLAYED,
        REJECTED,
        FINGERPRINT_MISMATCH,
        IN_PROGRESS,
        RETRIES_EXHAUSTED,
        CONNECTION_LOST,
        REJECTION_THROWN,
        OTHER_ERROR
    }

    /** One call: what it asked, how it ended, and the value it acknowledged (Executed, Replayed). */
    public record Call(Intent intent, Kind kind, String value, Throwable error) {
        public boolean acknowledged() {
            return kind == Kind.EXECUTED || kind == Kind.REPLAYED;
        }

        public boolean definitelyFailed() {
            return kind == Kind.RETRIES_EXHAUSTED;
        }
    }

    /** The verdict: a short summary and every violation found. */
    public record Report(String summary, List<String> violations) {
        public boolean ok() {
            return violations.isEmpty();
        }
    }

    private final ConcurrentLinkedQueue<Call> history = new ConcurrentLinkedQueue<>();

    /** Records a call that returned. */
    public Call record(Intent intent, Outcome<String> outcome) {
        Call call = switch (outcome) {
            case Outcome.Executed<String> e -> new Call(intent, Kind.EXECUTED, e.value(), null);
            case Outcome.Replayed<String> r -> new Call(intent, Kind.REPLAYED, r.value(), null);
            case Outcome.Rejected<String> r ->
                new Call(intent, Kind.REJECTED, r.failure().code(), null);
            case Outcome.FingerprintMismatch<String> m -> new Call(intent, Kind.FINGERPRINT_MISMATCH, null, null);
            case Outcome.InProgress<String> p -> new Call(intent, Kind.IN_PROGRESS, null, null);
        };
        history.add(call);
        return call;
    }

    /** Records a call that threw. */
    public Call record(Intent intent, Throwable error) {
        Kind kind = error instanceof RetriesExhaustedException
                ? Kind.RETRIES_EXHAUSTED
                : Faults.involvesConnectionError(error)
                        ? Kind.CONNECTION_LOST
                        : error instanceof Rejection ? Kind.REJECTION_THROWN : Kind.OTHER_ERROR;
        if (kind == Kind.OTHER_ERROR) {
            System.err.println("BankSetChecker: unexpected error for " + intent + ", with its causes and suppressed:");
            error.printStackTrace(); // the violation names it; the trace says where it came from
        }
        Call call = new Call(intent, kind, null, error);
        history.add(call);
        return call;
    }

    public List<Call> history() {
        return List.copyOf(history);
    }

    /** Checks the history against {@code db}; {@code faults} are what was injected, for the summary. */
    public Report check(Bank.Snapshot db, Map<String, ?> faults) {
        List<String> violations = new ArrayList<>();
        List<Call> calls = history();

        // ---- bank
        long opened = db.initial().values().stream().mapToLong(Long::longValue).sum();
        long total = db.balances().values().stream().mapToLong(Long::longValue).sum();
        if (total != opened) {
            violations.add("total balance " + total + ", opened with " + opened);
        }
        Map<Integer, Long> posted = new TreeMap<>();
        Map<Long, List<Bank.PostingRow>> postingsOf = new HashMap<>();
        for (Bank.PostingRow p : db.postings()) {
            posted.merge(p.account(), p.amount(), Long::sum);
            postingsOf.computeIfAbsent(p.transferId(), id -> new ArrayList<>()).add(p);
        }
        for (Map.Entry<Integer, Long> account : db.initial().entrySet()) {
            long balance = db.balances().getOrDefault(account.getKey(), Long.MIN_VALUE);
            long expected = account.getValue() + posted.getOrDefault(account.getKey(), 0L);
            if (balance != expected) {
                violations.add("account " + account.getKey() + " holds " + balance
                        + "; opening balance and postings say " + expected);
            }
            if (balance < 0) {
                violations.add("account " + account.getKey() + " is overdrawn: " + balance);
            }
        }
        for (Bank.TransferRow t : db.transfers()) {
            List<Bank.PostingRow> ps = postingsOf.getOrDefault(t.id(), List.of());
            Set<Bank.PostingRow> expected = Set.of(
                    new Bank.PostingRow(t.id(), t.from(), -t.amount()),
                    new Bank.PostingRow(t.id(), t.to(), t.amount()));
            if (ps.size() != 2 || !new HashSet<>(ps).equals(expected)) {
                violations.add("transfer " + t.id() + " has postings " + ps);
            }
        }

        // ---- set
        Map<String, List<Call>> callsByKey = calls.stream()
                .collect(Collectors.groupingBy(c -> c.intent().key().value(), LinkedHashMap::new, Collectors.toList()));
        Map<String, List<Bank.TransferRow>> rowsByKey =
                db.transfers().stream().collect(Collectors.groupingBy(Bank.TransferRow::key));
        int acknowledgedKeys = 0;
        int recovered = 0;
        int absentUnknown = 0;
        int absentDefinite = 0;
        int rejectedKeys = 0;
        for (Map.Entry<String, List<Call>> entry : callsByKey.entrySet()) {
            String key = entry.getKey();
            List<Call> ofKey = entry.getValue();
            List<Bank.TransferRow> rows = rowsByKey.getOrDefault(key, List.of());
            Bank.ClaimRow claim = db.claims().get(key);
            Bank.TransferRow row = rows.size() == 1 ? rows.get(0) : null;
            if (rows.size() > 1) {
                violations.add("key " + key + " applied " + rows.size() + " times: " + rows);
            }
            List<Call> acks = ofKey.stream().filter(Call::acknowledged).toList();
            long executions =
                    ofKey.stream().filter(c -> c.kind() == Kind.EXECUTED).count();
            if (executions > 1) {
                violations.add("key " + key + " was answered Executed " + executions + " times");
            }
            if (!acks.isEmpty()) {
                acknowledgedKeys++;
                if (rows.isEmpty()) {
                    violations.add(
                            "key " + key + " was acknowledged (" + acks.get(0).kind() + ") but is absent");
                }
                for (Call ack : acks) {
                    if (row != null && !ack.intent().matches(row)) {
                        violations.add("key " + key + ": acknowledged " + ack.intent() + " but applied " + row);
                    }
                    if (row != null && !("transfer-" + row.id()).equals(ack.value())) {
                        violations.add("key " + key + ": answered " + ack.value() + " (" + ack.kind()
                                + ") but applied transfer " + row.id());
                    }
                    if (claim == null
                            || !Arrays.equals(
                                    claim.fingerprint(),
                                    ack.intent().fingerprint().bytes())) {
                        violations.add("key " + key + ": acknowledged a request its claim does not hold");
                    }
                }
            } else if (!rows.isEmpty()) {
                if (ofKey.stream().allMatch(Call::definitelyFailed)) {
                    violations.add("key " + key + " is present although every call failed definitely: "
                            + ofKey.stream().map(Call::kind).toList());
                } else if (ofKey.stream()
                        .anyMatch(c -> c.kind() == Kind.CONNECTION_LOST
                                || c.kind() == Kind.OTHER_ERROR
                                || c.kind() == Kind.IN_PROGRESS
                                || c.kind() == Kind.REJECTION_THROWN)) {
                    recovered++;
                }
            } else if (ofKey.stream().allMatch(Call::definitelyFailed)) {
                absentDefinite++;
                if (claim != null) {
                    violations.add("key " + key + " holds a claim although every call failed definitely");
                }
            } else if (ofKey.stream().noneMatch(c -> c.kind() == Kind.REJECTED)) {
                absentUnknown++;
            }
            if (!rows.isEmpty()
                    && ofKey.stream()
                            .noneMatch(
                                    c -> rows.stream().anyMatch(r -> c.intent().matches(r)))) {
                violations.add("key " + key + " applied " + rows + ", which no caller asked for with this key");
            }
            if (row != null
                    && claim != null
                    && ofKey.stream()
                            .filter(c -> c.intent().matches(row))
                            .noneMatch(c -> Arrays.equals(
                                    claim.fingerprint(),
                                    c.intent().fingerprint().bytes()))) {
                violations.add("key " + key + ": applied " + row + " under the claim of another request");
            }
            List<Call> rejections =
                    ofKey.stream().filter(c -> c.kind() == Kind.REJECTED).toList();
            if (!rejections.isEmpty()) {
                rejectedKeys++;
                if (!rows.isEmpty()) {
                    violations.add("key " + key + " was rejected but applied " + rows);
                }
                if (claim == null || claim.state() != 2) {
                    violations.add("key " + key + " was rejected but its claim is " + claim);
                }
            }
            for (Call c : ofKey) {
                if (c.kind() == Kind.FINGERPRINT_MISMATCH
                        && (claim == null
                                || Arrays.equals(
                                        claim.fingerprint(),
                                        c.intent().fingerprint().bytes()))) {
                    violations.add("key " + key + ": " + c.intent()
                            + " was refused as another request, but the claim is its own");
                }
                if (c.kind() == Kind.OTHER_ERROR) {
                    violations.add("key " + key + ": unexpected error " + c.error());
                }
                if (c.kind() == Kind.REJECTION_THROWN) {
                    violations.add("key " + key + ": run threw the work's " + c.error() + " (recorded: "
                            + (claim == null ? "nothing" : "state " + claim.state()) + ", applied: " + rows.size()
                            + ")");
                }
            }
            if (claim != null && claim.state() == 1 && rows.isEmpty()) {
                violations.add("key " + key + " completed its claim without a transfer");
            }
        }
        for (Map.Entry<String, List<Bank.TransferRow>> entry : rowsByKey.entrySet()) {
            if (!callsByKey.containsKey(entry.getKey())) {
                violations.add("transfer under key " + entry.getKey() + ", which no caller sent: " + entry.getValue());
            }
        }

        Map<Kind, Long> byKind =
                new TreeMap<>(calls.stream().collect(Collectors.groupingBy(Call::kind, Collectors.counting())));
        String summary = String.format(
                "bank/set check: %d calls over %d keys; outcomes %s%n"
                        + "  keys: %d acknowledged, %d rejected, %d present after unknown outcomes (recovered),"
                        + " %d absent after unknown outcomes, %d absent after definite failures%n"
                        + "  money: %d opened, %d now, %d transfers applied; faults: %s%n"
                        + "  %s",
                calls.size(),
                callsByKey.size(),
                byKind,
                acknowledgedKeys,
                rejectedKeys,
                recovered,
                absentUnknown,
                absentDefinite,
                opened,
                total,
                db.transfers().size(),
                faults,
                violations.isEmpty()
                        ? "no violations"
                        : violations.size() + " VIOLATIONS, first: "
                                + violations.subList(0, Math.min(10, violations.size())));
        return new Report(summary, List.copyOf(violations));
    }
}
