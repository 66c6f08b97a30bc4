package io.github.idemtx.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.ToDoubleFunction;
import org.HdrHistogram.Histogram;

/**
 * Turns segments into the comparison: medians over rounds, ratios taken round by round (each
 * strategy against {@code bare} of the same round and thread count, so drift between rounds
 * cancels), merged latency histograms, the goals, and the table, JSON, CSV and SVG outputs.
 */
final class Report {

    static final String MAIN = "main";
    static final String GROWTH = "growth";
    /** The retry-share phase; its segments' phase is {@code retry-share:<step>}, the step's index in {@code --retry-shares}. */
    static final String RETRY_SHARE = "retry-share";

    /** One strategy at one thread count in one phase, over its rounds. */
    record Group(String phase, long tableTarget, String strategy, int threads, List<SegmentResult> rounds) {

        double ops() {
            return median(rounds, SegmentResult::opsPerSecond);
        }

        double calls() {
            return median(rounds, SegmentResult::callsPerSecond);
        }

        Histogram histogram() {
            Histogram h = rounds.get(0).histogram().copy();
            for (int i = 1; i < rounds.size(); i++) {
                h.add(rounds.get(i).histogram());
            }
            return h;
        }

        double percentileMs(double p) {
            Histogram h = histogram();
            return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(p) / 1000.0;
        }

        long errors() {
            return rounds.stream().mapToLong(SegmentResult::errors).sum();
        }

        long kind(Strategy.Kind k) {
            return rounds.stream().mapToLong(r -> r.kinds().get(k)).sum();
        }

        long totalCalls() {
            return rounds.stream().mapToLong(SegmentResult::measured).sum();
        }

        double roundTrips() {
            return median(rounds, SegmentResult::roundTripsPerCall);
        }

        ClaimTable.Stats atStart() {
            return rounds.get(0).atStart();
        }

        Double extraMedian(String key) {
            List<Double> v = new ArrayList<>();
            for (SegmentResult r : rounds) {
                if (r.extra().get(key) instanceof Number n) {
                    v.add(n.doubleValue());
                }
            }
            return v.isEmpty() ? null : medianOf(v);
        }

        String firstError() {
            return rounds.stream()
                    .map(SegmentResult::firstError)
                    .filter(Objects::nonNull)
                    .findFirst()
                    .orElse(null);
        }
    }

    /** A goal from the issue, evaluated. */
    record Goal(String name, String target, Double value, Boolean met, String note, String spread) {
        Goal(String name, String target, Double value, Boolean met, String note) {
            this(name, target, value, met, note, null);
        }
    }

    private final List<SegmentResult> segments;
    private final Map<String, Group> groups = new LinkedHashMap<>();
    private final Map<String, Object> environment;
    private final Map<String, Object> options;
    private final List<Map<String, Object>> profile;
    private final Map<String, Object> loads;
    private final Goals goal;

    Report(
            List<SegmentResult> segments,
            Map<String, Object> environment,
            Map<String, Object> options,
            List<Map<String, Object>> profile,
            Map<String, Object> loads,
            Goals goals) {
        this.goal = goals;
        this.segments = segments;
        this.environment = environment;
        this.options = options;
        this.profile = profile;
        this.loads = loads;
        for (SegmentResult s : segments) {
            String[] p = s.phase().split(":");
            long target = p.length > 1 ? Long.parseLong(p[1]) : 0;
            groups.computeIfAbsent(
                            s.phase() + "|" + s.strategy() + "|" + s.threads(),
                            k -> new Group(p[0], target, s.strategy(), s.threads(), new ArrayList<>()))
                    .rounds()
                    .add(s);
        }
    }

    List<Group> groups() {
        return List.copyOf(groups.values());
    }

    Group group(String phase, String strategy, int threads) {
        return groups.get(phase + "|" + strategy + "|" + threads);
    }

    /** The median over rounds of a/b, each pair from the same round; null if either is missing. */
    Double ratio(String phase, String a, String b, int threads) {
        List<Double> v = ratios(phase, a, b, threads);
        return v.isEmpty() ? null : medianOf(v);
    }

    /** The per-round ratios a/b, sorted. */
    List<Double> ratios(String phase, String a, String b, int threads) {
        Group ga = group(phase, a, threads);
        Group gb = group(phase, b, threads);
        List<Double> v = new ArrayList<>();
        if (ga == null || gb == null) {
            return v;
        }
        for (SegmentResult ra : ga.rounds()) {
            for (SegmentResult rb : gb.rounds()) {
                if (ra.round() == rb.round() && rb.opsPerSecond() > 0) {
                    v.add(ra.opsPerSecond() / rb.opsPerSecond());
                }
            }
        }
        v.sort(Comparator.naturalOrder());
        return v;
    }

    /** The interquartile range of the per-round ratios, as "lo-hi", or "-" with fewer than 3 rounds. */
    String spread(String phase, String a, String b, int threads) {
        List<Double> v = ratios(phase, a, b, threads);
        if (v.size() < 3) {
            return "-";
        }
        return String.format(Locale.ROOT, "%.2f-%.2f", quantile(v, 0.25), quantile(v, 0.75));
    }

    static double quantile(List<Double> sorted, double q) {
        double pos = q * (sorted.size() - 1);
        int lo = (int) Math.floor(pos);
        int hi = (int) Math.ceil(pos);
        return sorted.get(lo) + (sorted.get(hi) - sorted.get(lo)) * (pos - lo);
    }

    Double ratioToBare(Group g) {
        return ratio(phaseKey(g), g.strategy(), Strategies.BARE, g.threads());
    }

    private static String phaseKey(Group g) {
        return g.phase().equals(MAIN) ? MAIN : g.phase() + ":" + g.tableTarget();
    }

    /** The retry-share phase's steps, as percentages in order (from the run's options). */
    @SuppressWarnings("unchecked")
    List<Integer> retryShares() {
        Object shares = options.get("retry_shares_pct");
        boolean ran = groups.values().stream().anyMatch(g -> g.phase().equals(RETRY_SHARE));
        return ran && shares instanceof List<?> l ? (List<Integer>) l : List.of();
    }

    /** The thread counts of the retry-share phase. */
    List<Integer> retryShareThreads() {
        return groups.values().stream()
                .filter(g -> g.phase().equals(RETRY_SHARE))
                .map(Group::threads)
                .distinct()
                .sorted()
                .toList();
    }

    /**
     * The per-round ratios of the adaptive mode to the better of the two fixed modes at {@code step}
     * of the retry-share phase (the one with the higher median throughput there: which mode is
     * better is a property of the share, and taking the better of two noisy figures round by round
     * would bias the ratio down by the noise alone), sorted; empty unless all three ran.
     */
    List<Double> mixedOverBestFixed(int step, int threads) {
        String phase = RETRY_SHARE + ":" + step;
        Group wf = group(phase, Strategies.MIXED_WORK_FIRST, threads);
        Group cf = group(phase, Strategies.MIXED_CLAIM_FIRST, threads);
        if (wf == null || cf == null) {
            return new ArrayList<>();
        }
        return ratios(phase, Strategies.MIXED_ADAPTIVE, bestFixed(step, threads), threads);
    }

    /** The fixed mode's strategy with the higher median throughput at {@code step}. */
    String bestFixed(int step, int threads) {
        String phase = RETRY_SHARE + ":" + step;
        Group wf = group(phase, Strategies.MIXED_WORK_FIRST, threads);
        Group cf = group(phase, Strategies.MIXED_CLAIM_FIRST, threads);
        return wf != null && cf != null && cf.ops() > wf.ops()
                ? Strategies.MIXED_CLAIM_FIRST
                : Strategies.MIXED_WORK_FIRST;
    }

    List<Integer> mainThreads() {
        return groups.values().stream()
                .filter(g -> g.phase().equals(MAIN))
                .map(Group::threads)
                .distinct()
                .sorted()
                .toList();
    }

    List<Long> growthTargets() {
        return groups.values().stream()
                .filter(g -> g.phase().equals(GROWTH))
                .map(Group::tableTarget)
                .distinct()
                .sorted()
                .toList();
    }

    List<Integer> growthThreads() {
        return groups.values().stream()
                .filter(g -> g.phase().equals(GROWTH))
                .map(Group::threads)
                .distinct()
                .sorted()
                .toList();
    }

    // ------------------------------------------------------------------ goals

    List<Goal> goals() {
        List<Goal> goals = new ArrayList<>();
        // each claim order against its own floor: the default (claim-first) against the claim-first
        // floor, the opt-in orders (working first on fresh keys) against the work-first floor
        for (String[] pair : new String[][] {
            {Strategies.CLAIM, Strategies.FLOOR_CLAIM_FIRST},
            {Strategies.CLAIM_WORK_FIRST, Strategies.FLOOR},
            {Strategies.CLAIM_ADAPTIVE, Strategies.FLOOR}
        }) {
            for (int t : mainThreads()) {
                Double v = ratio(MAIN, pair[0], pair[1], t);
                if (v != null || pair[0].equals(Strategies.CLAIM)) {
                    goals.add(new Goal(
                            pair[0] + "/" + pair[1] + " at " + t + " client" + (t == 1 ? "" : "s"),
                            Goals.atLeast(goal.claimOverFloor()),
                            v,
                            v == null ? null : v >= goal.claimOverFloor(),
                            pair[0].equals(Strategies.CLAIM) ? "the default, CLAIM_FIRST, against its floor" : null,
                            spread(MAIN, pair[0], pair[1], t)));
                }
            }
        }
        for (String[] pair : new String[][] {
            {Strategies.CLAIM, Strategies.FLOOR, "the default against the work-first floor: one round trip more"},
            {Strategies.FLOOR_CLAIM_FIRST, Strategies.FLOOR, "the claim-first floor against the work-first one"}
        }) {
            for (int t : mainThreads()) {
                Double v = ratio(MAIN, pair[0], pair[1], t);
                if (v != null) {
                    goals.add(new Goal(
                            pair[0] + "/" + pair[1] + " at " + t + " client" + (t == 1 ? "" : "s"),
                            "reported",
                            v,
                            null,
                            pair[2],
                            spread(MAIN, pair[0], pair[1], t)));
                }
            }
        }
        int eightClients = mainThreads().contains(8) ? 8 : -1;
        Group claim8 = group(MAIN, Strategies.CLAIM, eightClients);
        Group floor8 = group(MAIN, Strategies.FLOOR_CLAIM_FIRST, eightClients);
        if (claim8 != null && floor8 != null) {
            double p99 = claim8.percentileMs(99) / floor8.percentileMs(99);
            goals.add(new Goal(
                    "claim p99 / floor-claim-first p99 at 8 clients",
                    Goals.atMost(goal.claimP99OverFloorP99()),
                    p99,
                    p99 <= goal.claimP99OverFloorP99(),
                    String.format(
                            Locale.ROOT,
                            "%.2f ms vs %.2f ms (merged histograms)",
                            claim8.percentileMs(99),
                            floor8.percentileMs(99))));
        }
        for (int t : mainThreads()) {
            Double v = ratio(MAIN, Strategies.REPLAY_WORK_FIRST, Strategies.BARE, t);
            if (v != null) {
                goals.add(new Goal(
                        "replay-work-first/bare at " + t + " client" + (t == 1 ? "" : "s"),
                        "reported",
                        v,
                        null,
                        "a retry in WORK_FIRST: the work and its insert rolled back, then the read",
                        spread(MAIN, Strategies.REPLAY_WORK_FIRST, Strategies.BARE, t)));
            }
        }
        for (int t : mainThreads()) {
            Double share = breakEvenRetryShare(t);
            if (share != null) {
                goals.add(new Goal(
                        "retry share at which WORK_FIRST and CLAIM_FIRST cost the same, " + t + " client"
                                + (t == 1 ? "" : "s"),
                        "reported",
                        share,
                        null,
                        "below it WORK_FIRST costs less per call; from the medians of claim-work-first, claim,"
                                + " replay-work-first, replay"));
            }
        }
        List<Integer> shares = retryShares();
        for (int t : retryShareThreads()) {
            for (int step = 0; step < shares.size(); step++) {
                List<Double> v = mixedOverBestFixed(step, t);
                Double median = v.isEmpty() ? null : medianOf(v);
                goals.add(new Goal(
                        "mixed/best-fixed at " + shares.get(step) + "% retries (step " + (step + 1) + "), " + t
                                + " client" + (t == 1 ? "" : "s"),
                        Goals.atLeast(goal.mixedOverBestFixed()),
                        median,
                        median == null ? null : median >= goal.mixedOverBestFixed(),
                        "the adaptive mode against the better fixed mode there, "
                                + bestFixed(step, t).substring("mixed-".length()),
                        v.size() < 3
                                ? "-"
                                : String.format(Locale.ROOT, "%.2f-%.2f", quantile(v, 0.25), quantile(v, 0.75))));
            }
        }
        for (int t : mainThreads()) {
            Double v = ratio(MAIN, Strategies.CLAIM_METRICS, Strategies.CLAIM, t);
            if (v != null) {
                goals.add(new Goal(
                        "claim+metrics/claim at " + t + " client" + (t == 1 ? "" : "s"),
                        Goals.atLeast(goal.metricsOverClaim()),
                        v,
                        v >= goal.metricsOverClaim(),
                        null,
                        spread(MAIN, Strategies.CLAIM_METRICS, Strategies.CLAIM, t)));
            }
        }
        for (int t : mainThreads()) {
            Double v = ratio(MAIN, Strategies.REMOTE_EFFECT, Strategies.REMOTE_FLOOR, t);
            if (v != null) {
                goals.add(new Goal(
                        "remote-effect/remote-floor at " + t + " client" + (t == 1 ? "" : "s"),
                        Goals.atLeast(goal.remoteEffectOverFloor()),
                        v,
                        v >= goal.remoteEffectOverFloor(),
                        "against the least an exactly-once remote call with a durable in-flight record costs",
                        spread(MAIN, Strategies.REMOTE_EFFECT, Strategies.REMOTE_FLOOR, t)));
            }
        }
        for (int t : mainThreads()) {
            Double v = ratio(MAIN, Strategies.REMOTE_EFFECT, Strategies.REMOTE_BARE, t);
            if (v != null) {
                goals.add(new Goal(
                        "remote-effect/remote-bare at " + t + " client" + (t == 1 ? "" : "s"),
                        "reported",
                        v,
                        null,
                        "ExternalEffect (claim in flight, call, fenced record with the transfer) against the "
                                + Strategies.REMOTE_LATENCY_MILLIS + " ms remote stub plus one transaction",
                        spread(MAIN, Strategies.REMOTE_EFFECT, Strategies.REMOTE_BARE, t)));
            }
        }
        int eight = mainThreads().contains(8)
                ? 8
                : mainThreads().isEmpty() ? 8 : mainThreads().get(mainThreads().size() - 1);
        Double ct = ratio(MAIN, Strategies.CLAIM, Strategies.THREE_TX, eight);
        goals.add(new Goal(
                "claim/three-tx at " + eight + " clients",
                Goals.atLeast(goal.claimOverThreeTx()),
                ct,
                ct == null ? null : ct >= goal.claimOverThreeTx(),
                eight == 8 ? null : "8 clients not measured; shown for " + eight,
                spread(MAIN, Strategies.CLAIM, Strategies.THREE_TX, eight)));
        for (int t : mainThreads()) {
            Double v = ratio(MAIN, Strategies.REPLAY, Strategies.BARE, t);
            goals.add(new Goal(
                    "replay/bare at " + t + " client" + (t == 1 ? "" : "s"),
                    Goals.atLeast(goal.replayOverBare()),
                    v,
                    v == null ? null : v >= goal.replayOverBare(),
                    null,
                    spread(MAIN, Strategies.REPLAY, Strategies.BARE, t)));
        }
        List<Long> targets = growthTargets();
        if (targets.size() > 1) {
            long largest = targets.get(targets.size() - 1);
            for (int t : growthThreads()) {
                Double empty = ratio(GROWTH + ":0", Strategies.CLAIM, Strategies.BARE, t);
                Double big = ratio(GROWTH + ":" + largest, Strategies.CLAIM, Strategies.BARE, t);
                Double rel = empty == null || big == null ? null : big / empty;
                goals.add(new Goal(
                        "claim ratio with " + human(largest) + " rows / empty table, " + t + " client"
                                + (t == 1 ? "" : "s"),
                        Goals.atLeast(goal.grownOverEmpty()),
                        rel,
                        rel == null ? null : rel >= goal.grownOverEmpty(),
                        largest >= goal.grownRows()
                                ? null
                                : "goal names " + human(goal.grownRows()) + " rows; measured at " + human(largest)));
            }
        } else {
            goals.add(new Goal(
                    "claim ratio with " + human(goal.grownRows()) + " rows / empty table",
                    Goals.atLeast(goal.grownOverEmpty()),
                    null,
                    null,
                    "not measured in this run (--table-rows 1000000," + goal.grownRows() + ")"));
        }
        return goals;
    }

    /**
     * The share p of retries (calls for a key that already completed) at which both claim modes cost
     * the same time per call: (1-p)/claim-work-first + p/replay-work-first = (1-p)/claim + p/replay, with
     * each strategy's median throughput at {@code threads}; null unless all four ran and the modes differ.
     */
    Double breakEvenRetryShare(int threads) {
        Group wf = group(MAIN, Strategies.CLAIM_WORK_FIRST, threads);
        Group rf = group(MAIN, Strategies.CLAIM, threads); // the default, CLAIM_FIRST
        Group wfReplay = group(MAIN, Strategies.REPLAY_WORK_FIRST, threads);
        Group rfReplay = group(MAIN, Strategies.REPLAY, threads);
        if (wf == null || rf == null || wfReplay == null || rfReplay == null) {
            return null;
        }
        double freshGain = 1 / rf.ops() - 1 / wf.ops(); // what WORK_FIRST saves per fresh key
        double retryLoss = 1 / wfReplay.ops() - 1 / rfReplay.ops(); // what it costs per retry
        if (!(freshGain > 0) || !(retryLoss > 0)) {
            return null;
        }
        return freshGain / (freshGain + retryLoss);
    }

    // ------------------------------------------------------------------ console

    String table() {
        StringBuilder sb = new StringBuilder();
        List<Group> main = groups.values().stream()
                .filter(g -> g.phase().equals(MAIN))
                .sorted(Comparator.comparingInt((Group g) -> order(g.strategy())))
                .toList();
        if (!main.isEmpty()) {
            sb.append("Main comparison: medians of ")
                    .append(main.get(0).rounds().size())
                    .append(" interleaved rounds; ratios are per-round ratios to bare, medianed\n");
            sb.append(
                    "(IQR: interquartile range of the per-round ratios; cli us / srv us: CPU time per call of the bench JVM,"
                            + " all threads, and of the server backends of its pool)\n");
            sb.append(String.format(
                    Locale.ROOT,
                    "%-18s %3s %12s %10s %7s %10s %8s %8s %9s %6s %8s %8s %6s%n",
                    "strategy",
                    "thr",
                    "claim rows@0",
                    "ops/s",
                    "x bare",
                    "IQR",
                    "p50 ms",
                    "p99 ms",
                    "p99.9 ms",
                    "rt/op",
                    "cli us",
                    "srv us",
                    "errors"));
            for (int t : mainThreads()) {
                for (Group g : main) {
                    if (g.threads() != t) {
                        continue;
                    }
                    sb.append(String.format(
                            Locale.ROOT,
                            "%-18s %3d %12s %10.1f %7s %10s %8.2f %8.2f %9.2f %6.2f %8s %8s %6d%n",
                            g.strategy(),
                            g.threads(),
                            human(g.atStart().rows()),
                            g.ops(),
                            fmt(ratioToBare(g)),
                            g.strategy().equals(Strategies.BARE)
                                    ? ""
                                    : spread(MAIN, g.strategy(), Strategies.BARE, g.threads()),
                            g.percentileMs(50),
                            g.percentileMs(99),
                            g.percentileMs(99.9),
                            g.roundTrips(),
                            fmt0(g.extraMedian("client_cpu_us_per_call")),
                            fmt0(g.extraMedian("server_cpu_us_per_call")),
                            g.errors()));
                }
            }
            for (Group g : main) {
                if (g.strategy().equals(Strategies.BURST)) {
                    long calls = g.totalCalls();
                    sb.append(String.format(
                            Locale.ROOT,
                            "  duplicate-burst, %d thread%s: ops/s counts distinct effects; %.1f calls/s; of %d calls %.1f%% executed,"
                                    + " %.1f%% waited then replayed, %.1f%% replayed at once, %.1f%% InProgress%n",
                            g.threads(),
                            g.threads() == 1 ? "" : "s",
                            g.calls(),
                            calls,
                            pct(g.kind(Strategy.Kind.EXECUTED), calls),
                            pct(g.kind(Strategy.Kind.WAITED), calls),
                            pct(g.kind(Strategy.Kind.REPLAYED), calls),
                            pct(g.kind(Strategy.Kind.IN_PROGRESS), calls)));
                }
            }
            for (Group g : main) {
                if (g.errors() > 0 || g.kind(Strategy.Kind.OTHER) > 0) {
                    sb.append("  WARNING ")
                            .append(g.strategy())
                            .append(" x")
                            .append(g.threads())
                            .append(": ")
                            .append(g.errors())
                            .append(" errors, ")
                            .append(g.kind(Strategy.Kind.OTHER))
                            .append(" unexpected outcomes; first error: ")
                            .append(g.firstError())
                            .append('\n');
                }
            }
        }
        List<Integer> shares = retryShares();
        if (!shares.isEmpty()) {
            sb.append("\nRetry share: ADAPTIVE against WORK_FIRST and CLAIM_FIRST on the same traffic,"
                    + " step by step; medians over rounds\n");
            sb.append(String.format(
                    Locale.ROOT,
                    "%4s %6s %3s %12s %12s %12s %9s %10s%n",
                    "step",
                    "retry",
                    "thr",
                    "adaptive",
                    "work-first",
                    "claim-first",
                    "x best",
                    "IQR"));
            for (int t : retryShareThreads()) {
                for (int step = 0; step < shares.size(); step++) {
                    String phase = RETRY_SHARE + ":" + step;
                    List<Double> v = mixedOverBestFixed(step, t);
                    sb.append(String.format(
                            Locale.ROOT,
                            "%4d %5d%% %3d %12s %12s %12s %9s %10s%n",
                            step + 1,
                            shares.get(step),
                            t,
                            opsOf(group(phase, Strategies.MIXED_ADAPTIVE, t)),
                            opsOf(group(phase, Strategies.MIXED_WORK_FIRST, t)),
                            opsOf(group(phase, Strategies.MIXED_CLAIM_FIRST, t)),
                            v.isEmpty() ? "-" : fmt(medianOf(v)),
                            v.size() < 3
                                    ? "-"
                                    : String.format(Locale.ROOT, "%.2f-%.2f", quantile(v, 0.25), quantile(v, 0.75))));
                }
            }
        }
        if (!growthTargets().isEmpty()) {
            sb.append("\nGrowth: the claim table empty vs holding preloaded rows (half expired, half live);"
                    + " cfloor: floor-claim-first\n");
            sb.append(String.format(
                    Locale.ROOT,
                    "%12s %3s %10s %10s %8s %8s %11s %10s %11s %10s%n",
                    "claim rows@0",
                    "thr",
                    "bare ops/s",
                    "claim ops/s",
                    "claim/b",
                    "cfloor/b",
                    "claim/cfloor",
                    "c+purge/b",
                    "purged/s",
                    "MB@0"));
            for (long target : growthTargets()) {
                String phase = GROWTH + ":" + target;
                for (int t : growthThreads()) {
                    Group bare = group(phase, Strategies.BARE, t);
                    Group claim = group(phase, Strategies.CLAIM, t);
                    Group purge = group(phase, Strategies.CLAIM_PURGE, t);
                    if (bare == null || claim == null) {
                        continue;
                    }
                    sb.append(String.format(
                            Locale.ROOT,
                            "%12s %3d %10.1f %10.1f %8s %8s %11s %10s %11s %10.0f%n",
                            human(claim.atStart().rows()),
                            t,
                            bare.ops(),
                            claim.ops(),
                            fmt(ratio(phase, Strategies.CLAIM, Strategies.BARE, t)),
                            fmt(ratio(phase, Strategies.FLOOR_CLAIM_FIRST, Strategies.BARE, t)),
                            fmt(ratio(phase, Strategies.CLAIM, Strategies.FLOOR_CLAIM_FIRST, t)),
                            fmt(ratio(phase, Strategies.CLAIM_PURGE, Strategies.BARE, t)),
                            purge == null || purge.extraMedian("purged_rows_per_s") == null
                                    ? "-"
                                    : String.format(Locale.ROOT, "%.0f", purge.extraMedian("purged_rows_per_s")),
                            claim.atStart().bytes() / 1048576.0));
                }
            }
        }
        sb.append("\nGoals (the issue's by default, --goals to change them; measured in this run)\n");
        for (Goal g : goals()) {
            sb.append(String.format(
                    Locale.ROOT,
                    "  %-7s %-52s %8s (target %s)%s%s%n",
                    g.met() == null ? "n/a" : g.met() ? "MET" : "MISSED",
                    g.name(),
                    fmt(g.value()),
                    g.target(),
                    g.spread() == null || g.spread().equals("-") ? "" : ", per-round IQR " + g.spread(),
                    g.note() == null ? "" : " - " + g.note()));
        }
        if (!profile.isEmpty()) {
            sb.append("\nProfile: one thread, one connection, per operation\n");
            sb.append(String.format(
                    Locale.ROOT,
                    "%-18s %7s %6s %9s %9s %11s %11s %10s%n",
                    "strategy",
                    "mean ms",
                    "rt/op",
                    "bytes out",
                    "bytes in",
                    "client CPU",
                    "server CPU",
                    "alloc B"));
            for (Map<String, Object> p : profile) {
                sb.append(String.format(
                        Locale.ROOT,
                        "%-18s %7.3f %6.2f %9.0f %9.0f %9.0fus %9sus %10.0f%n",
                        p.get("strategy"),
                        p.get("mean_ms"),
                        p.get("round_trips_per_op"),
                        p.get("bytes_sent_per_op"),
                        p.get("bytes_received_per_op"),
                        p.get("client_cpu_us_per_op"),
                        p.get("server_backend_cpu_us_per_op") instanceof Double d
                                ? String.format(Locale.ROOT, "%.0f", d)
                                : "-",
                        p.get("client_alloc_bytes_per_op")));
            }
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------ files

    void write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("results.json"), Json.write(toMap()));
        Files.writeString(dir.resolve("results.csv"), csv());
        Files.writeString(dir.resolve("throughput.svg"), Svg.throughput(this));
        if (!growthTargets().isEmpty()) {
            Files.writeString(dir.resolve("growth.svg"), Svg.growth(this));
        }
        if (!retryShares().isEmpty()) {
            Files.writeString(dir.resolve("retry-share.svg"), Svg.retryShare(this));
        }
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("environment", environment);
        m.put("options", options);
        List<Map<String, Object>> summary = new ArrayList<>();
        for (Group g : groups.values()) {
            summary.add(summaryRow(g));
        }
        m.put("summary", summary);
        List<Map<String, Object>> goals = new ArrayList<>();
        for (Goal g : goals()) {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("goal", g.name());
            x.put("target", g.target());
            x.put("value", g.value());
            x.put("met", g.met());
            x.put("note", g.note());
            x.put("per_round_iqr", g.spread());
            goals.add(x);
        }
        m.put("goals", goals);
        m.put("profile", profile);
        m.put("loads", loads);
        List<Map<String, Object>> rounds = new ArrayList<>();
        for (SegmentResult s : segments) {
            rounds.add(s.toMap());
        }
        m.put("segments", rounds);
        return m;
    }

    private Map<String, Object> summaryRow(Group g) {
        Map<String, Object> x = new LinkedHashMap<>();
        x.put("phase", g.phase());
        x.put("table_rows_target", g.tableTarget());
        x.put("strategy", g.strategy());
        x.put("threads", g.threads());
        x.put("rounds", g.rounds().size());
        x.put("claim_rows_at_start", g.atStart().rows());
        x.put("claim_table_mb_at_start", g.atStart().bytes() / 1048576.0);
        x.put("ops_per_s", g.ops());
        x.put("ratio_to_bare", ratioToBare(g));
        List<Double> rs = ratios(phaseKey(g), g.strategy(), Strategies.BARE, g.threads());
        x.put("ratio_to_bare_p25", rs.size() < 3 ? null : quantile(rs, 0.25));
        x.put("ratio_to_bare_p75", rs.size() < 3 ? null : quantile(rs, 0.75));
        x.put("p50_ms", g.percentileMs(50));
        x.put("p99_ms", g.percentileMs(99));
        x.put("p999_ms", g.percentileMs(99.9));
        x.put("round_trips_per_call", g.roundTrips());
        x.put("errors", g.errors());
        x.put("calls_per_s", g.calls());
        long calls = g.totalCalls();
        x.put("executed", g.kind(Strategy.Kind.EXECUTED));
        x.put("waited", g.kind(Strategy.Kind.WAITED));
        x.put("replayed", g.kind(Strategy.Kind.REPLAYED));
        x.put("in_progress", g.kind(Strategy.Kind.IN_PROGRESS));
        x.put("other", g.kind(Strategy.Kind.OTHER));
        x.put("waited_fraction", calls == 0 ? null : (double) g.kind(Strategy.Kind.WAITED) / calls);
        x.put("in_progress_fraction", calls == 0 ? null : (double) g.kind(Strategy.Kind.IN_PROGRESS) / calls);
        x.put("purged_rows_per_s", g.extraMedian("purged_rows_per_s"));
        x.put("client_cpu_us_per_call", g.extraMedian("client_cpu_us_per_call"));
        x.put("server_cpu_us_per_call", g.extraMedian("server_cpu_us_per_call"));
        return x;
    }

    String csv() {
        StringBuilder sb = new StringBuilder();
        String[] cols = {
            "phase",
            "table_rows_target",
            "strategy",
            "threads",
            "rounds",
            "claim_rows_at_start",
            "claim_table_mb_at_start",
            "ops_per_s",
            "ratio_to_bare",
            "ratio_to_bare_p25",
            "ratio_to_bare_p75",
            "p50_ms",
            "p99_ms",
            "p999_ms",
            "round_trips_per_call",
            "errors",
            "calls_per_s",
            "executed",
            "waited",
            "replayed",
            "in_progress",
            "other",
            "waited_fraction",
            "in_progress_fraction",
            "purged_rows_per_s",
            "client_cpu_us_per_call",
            "server_cpu_us_per_call"
        };
        sb.append(String.join(",", cols)).append('\n');
        for (Group g : groups.values()) {
            Map<String, Object> row = summaryRow(g);
            List<String> cells = new ArrayList<>();
            for (String c : cols) {
                Object v = row.get(c);
                cells.add(
                        v == null
                                ? ""
                                : v instanceof Double d
                                        ? (d.isNaN() ? "" : String.format(Locale.ROOT, "%.4f", d))
                                        : v.toString());
            }
            sb.append(String.join(",", cells)).append('\n');
        }
        return sb.toString();
    }

    Map<String, Object> environment() {
        return environment;
    }

    // ------------------------------------------------------------------ helpers

    static double median(List<SegmentResult> rounds, ToDoubleFunction<SegmentResult> f) {
        List<Double> v = new ArrayList<>();
        for (SegmentResult r : rounds) {
            v.add(f.applyAsDouble(r));
        }
        return medianOf(v);
    }

    static double medianOf(List<Double> values) {
        List<Double> v = new ArrayList<>(values);
        v.sort(Comparator.naturalOrder());
        int n = v.size();
        if (n == 0) {
            return Double.NaN;
        }
        return n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2;
    }

    private static String opsOf(Group g) {
        return g == null ? "-" : String.format(Locale.ROOT, "%.1f", g.ops());
    }

    static int order(String strategy) {
        int i = Options.ALL_STRATEGIES.indexOf(strategy);
        return i < 0 ? Options.ALL_STRATEGIES.size() : i;
    }

    static String fmt0(Double v) {
        return v == null || v.isNaN() ? "-" : String.format(Locale.ROOT, "%.0f", v);
    }

    static String fmt(Double v) {
        return v == null || v.isNaN() ? "-" : String.format(Locale.ROOT, "%.2f", v);
    }

    private static double pct(long part, long whole) {
        return whole == 0 ? 0 : 100.0 * part / whole;
    }

    static String human(long n) {
        if (n >= 1_000_000) {
            return String.format(Locale.ROOT, n % 1_000_000 == 0 ? "%.0fM" : "%.2fM", n / 1e6);
        }
        if (n >= 10_000) {
            return String.format(Locale.ROOT, "%.0fk", n / 1e3);
        }
        return Long.toString(n);
    }
}
