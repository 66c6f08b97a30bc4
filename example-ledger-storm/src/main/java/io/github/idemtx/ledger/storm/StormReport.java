package io.github.idemtx.ledger.storm;

import java.util.List;
import java.util.Map;

/**
 * What the storm saw and found, and how it is printed; {@code failover} is null without
 * {@code --failover}. {@link #renderInvariants} prints both storms' verdicts.
 */
public record StormReport(
        int intents,
        long requests,
        long replays,
        long conflicts,
        long serverErrors,
        long timeouts,
        long faults,
        double seconds,
        long p50Micros,
        long p99Micros,
        Map<String, Boolean> invariants,
        Map<String, Integer> answers,
        Map<String, Long> library,
        FailoverSummary failover,
        Map<String, Boolean> measured) {

    static final String SAME_ANSWER = "same answer";
    static final String EXECUTED_AGAIN = "executed again";
    static final String ANOTHER_ANSWER = "another answer";

    /**
     * What the failovers did and cost: {@code lostExecuted} 201s and {@code lostOther} other final
     * answers the promoted primary no longer holds (measured before any key is sent again), and
     * what sending every key once more afterwards answered ({@code "same answer"}, {@code "executed
     * again"}: a 201 with another transfer, {@code "another answer"}).
     */
    public record FailoverSummary(
            String setUp,
            int planned,
            List<Fault> failovers,
            int finalAnswers,
            int lostExecuted,
            int lostOther,
            Map<String, Integer> resent) {
        public int lost() {
            return lostExecuted + lostOther;
        }

        public int executedAgain() {
            return resent.getOrDefault(EXECUTED_AGAIN, 0);
        }
    }

    /**
     * One fault of a failover storm: its kind, what was done (with the servers), the replicas'
     * largest lag just before (bytes, -1 unknown), and how long from the fault until a new primary
     * was out of recovery and until the cluster was healthy again.
     */
    public record Fault(String kind, String what, long lagBytes, long primaryMillis, long readyMillis) {}

    public boolean passed() {
        return allHold(invariants);
    }

    public String render() {
        StringBuilder out = new StringBuilder();
        out.append(String.format("%nstorm report%n"));
        out.append(String.format("  intents            %d (answers: %s)%n", intents, answers));
        int mismatches = answers.getOrDefault("422 currency_mismatch", 0);
        int unfunded = answers.getOrDefault("422 insufficient_funds", 0);
        out.append(String.format(
                "  %-18s %s%n",
                "",
                String.format(
                        "422s are the intent mix's refusals, on purpose: %d currency_mismatch (%.1f%% of"
                                + " intents; 85%% are transfers and one account in ten holds USD, so about 15%% expected), %d insufficient_funds"
                                + " (%.1f%%; transfers of up to 400.00 drain balances of 500-2000)",
                        mismatches,
                        100.0 * mismatches / Math.max(1, intents),
                        unfunded,
                        100.0 * unfunded / Math.max(1, intents))));
        out.append(String.format(
                "  requests sent      %d (replayed answers %d, 409s %d, 5xx %d, client timeouts %d)%n",
                requests, replays, conflicts, serverErrors, timeouts));
        if (failover == null) {
            if (faults > 0) {
                out.append(String.format(
                        "  %-18s %s%n",
                        "",
                        "5xx are expected here: a connection kill fails the request it hits (the progress lines"
                                + " \"ledger: ... answered 503\"), and the client sends it again with its key"));
            }
            out.append(String.format("  faults injected    %d connection kills%n", faults));
        } else {
            out.append(String.format(
                    "  faults injected    %d of %d (%s); a new primary out of recovery after %s ms; the replicas'"
                            + " lag sampled just before each: %s bytes%n",
                    failover.failovers().size(),
                    failover.planned(),
                    failover.setUp(),
                    failover.failovers().stream()
                            .map(f -> Long.toString(f.primaryMillis()))
                            .toList(),
                    failover.failovers().stream()
                            .map(f -> Long.toString(f.lagBytes()))
                            .toList()));
            failover.failovers().stream()
                    .collect(java.util.stream.Collectors.groupingBy(
                            Fault::kind, java.util.TreeMap::new, java.util.stream.Collectors.counting()))
                    .forEach((what, n) -> out.append(String.format("  %-18s %d x %s%n", "", n, what)));
            out.append(String.format(
                    "  answers lost       %d of %d final answers missing on the promoted primary (%d were 201s, %d others)%n",
                    failover.lost(), failover.finalAnswers(), failover.lostExecuted(), failover.lostOther()));
            out.append(
                    String.format("  keys sent again    every key once more after the load: %s%n", failover.resent()));
        }
        out.append(String.format(
                "  throughput         %.0f intents/s, %.0f requests/s over %.1f s%n",
                intents / seconds, requests / seconds, seconds));
        out.append(String.format(
                "  latency            p50 %.1f ms, p99 %.1f ms%n", p50Micros / 1000.0, p99Micros / 1000.0));
        if (!library.isEmpty()) {
            out.append(String.format("  library (/metrics) %s%n", library));
        }
        renderInvariants(out, invariants);
        if (!measured.isEmpty()) {
            out.append(String.format(
                    "  measured, not required (asynchronous replication promises none of these across a failover):%n"));
            measured.forEach((name, ok) -> out.append(String.format("  %-4s %s%n", ok ? "held" : "LOST", name)));
        }
        return out.append(verdict(invariants)).toString();
    }

    /** Whether every invariant holds. */
    static boolean allHold(Map<String, Boolean> invariants) {
        return invariants.values().stream().allMatch(Boolean::booleanValue);
    }

    /** One PASS or FAIL line per invariant. */
    static void renderInvariants(StringBuilder out, Map<String, Boolean> invariants) {
        invariants.forEach((name, ok) -> out.append(String.format("  %-4s %s%n", ok ? "PASS" : "FAIL", name)));
    }

    /** {@code out} with one line per invariant and the verdict after it: how every storm's report ends. */
    static String ending(StringBuilder out, Map<String, Boolean> invariants) {
        renderInvariants(out, invariants);
        return out.append(verdict(invariants)).toString();
    }

    /** The last line of a report. */
    static String verdict(Map<String, Boolean> invariants) {
        return allHold(invariants) ? "  all invariants hold\n" : "  SOME INVARIANTS FAILED\n";
    }
}
