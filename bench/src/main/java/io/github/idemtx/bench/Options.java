package io.github.idemtx.bench;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The bench's settings, from command-line flags ({@code --name value} or {@code --name=value}),
 * with the database also taken from {@code BENCH_DB_URL}, {@code BENCH_DB_USER} and
 * {@code BENCH_DB_PASSWORD}. Immutable.
 */
record Options(
        String dbUrl,
        String dbUser,
        String dbPassword,
        String schema,
        List<String> strategies,
        List<Integer> threads,
        int rounds,
        Duration warmup,
        Duration duration,
        long warmupOps,
        long ops,
        Duration globalWarmup,
        List<Long> tableRows,
        List<Integer> growthThreads,
        int growthRounds,
        int accounts,
        int purgeLimit,
        Duration burstWait,
        int profileOps,
        Path out,
        boolean keepSchema,
        boolean quiet,
        List<String> phases,
        int poolSize,
        Goals goals,
        List<Integer> retryShares,
        List<Integer> retryShareThreads) {

    static final String DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/postgres";
    static final List<String> ALL_STRATEGIES = List.of(
            Strategies.BARE,
            Strategies.CLAIM,
            Strategies.CLAIM_WORK_FIRST,
            Strategies.CLAIM_ADAPTIVE,
            Strategies.REPLAY,
            Strategies.REPLAY_WORK_FIRST,
            Strategies.REPLAY_ADAPTIVE,
            Strategies.THREE_TX,
            Strategies.FLOOR,
            Strategies.FLOOR_CLAIM_FIRST,
            Strategies.BURST);

    /**
     * Names the bench had before: the fixed claim-first mode was {@code *-read-first} while ADAPTIVE
     * was the default; since CLAIM_FIRST is the default it is {@code claim} and {@code replay}.
     */
    static final Map<String, String> RENAMED = Map.of(
            "duplicate-storm", Strategies.BURST,
            "claim-read-first", Strategies.CLAIM,
            "replay-read-first", Strategies.REPLAY);

    /** Strategies run only when named: the external-effect mode against a remote stub of fixed latency. */
    static final List<String> OPTIONAL_STRATEGIES = List.of(
            Strategies.REMOTE_BARE, Strategies.REMOTE_FLOOR, Strategies.REMOTE_EFFECT, Strategies.CLAIM_METRICS);

    /**
     * The retry-share phase's strategies: the adaptive mode (first: the one the phase judges) and the
     * two fixed ones, on the same traffic.
     */
    static final List<String> MIXED_STRATEGIES =
            List.of(Strategies.MIXED_ADAPTIVE, Strategies.MIXED_WORK_FIRST, Strategies.MIXED_CLAIM_FIRST);

    /** Whether segments run for a fixed number of operations instead of a fixed time. */
    boolean opsMode() {
        return ops > 0;
    }

    /** The largest client thread count any phase uses. */
    int maxThreads() {
        int max = 1;
        for (int t : threads) {
            max = Math.max(max, t);
        }
        for (int t : growthThreads) {
            max = Math.max(max, t);
        }
        for (int t : retryShareThreads) {
            max = Math.max(max, t);
        }
        return max;
    }

    static final String USAGE = """
            Usage: bench [flags]   (exec:java: -Dexec.args="--flag value ...")
              --db-url URL          JDBC URL (env BENCH_DB_URL; default %s)
              --db-user NAME        (env BENCH_DB_USER; default postgres for the default URL)
              --db-password PW      (env BENCH_DB_PASSWORD)
              --schema NAME         schema to recreate and work in (default idemtx_bench; dropped at the end)
              --keep-schema         do not drop the schema at the end
              --strategies LIST     comma-separated, from %s (default all); also remote-bare,remote-floor,remote-effect (an external effect against a 2 ms remote stub, and the least one can cost) and claim+metrics (claim observed by Micrometer)
              --threads LIST        client thread counts (default 1,8,32)
              --pool-size N         connections the clients share (default: the largest thread count up to 8,
                                    plus one for the purge; 32 clients on it queue for a connection)
              --rounds N            interleaved rounds; medians are over rounds (default 10: many short
                                    rounds resist bursts of other load better than a few long ones)
              --warmup DUR          unrecorded warm-up at the start of each segment (default 250ms)
              --duration DUR        measured time of each segment (default 1.5s)
              --ops N               instead of --duration: operations measured per segment
              --warmup-ops N        with --ops: operations not recorded at the start of each segment
              --global-warmup DUR   JIT/pool warm-up before round 1, spread over the strategies (default 12s)
              --table-rows LIST     growth phase: claim ratio with the claim table empty and holding these
                                    many preloaded rows (half expired, half live), e.g. 1000000,10000000;
                                    also runs the purge beside `claim` (default: none, phase skipped)
              --growth-threads LIST thread counts of the growth phase (default 1,8)
              --growth-rounds N     rounds of the growth phase at each table size (default 10, as the main phase)
              --accounts N          ledger accounts (default 10000)
              --purge-limit N       purgeExpired(limit) per call in the purge runs (default 1000)
              --burst-wait DUR      duplicateWait of the duplicate-burst policy (default the library's, 5s)
              --profile-ops N       single-thread profile: operations per strategy (default 300; 0 = skip)
              --out DIR             where results.json, results.csv, throughput.svg go
                                    (default bench/target/bench-results, or -Dbench.out)
              --phases LIST         which parts run, from main,retry-share,profile,growth (default all; growth
                                    needs --table-rows)
              --retry-shares LIST   retry-share phase: percentages of calls retrying a completed key, one
                                    step each, in order, every round (default 0,1,10,30,0); the default
                                    mode, WORK_FIRST and CLAIM_FIRST run each step on the same traffic
              --retry-share-threads LIST  client thread counts of that phase (default 8)
              --goals LIST          what the report judges the run by, name=value pairs overriding the defaults:
                                    claim/floor=%s (each order against its own floor: claim/floor-claim-first,
                                    claim-work-first/floor, claim-adaptive/floor), claim-p99/floor-p99=%s (at
                                    most; claim against floor-claim-first), claim+metrics/claim=%s,
                                    claim/three-tx=%s, replay/bare=%s, grown/empty=%s, grown-rows=%d,
                                    mixed/best-fixed=%s, remote-effect/remote-floor=%s
              --quick               a one-minute sanity run: 1 round of 2s segments, 3s global warm-up
              --help
            Durations: 500ms, 4s, 2m.""";

    static Options parse(String[] args) {
        Map<String, String> flags = flags(args, Options::isSwitch, usage());
        if (flags.containsKey("help")) {
            throw new HelpRequested();
        }
        boolean quick = Boolean.parseBoolean(flags.remove("quick"));

        String url = take(flags, "db-url", env("BENCH_DB_URL", DEFAULT_URL));
        String user = take(flags, "db-user", env("BENCH_DB_USER", url.equals(DEFAULT_URL) ? "postgres" : null));
        String password = take(flags, "db-password", env("BENCH_DB_PASSWORD", null));
        String schema = take(flags, "schema", "idemtx_bench");
        List<String> strategies = new ArrayList<>(strings(take(flags, "strategies", String.join(",", ALL_STRATEGIES))));
        // the burst was called duplicate-storm before (the ledger's storm is another thing); the
        // read-first names are the default's now
        strategies.replaceAll(s -> RENAMED.getOrDefault(s, s));
        strategies = new ArrayList<>(new java.util.LinkedHashSet<>(strategies));
        for (String s : strategies) {
            if (!ALL_STRATEGIES.contains(s) && !OPTIONAL_STRATEGIES.contains(s)) {
                throw new IllegalArgumentException("unknown strategy '" + s + "'; known: " + ALL_STRATEGIES
                        + ", and when named: " + OPTIONAL_STRATEGIES);
            }
        }
        String threadsText = take(flags, "threads", "1,8,32");
        List<Integer> threads = ints(threadsText);
        int rounds = positive("rounds", whole("rounds", take(flags, "rounds", quick ? "1" : "10")));
        Duration warmup = duration(take(flags, "warmup", "250ms"));
        Duration duration = duration(take(flags, "duration", quick ? "2s" : "1.5s"));
        long ops = wholeLong("ops", take(flags, "ops", "0"));
        long warmupOps = wholeLong(
                "warmup-ops", take(flags, "warmup-ops", ops > 0 ? String.valueOf(Math.max(1, ops / 10)) : "0"));
        Duration globalWarmup = duration(take(flags, "global-warmup", quick ? "3s" : "12s"));
        List<Long> tableRows = new ArrayList<>();
        for (String s : strings(take(flags, "table-rows", ""))) {
            long rows = wholeLong("table-rows", s.replace("_", ""));
            if (rows < 1) {
                throw new IllegalArgumentException("--table-rows must be positive counts, was " + s);
            }
            tableRows.add(rows);
        }
        tableRows.sort(null);
        List<Integer> growthThreads = ints(take(flags, "growth-threads", "1,8"));
        int growthRounds =
                positive("growth-rounds", whole("growth-rounds", take(flags, "growth-rounds", quick ? "1" : "10")));
        int accounts = positive("accounts", whole("accounts", take(flags, "accounts", "10000")));
        if (accounts < 2) {
            throw new IllegalArgumentException("--accounts must be at least 2");
        }
        int purgeLimit = whole("purge-limit", take(flags, "purge-limit", "1000"));
        String burstWaitText = take(flags, "burst-wait", null);
        Duration burstWait = burstWaitText == null ? null : duration(burstWaitText);
        int profileOps = whole("profile-ops", take(flags, "profile-ops", "300"));
        String outText = take(flags, "out", System.getProperty("bench.out", "bench/target/bench-results"));
        boolean keep = Boolean.parseBoolean(take(flags, "keep-schema", "false"));
        boolean quiet = Boolean.parseBoolean(take(flags, "quiet", "false"));
        List<String> phases = strings(take(flags, "phases", "main,retry-share,profile,growth"));
        for (String p : phases) {
            if (!List.of("main", "retry-share", "profile", "growth").contains(p)) {
                throw new IllegalArgumentException(
                        "unknown phase '" + p + "'; known: main, retry-share, profile, growth");
            }
        }
        List<Integer> retryShares = percentages(take(flags, "retry-shares", "0,1,10,30,0"));
        List<Integer> retryShareThreads = ints(take(flags, "retry-share-threads", "8"));
        int largest = java.util.stream.Stream.of(threads, growthThreads, retryShareThreads)
                .flatMap(List::stream)
                .mapToInt(Integer::intValue)
                .max()
                .orElse(1);
        int poolSize = positive(
                "pool-size", whole("pool-size", take(flags, "pool-size", String.valueOf(Math.min(largest, 8) + 1))));
        Goals goals = Goals.parse(take(flags, "goals", ""));
        if (!flags.isEmpty()) {
            throw new IllegalArgumentException("unknown flag(s) " + flags.keySet() + "\n" + usage());
        }
        return new Options(
                url,
                user,
                password,
                schema,
                List.copyOf(strategies),
                List.copyOf(threads),
                rounds,
                warmup,
                duration,
                warmupOps,
                ops,
                globalWarmup,
                List.copyOf(tableRows),
                List.copyOf(growthThreads),
                growthRounds,
                accounts,
                purgeLimit,
                burstWait,
                profileOps,
                Path.of(outText),
                keep,
                quiet,
                List.copyOf(phases),
                poolSize,
                goals,
                List.copyOf(retryShares),
                List.copyOf(retryShareThreads));
    }

    /** Whole percentages from 0 to 100, comma-separated. */
    private static List<Integer> percentages(String text) {
        List<Integer> shares = new ArrayList<>();
        for (String s : strings(text)) {
            int v = whole("retry-shares", s);
            if (v < 0 || v > 100) {
                throw new IllegalArgumentException("--retry-shares are percentages from 0 to 100, was " + v);
            }
            shares.add(v);
        }
        if (shares.isEmpty()) {
            throw new IllegalArgumentException("--retry-shares needs at least one percentage");
        }
        return shares;
    }

    /**
     * {@code --name value}, {@code --name=value} and switches ({@code --name}, true) as a map in
     * order; a stray argument or a flag without its value is an IllegalArgumentException naming it,
     * followed by {@code usage}.
     */
    static Map<String, String> flags(String[] args, java.util.function.Predicate<String> isSwitch, String usage) {
        Map<String, String> flags = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.isBlank()) {
                continue;
            }
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "'\n" + usage);
            }
            String name = arg.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (isSwitch.test(name)) {
                value = "true";
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new IllegalArgumentException("--" + name + " needs a value\n" + usage);
            }
            flags.put(name, value);
        }
        return flags;
    }

    static String usage() {
        return USAGE.formatted(
                DEFAULT_URL,
                ALL_STRATEGIES,
                Goals.DEFAULT_CLAIM_OVER_FLOOR,
                Goals.DEFAULT_CLAIM_P99_OVER_FLOOR_P99,
                Goals.DEFAULT_METRICS_OVER_CLAIM,
                Goals.DEFAULT_CLAIM_OVER_THREE_TX,
                Goals.DEFAULT_REPLAY_OVER_BARE,
                Goals.DEFAULT_GROWN_OVER_EMPTY,
                Goals.DEFAULT_GROWN_ROWS,
                Goals.DEFAULT_MIXED_OVER_BEST_FIXED,
                Goals.DEFAULT_REMOTE_EFFECT_OVER_FLOOR);
    }

    /** Thrown for --help. */
    static final class HelpRequested extends RuntimeException {
        HelpRequested() {
            super(usage(), null, false, false);
        }
    }

    private static boolean isSwitch(String name) {
        return name.equals("keep-schema") || name.equals("quick") || name.equals("help") || name.equals("quiet");
    }

    private static String take(Map<String, String> flags, String name, String fallback) {
        String v = flags.remove(name);
        return v == null ? fallback : v;
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }

    private static List<String> strings(String csv) {
        List<String> out = new ArrayList<>();
        for (String s : csv.split(",")) {
            if (!s.isBlank()) {
                out.add(s.trim());
            }
        }
        return out;
    }

    private static List<Integer> ints(String csv) {
        List<Integer> out = new ArrayList<>();
        for (String s : strings(csv)) {
            out.add(positive("threads", whole("threads", s)));
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("a thread list must not be empty");
        }
        return out;
    }

    /** {@code text} as a whole number; refused naming {@code --name} when it is not one. */
    private static int whole(String name, String text) {
        long v = wholeLong(name, text);
        if (v != (int) v) {
            throw new IllegalArgumentException("--" + name + " is out of range, was " + text.trim());
        }
        return (int) v;
    }

    private static long wholeLong(String name, String text) {
        try {
            return Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a whole number, was '" + text + "'");
        }
    }

    private static int positive(String name, int v) {
        if (v < 1) {
            throw new IllegalArgumentException("--" + name + " must be at least 1, was " + v);
        }
        return v;
    }

    static Duration duration(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        try {
            if (t.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
            }
            if (t.endsWith("s")) {
                return Duration.ofMillis(Math.round(Double.parseDouble(t.substring(0, t.length() - 1)) * 1000));
            }
            if (t.endsWith("m")) {
                return Duration.ofMillis(Math.round(Double.parseDouble(t.substring(0, t.length() - 1)) * 60_000));
            }
            return Duration.ofMillis(Math.round(Double.parseDouble(t) * 1000));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a duration: '" + text + "' (use 500ms, 4s, 2m)", e);
        }
    }

    /** The settings as shown in the report. */
    Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("db_url", dbUrl);
        m.put("schema", schema);
        m.put("strategies", strategies);
        m.put("threads", threads);
        m.put("rounds", rounds);
        if (opsMode()) {
            m.put("warmup_ops", warmupOps);
            m.put("ops", ops);
        } else {
            m.put("warmup_s", warmup.toMillis() / 1000.0);
            m.put("duration_s", duration.toMillis() / 1000.0);
        }
        m.put("global_warmup_s", globalWarmup.toMillis() / 1000.0);
        m.put("table_rows", tableRows);
        m.put("growth_threads", growthThreads);
        m.put("growth_rounds", growthRounds);
        m.put("accounts", accounts);
        m.put("purge_limit", purgeLimit);
        m.put("burst_wait_ms", burstWait == null ? null : burstWait.toMillis());
        m.put("profile_ops", profileOps);
        m.put("phases", phases);
        m.put("retry_shares_pct", retryShares);
        m.put("retry_share_threads", retryShareThreads);
        m.put("goals", goals.describe());
        return m;
    }
}
