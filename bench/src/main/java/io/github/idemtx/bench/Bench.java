package io.github.idemtx.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.db.IdempotencySchema;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * The load harness: runs the same ledger transfer through every strategy against one PostgreSQL,
 * interleaved in rounds so that drift of the machine hits all of them alike, and reports
 * throughput, latency and the ratio of each to {@code bare}. See bench/README.md.
 */
public final class Bench {

    private Bench() {}

    /** Where connections come from: the bench's own flags, or the test database in the smoke test. */
    interface Database {
        /** A HikariCP pool of {@code size} connections set up with {@link #configure}. */
        HikariDataSource pool(String name, int size, String initSql);

        /** A direct connection, auto-commit on; the caller closes it. */
        Connection connect() throws SQLException;
    }

    /** What a run produced. */
    record Result(Report report, Path out, boolean clean) {}

    public static void main(String[] args) throws Exception {
        defaultProperty("org.jooq.no-logo", "true");
        defaultProperty("org.jooq.no-tips", "true");
        defaultProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        defaultProperty("org.slf4j.simpleLogger.log.org.jooq.impl.DefaultExecuteContext.logVersionSupport", "error");
        Options options;
        try {
            options = Options.parse(args);
        } catch (Options.HelpRequested e) {
            System.out.println(e.getMessage());
            return;
        } catch (IllegalArgumentException e) {
            System.err.println("bench: " + e.getMessage());
            System.exit(2);
            return;
        }
        Database db = jdbc(options.dbUrl(), options.dbUser(), options.dbPassword());
        try (Connection c = db.connect()) {
            c.isValid(5);
        } catch (SQLException e) {
            System.err.printf("""
                    bench: no PostgreSQL answered at %s (%s).
                    Start one there (user 'postgres', trust auth), or point the bench at yours:
                      --db-url jdbc:postgresql://host:5432/db --db-user ... --db-password ...
                      (or BENCH_DB_URL, BENCH_DB_USER, BENCH_DB_PASSWORD)%n""", options.dbUrl(), e.getMessage());
            System.exit(2);
            return;
        }
        Result result = run(options, db, System.out::println);
        System.exit(result.clean() ? 0 : 1);
    }

    private static void defaultProperty(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    /** A {@link Database} from a JDBC URL and credentials. */
    static Database jdbc(String url, String user, String password) {
        return new Database() {
            @Override
            public HikariDataSource pool(String name, int size, String initSql) {
                HikariConfig config = new HikariConfig();
                config.setJdbcUrl(url);
                if (user != null) {
                    config.setUsername(user);
                }
                if (password != null) {
                    config.setPassword(password);
                }
                configure(config, name, size, initSql);
                return new HikariDataSource(config);
            }

            @Override
            public Connection connect() throws SQLException {
                Properties p = new Properties();
                if (user != null) {
                    p.setProperty("user", user);
                }
                if (password != null) {
                    p.setProperty("password", password);
                }
                return DriverManager.getConnection(url, p);
            }
        };
    }

    /**
     * The bench's pool settings: a fixed pool of {@code size} connections (the largest client count,
     * plus one for the purge thread), pgjdbc defaults otherwise, and the counting socket factory.
     */
    static void configure(HikariConfig config, String name, int size, String initSql) {
        config.setPoolName(name);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        config.setConnectionTimeout(60_000);
        if (initSql != null) {
            config.setConnectionInitSql(initSql);
        }
        config.addDataSourceProperty("socketFactory", CountingSocketFactory.class.getName());
        config.addDataSourceProperty("ApplicationName", "idemtx-" + name); // to find its sessions in pg_stat_activity
    }

    // ------------------------------------------------------------------ the run

    static Result run(Options o, Database db, Consumer<String> out) throws Exception {
        Consumer<String> log = o.quiet() ? s -> {} : out;
        long started = System.nanoTime();
        Map<String, Object> env = new LinkedHashMap<>();
        env.put("started_at", Instant.now().toString());
        String schema = o.schema();
        List<SegmentResult> segments = new ArrayList<>();
        List<Map<String, Object>> profile = new ArrayList<>();
        Map<String, Object> loads = new LinkedHashMap<>();
        int mainMax = o.threads().stream().mapToInt(Integer::intValue).max().orElse(1);
        log.accept(String.format(
                Locale.ROOT,
                "bench: %s, schema %s, strategies %s, threads %s, %d round(s); about %s",
                o.dbUrl(),
                schema,
                o.strategies(),
                o.threads(),
                o.rounds(),
                estimate(o)));

        try (HikariDataSource pool = db.pool("bench", o.poolSize(), null);
                Driver driver = new Driver(o.maxThreads(), new CpuProbe(pool, "idemtx-bench"))) {
            environment(env, pool, o);
            log.accept("machine: " + env.get("summary"));
            DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES, BenchContext.SETTINGS);
            dsl.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            IdempotencySchema.migrate(pool, schema);
            Ledger ledger = new Ledger(schema, o.accounts());
            ledger.create(dsl);
            // the claim table is left unanalyzed, as a new table is: see ClaimTable.truncate()

            BenchContext.Shared shared = new BenchContext.Shared();
            IdempotencyPolicy burstPolicy = o.burstWait() == null
                    ? IdempotencyPolicy.defaults()
                    : IdempotencyPolicy.defaults().toBuilder()
                            .duplicateWait(o.burstWait())
                            .build();
            BenchContext ctx = new BenchContext(pool, ledger, shared, burstPolicy);
            ClaimTable table = new ClaimTable(pool, schema, shared);
            try {
                // warm-up: JIT, pool, server-side prepared statements, completed keys for replay
                long each =
                        o.globalWarmup().toNanos() / Math.max(1, o.strategies().size());
                log.accept("warm-up: " + o.globalWarmup().toMillis() / 1000.0 + " s over "
                        + o.strategies().size() + " strategies at " + mainMax + " threads");
                List<String> warm = new ArrayList<>(o.strategies());
                if ((warm.contains(Strategies.REPLAY)
                                || warm.contains(Strategies.REPLAY_WORK_FIRST)
                                || warm.contains(Strategies.REPLAY_ADAPTIVE))
                        && !warm.contains(Strategies.CLAIM)) {
                    warm.add(0, Strategies.CLAIM); // replay needs completed keys
                }
                for (String name : warm) {
                    driver.run(
                            Strategies.create(name, ctx, o.purgeLimit()),
                            mainMax,
                            Driver.Segment.warmupOnly(o, each, o.warmupOps() * mainMax),
                            "warmup",
                            0,
                            table.stats());
                }

                // the main comparison: rounds x thread counts x strategies, the order shuffled per round
                for (int r = 1; o.phases().contains("main") && r <= o.rounds(); r++) {
                    for (int t : o.threads()) {
                        for (String name :
                                shuffled(o.strategies(), r, o.threads().indexOf(t))) {
                            SegmentResult s = driver.run(
                                    Strategies.create(name, ctx, o.purgeLimit()),
                                    t,
                                    new Driver.Segment(o),
                                    Report.MAIN,
                                    r,
                                    table.stats());
                            segments.add(s);
                            log.accept(line("main", r, o.rounds(), s));
                        }
                    }
                }

                if (o.phases().contains(Report.RETRY_SHARE)) {
                    retryShare(o, driver, ctx, table, segments, log);
                }

                if (o.profileOps() > 0 && o.phases().contains("profile")) {
                    profile.addAll(profile(o, db, ledger, shared, burstPolicy, log));
                }

                if (!o.tableRows().isEmpty() && o.phases().contains("growth")) {
                    growth(o, db, driver, ctx, table, segments, loads, log);
                }
            } finally {
                if (!o.keepSchema()) {
                    dsl.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
                }
            }
            env.put("total_seconds", (System.nanoTime() - started) / 1e9);
            env.put(
                    "load_average_end",
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        }

        Report report = new Report(segments, env, o.describe(), profile, loads, o.goals());
        out.accept("");
        out.accept(report.table());
        Path dir = o.out().toAbsolutePath().normalize();
        report.write(dir);
        out.accept(String.format(
                Locale.ROOT,
                "wrote %s/{results.json,results.csv,throughput.svg%s%s} in %.0f s total",
                dir,
                report.growthTargets().isEmpty() ? "" : ",growth.svg",
                report.retryShares().isEmpty() ? "" : ",retry-share.svg",
                (System.nanoTime() - started) / 1e9));
        boolean clean = report.groups().stream().allMatch(g -> g.errors() == 0 && g.kind(Strategy.Kind.OTHER) == 0);
        if (!clean) {
            out.accept("bench: some operations failed or had unexpected outcomes; see the warnings above");
        }
        return new Result(report, dir, clean);
    }

    /**
     * The retry-share phase: each round walks through the shares of {@code --retry-shares} in order,
     * and at each step the default mode, WORK_FIRST and CLAIM_FIRST run the same traffic one after
     * another (the order shuffled each round and step). The default mode's instance serves this phase alone and keeps
     * what it learned from step to step, as a service's would while its traffic changes; its
     * segments have no warm-up, so the switches it makes are inside the measured windows.
     */
    private static void retryShare(
            Options o,
            Driver driver,
            BenchContext ctx,
            ClaimTable table,
            List<SegmentResult> segments,
            Consumer<String> log)
            throws Exception {
        if (ctx.shared.completedCount() == 0) {
            ctx.retryShare = 0;
            driver.run(
                    Strategies.create(Strategies.CLAIM, ctx, o.purgeLimit()),
                    o.retryShareThreads().get(0),
                    Driver.Segment.warmupOnly(o, 2_000_000_000L, 1000),
                    "warmup",
                    0,
                    table.stats()); // completed keys to retry
        }
        List<Integer> shares = o.retryShares();
        for (int r = 1; r <= o.rounds(); r++) {
            for (int step = 0; step < shares.size(); step++) {
                ctx.retryShare = shares.get(step) / 100.0;
                String phase = Report.RETRY_SHARE + ":" + step;
                for (int t : o.retryShareThreads()) {
                    for (String name : shuffled(Options.MIXED_STRATEGIES, r, step)) {
                        SegmentResult s = driver.run(
                                Strategies.create(name, ctx, o.purgeLimit()),
                                t,
                                new Driver.Segment(o.opsMode(), 0, o.duration().toNanos(), 0, o.ops()),
                                phase,
                                r,
                                table.stats());
                        segments.add(s);
                        log.accept(line(phase + "=" + shares.get(step) + "%", r, o.rounds(), s));
                    }
                }
            }
        }
        ctx.retryShare = 0;
    }

    private static void growth(
            Options o,
            Database db,
            Driver driver,
            BenchContext ctx,
            ClaimTable table,
            List<SegmentResult> segments,
            Map<String, Object> loads,
            Consumer<String> log)
            throws Exception {
        List<Long> targets = new ArrayList<>();
        targets.add(0L);
        targets.addAll(o.tableRows());
        for (long target : targets) {
            List<String> names =
                    new ArrayList<>(List.of(Strategies.BARE, Strategies.CLAIM, Strategies.FLOOR_CLAIM_FIRST));
            if (target == 0) {
                log.accept("growth: emptying the claim table");
                table.truncate();
            } else {
                log.accept(String.format(Locale.ROOT, "growth: loading the claim table to %,d rows", target));
                double seconds = table.loadTo(target, db, log);
                loads.put(
                        Long.toString(target),
                        Map.of("seconds", seconds, "rows_after", table.stats().rows()));
                log.accept(String.format(Locale.ROOT, "    loaded in %.1f s", seconds));
                names.add(Strategies.CLAIM_PURGE);
            }
            String phase = Report.GROWTH + ":" + target;
            for (int r = 1; r <= o.growthRounds(); r++) {
                for (int t : o.growthThreads()) {
                    for (String name : shuffled(names, r, o.growthThreads().indexOf(t))) {
                        SegmentResult s = driver.run(
                                Strategies.create(name, ctx, o.purgeLimit()),
                                t,
                                new Driver.Segment(o),
                                phase,
                                r,
                                table.stats());
                        segments.add(s);
                        log.accept(line(phase, r, o.growthRounds(), s));
                    }
                }
            }
        }
    }

    private static List<Map<String, Object>> profile(
            Options o,
            Database db,
            Ledger ledger,
            BenchContext.Shared shared,
            IdempotencyPolicy burstPolicy,
            Consumer<String> log)
            throws Exception {
        log.accept("profile: " + o.profileOps() + " operations per strategy, one thread, one connection");
        HikariDataSource pool;
        boolean trackFunctions = true;
        try {
            pool = db.pool("bench-profile", 1, "SET track_functions = 'pl'");
        } catch (HikariPool.PoolInitializationException | IllegalStateException e) {
            trackFunctions = false; // not a superuser: no PL/pgSQL function timings
            pool = db.pool("bench-profile", 1, null);
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        try (HikariDataSource p = pool) {
            BenchContext ctx = new BenchContext(p, ledger, shared, burstPolicy);
            Profiler profiler = new Profiler(p, o.schema(), trackFunctions);
            List<String> names = new ArrayList<>(o.strategies());
            if (names.contains(Strategies.BARE)) {
                names.add(names.indexOf(Strategies.BARE) + 1, Strategies.BARE_JOOQ_DEFAULT);
            }
            for (String name : names) {
                Map<String, Object> row =
                        profiler.profile(Strategies.create(name, ctx, o.purgeLimit()), o.profileOps());
                rows.add(row);
                log.accept(String.format(
                        Locale.ROOT,
                        "  %-18s %.2f round trips/op, %.0f B allocated/op, %.3f ms/op",
                        name,
                        row.get("round_trips_per_op"),
                        row.get("client_alloc_bytes_per_op"),
                        row.get("mean_ms")));
            }
            if (!profiler.statementsAvailable()) {
                log.accept("  (pg_stat_statements is not available on this server: no per-statement figures)");
            }
        }
        return rows;
    }

    private static String line(String phase, int round, int rounds, SegmentResult s) {
        return String.format(
                Locale.ROOT,
                "[%s r%d/%d] %-16s x%d: %9.1f ops/s  p50 %6.2f ms  p99 %7.2f ms  %4.2f rt/call  rows@0 %s%s",
                phase,
                round,
                rounds,
                s.strategy(),
                s.threads(),
                s.opsPerSecond(),
                s.histogram().getValueAtPercentile(50) / 1000.0,
                s.histogram().getValueAtPercentile(99) / 1000.0,
                s.roundTripsPerCall(),
                Report.human(s.atStart().rows()),
                s.errors() > 0 ? "  ERRORS " + s.errors() + ": " + s.firstError() : "");
    }

    /**
     * {@code list} in an order of its own for round {@code round} of group {@code group}: shuffled
     * with a seed of those two, so that a run repeats, and so that no strategy always runs right
     * after the same one. (A rotation kept each strategy behind the same neighbour in every round,
     * and whatever that neighbour left behind, dirty buffers, a checkpoint, autovacuum, fell on it
     * every time: `claim` always ran after `bare`, `floor` after `three-tx`.)
     */
    static <T> List<T> shuffled(List<T> list, int round, int group) {
        List<T> out = new ArrayList<>(list);
        java.util.Collections.shuffle(out, new java.util.SplittableRandom(1_000_003L * round + group));
        return out;
    }

    static <T> List<T> rotate(List<T> list, int by) {
        List<T> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            out.add(list.get((i + by) % list.size()));
        }
        return out;
    }

    private static String estimate(Options o) {
        if (o.opsMode()) {
            return "as long as the operations take";
        }
        double segment = (o.warmup().toMillis() + o.duration().toMillis()) / 1000.0 + 0.1;
        double main = !o.phases().contains("main")
                ? 0
                : o.rounds() * o.threads().size() * o.strategies().size() * segment;
        double retryShare = !o.phases().contains(Report.RETRY_SHARE)
                ? 0
                : o.rounds()
                        * o.retryShares().size()
                        * o.retryShareThreads().size()
                        * Options.MIXED_STRATEGIES.size()
                        * (o.duration().toMillis() / 1000.0 + 0.1);
        double growth = o.tableRows().isEmpty() || !o.phases().contains("growth")
                ? 0
                : o.growthRounds()
                        * o.growthThreads().size()
                        * segment
                        * (3 + 4 * o.tableRows().size());
        double seconds = o.globalWarmup().toMillis() / 1000.0
                + main
                + retryShare
                + growth
                + (o.profileOps() > 0 && o.phases().contains("profile") ? 15 : 0);
        return String.format(
                Locale.ROOT, "%.0f s plus setup%s", seconds, o.tableRows().isEmpty() ? "" : " and the table loads");
    }

    private static void environment(Map<String, Object> env, HikariDataSource pool, Options o) throws SQLException {
        var os = ManagementFactory.getOperatingSystemMXBean();
        String cpu = cpuModel();
        long memory = os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getTotalMemorySize() : -1;
        env.put("cpus", Runtime.getRuntime().availableProcessors());
        env.put("cpu_model", cpu);
        env.put("memory_gib", memory > 0 ? memory / 1073741824.0 : null);
        env.put(
                "os",
                System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                        + System.getProperty("os.arch"));
        env.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        env.put("load_average_start", os.getSystemLoadAverage());
        env.put("pool_size", o.poolSize());
        Map<String, Object> pg = new LinkedHashMap<>();
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT version()")) {
                rs.next();
                pg.put("version", rs.getString(1));
            }
            try (ResultSet rs = s.executeQuery("SELECT name, current_setting(name) FROM pg_settings WHERE name IN"
                    + " ('shared_buffers', 'synchronous_commit', 'fsync', 'full_page_writes', 'wal_compression', 'autovacuum',"
                    + " 'max_wal_size', 'checkpoint_timeout', 'wal_sync_method', 'max_connections', 'shared_preload_libraries')"
                    + " ORDER BY name")) {
                while (rs.next()) {
                    pg.put(rs.getString(1), rs.getString(2));
                }
            }
        }
        env.put("postgresql", pg);
        String version = String.valueOf(pg.get("version"));
        String shortPg =
                version.startsWith("PostgreSQL ") ? version.split(" ")[0] + " " + version.split(" ")[1] : version;
        env.put(
                "summary",
                String.format(
                        Locale.ROOT,
                        "%d CPUs%s, %s RAM, %s, %s; %s (synchronous_commit=%s); load average %.2f at start",
                        Runtime.getRuntime().availableProcessors(),
                        cpu == null ? "" : " (" + cpu + ")",
                        memory > 0 ? String.format(Locale.ROOT, "%.0f GiB", memory / 1073741824.0) : "?",
                        System.getProperty("os.name") + " " + System.getProperty("os.version"),
                        "Java " + System.getProperty("java.runtime.version"),
                        shortPg,
                        pg.get("synchronous_commit"),
                        os.getSystemLoadAverage()));
    }

    private static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (Exception e) {
            // not Linux
        }
        return null;
    }
}
