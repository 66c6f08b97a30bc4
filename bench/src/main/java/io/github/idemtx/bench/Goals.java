package io.github.idemtx.bench;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The goals the report judges a run by (the numbers), with their defaults; {@code --goals}
 * overrides any of them by name, e.g. {@code --goals claim/floor=0.97,replay/bare=2}. Each is a
 * ratio of medians over rounds, per thread count, except {@code grown-rows}, the claim table's size
 * the growth goal names.
 *
 * @param claimOverFloor {@code claim/floor}: each claim order against its own floor, at least: the
 *     default ({@code claim}, CLAIM_FIRST) against {@code floor-claim-first}, {@code claim-work-first}
 *     and {@code claim-adaptive} (which works first on fresh keys) against {@code floor}
 * @param claimP99OverFloorP99 {@code claim-p99/floor-p99}: the default's tail at 8 clients against its
 *     floor's ({@code floor-claim-first}), at most
 * @param metricsOverClaim {@code claim+metrics/claim}: what Micrometer may cost, at least
 * @param claimOverThreeTx {@code claim/three-tx}: against the three-transaction middleware at 8 clients, at least
 * @param replayOverBare {@code replay/bare}: a replay against the bare transfer, at least
 * @param grownOverEmpty {@code grown/empty}: the claim ratio with {@code grownRows} rows against the empty table's, at least
 * @param grownRows {@code grown-rows}: the claim table's size the growth goal names
 * @param mixedOverBestFixed {@code mixed/best-fixed}: the default mode against the better fixed mode
 *     at each step of the retry-share phase, at least
 * @param remoteEffectOverFloor {@code remote-effect/remote-floor}: an external effect against the
 *     least one can cost, at least
 */
record Goals(
        double claimOverFloor,
        double claimP99OverFloorP99,
        double metricsOverClaim,
        double claimOverThreeTx,
        double replayOverBare,
        double grownOverEmpty,
        long grownRows,
        double mixedOverBestFixed,
        double remoteEffectOverFloor) {

    static final double DEFAULT_CLAIM_OVER_FLOOR = 0.95;
    static final double DEFAULT_CLAIM_P99_OVER_FLOOR_P99 = 1.10;
    static final double DEFAULT_METRICS_OVER_CLAIM = 0.98;
    static final double DEFAULT_CLAIM_OVER_THREE_TX = 1.65;
    static final double DEFAULT_REPLAY_OVER_BARE = 3;
    static final double DEFAULT_GROWN_OVER_EMPTY = 0.90;
    static final long DEFAULT_GROWN_ROWS = 10_000_000;
    static final double DEFAULT_MIXED_OVER_BEST_FIXED = 0.97;
    static final double DEFAULT_REMOTE_EFFECT_OVER_FLOOR = 0.95;

    static final Goals DEFAULTS = new Goals(
            DEFAULT_CLAIM_OVER_FLOOR,
            DEFAULT_CLAIM_P99_OVER_FLOOR_P99,
            DEFAULT_METRICS_OVER_CLAIM,
            DEFAULT_CLAIM_OVER_THREE_TX,
            DEFAULT_REPLAY_OVER_BARE,
            DEFAULT_GROWN_OVER_EMPTY,
            DEFAULT_GROWN_ROWS,
            DEFAULT_MIXED_OVER_BEST_FIXED,
            DEFAULT_REMOTE_EFFECT_OVER_FLOOR);

    Goals {
        for (double ratio : new double[] {
            claimOverFloor,
            claimP99OverFloorP99,
            metricsOverClaim,
            claimOverThreeTx,
            replayOverBare,
            grownOverEmpty,
            mixedOverBestFixed,
            remoteEffectOverFloor
        }) {
            if (!(ratio > 0) || Double.isInfinite(ratio)) {
                throw new IllegalArgumentException("--goals takes positive ratios, was " + ratio);
            }
        }
        if (grownRows < 1) {
            throw new IllegalArgumentException("--goals grown-rows must be at least 1, was " + grownRows);
        }
    }

    /**
     * The defaults with {@code spec}'s overrides: {@code name=value} pairs separated by commas, names
     * as {@link #describe()} gives them; blank for none.
     *
     * @throws IllegalArgumentException naming an unknown goal or a value that is not a number
     */
    static Goals parse(String spec) {
        Map<String, String> given = new LinkedHashMap<>();
        for (String pair : spec.split(",")) {
            if (pair.isBlank()) {
                continue;
            }
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException(
                        "--goals holds name=value pairs separated by commas, got '" + pair.trim() + "'");
            }
            given.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
        }
        Map<String, Object> known = DEFAULTS.describe();
        for (String name : given.keySet()) {
            if (!known.containsKey(name)) {
                throw new IllegalArgumentException("unknown goal '" + name + "'; known: " + known.keySet());
            }
        }
        try {
            return new Goals(
                    ratio(given, "claim/floor", DEFAULT_CLAIM_OVER_FLOOR),
                    ratio(given, "claim-p99/floor-p99", DEFAULT_CLAIM_P99_OVER_FLOOR_P99),
                    ratio(given, "claim+metrics/claim", DEFAULT_METRICS_OVER_CLAIM),
                    ratio(given, "claim/three-tx", DEFAULT_CLAIM_OVER_THREE_TX),
                    ratio(given, "replay/bare", DEFAULT_REPLAY_OVER_BARE),
                    ratio(given, "grown/empty", DEFAULT_GROWN_OVER_EMPTY),
                    Long.parseLong(given.getOrDefault("grown-rows", String.valueOf(DEFAULT_GROWN_ROWS))
                            .replace("_", "")),
                    ratio(given, "mixed/best-fixed", DEFAULT_MIXED_OVER_BEST_FIXED),
                    ratio(given, "remote-effect/remote-floor", DEFAULT_REMOTE_EFFECT_OVER_FLOOR));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--goals values are numbers: " + e.getMessage());
        }
    }

    private static double ratio(Map<String, String> given, String name, double fallback) {
        String v = given.get(name);
        return v == null ? fallback : Double.parseDouble(v);
    }

    /** The goals by name, as {@code --goals} takes them and the report's options show them. */
    Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("claim/floor", claimOverFloor);
        m.put("claim-p99/floor-p99", claimP99OverFloorP99);
        m.put("claim+metrics/claim", metricsOverClaim);
        m.put("claim/three-tx", claimOverThreeTx);
        m.put("replay/bare", replayOverBare);
        m.put("grown/empty", grownOverEmpty);
        m.put("grown-rows", grownRows);
        m.put("mixed/best-fixed", mixedOverBestFixed);
        m.put("remote-effect/remote-floor", remoteEffectOverFloor);
        return m;
    }

    /** A goal's target as the report prints it: {@code ">= 0.95"}. */
    static String atLeast(double ratio) {
        return ">= " + String.format(Locale.ROOT, "%.2f", ratio);
    }

    /** {@code "<= 1.15"}. */
    static String atMost(double ratio) {
        return "<= " + String.format(Locale.ROOT, "%.2f", ratio);
    }
}
