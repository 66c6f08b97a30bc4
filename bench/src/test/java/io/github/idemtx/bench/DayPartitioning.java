package io.github.idemtx.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * The claim table range-partitioned by key day ({@link ClaimPartitions}) against the plain table,
 * in one process (issue 29): the library's claim path on both, interleaved round by round, with
 * the tables empty and preloaded, with and without generic plans forced; then the retention of one
 * day of {@code --retention-rows} expired rows: the partition dropped by
 * {@link ClaimPartitions#dropBehind} (DETACH CONCURRENTLY + DROP) against the same rows deleted in
 * batches of 10,000 from the plain table, then VACUUM.
 *
 * <p>Variants of the claim path: {@code bare} (the transfer alone), {@code claim/plain} (the bench's
 * {@code claim} strategy unchanged: random UUID keys, the library's default IdempotentTransaction on
 * the plain table), {@code claim/plain-daykey} (the same on the plain table with keys that carry
 * today's day, to tell the key's shape from the layout), {@code claim/days} (keys built with
 * {@link ClaimPartitions#key}, an IdempotentTransaction given the partitions, so it also runs
 * {@code requireAccepted}) and {@code claim/days-generic} (the same with generic plans forced).
 *
 * <p>Generic plans: the existing experiment used a second pool whose sessions run
 * {@code plan_cache_mode = force_generic_plan}; with 8 clients that is 17 connections. Here, to
 * stay within 12, the one fixed-size pool is switched: before the generic variant's segment every
 * connection of the pool is borrowed at once and given {@code SET plan_cache_mode =
 * force_generic_plan}, after it {@code RESET plan_cache_mode} (read back first: each connection
 * must still have had the setting). The plan cache looks the setting up on every execution.
 *
 * <pre>
 * ./mvnw -o -q -B -pl bench -am -Ppartitioning -Dexec.mainClass=io.github.idemtx.bench.DayPartitioning \
 *     -DskipTests test-compile exec:java -Dexec.args="--db-url jdbc:postgresql://127.0.0.1:5432/test --phases throughput"
 * </pre>
 *
 * (Offline, where the exec plugin cannot be resolved: {@code ./mvnw -o -q -B -pl bench -am -DskipTests
 * test-compile org.apache.maven.plugins:maven-dependency-plugin:3.9.0:build-classpath
 * -Dmdep.outputFile=/tmp/days-cp.txt -Dmdep.includeScope=test}, then {@code java -cp
 * bench/target/test-classes:bench/target/classes:$(cat /tmp/days-cp.txt)
 * io.github.idemtx.bench.DayPartitioning --db-url ... --phases ...}.) Phases: {@code throughput},
 * {@code retention}, {@code drop-detail} (dropBehind's steps one by one while 4 threads claim).
 *
 * Flags: {@code --rows LIST} (1000000; sizes after the empty table), {@code --rounds N} (8),
 * {@code --threads LIST} (1,8), {@code --warmup DUR} (250ms), {@code --duration DUR} (1.5s),
 * {@code --global-warmup DUR} (10s), {@code --skip-empty}, {@code --no-generic},
 * {@code --phases LIST} (throughput,retention), {@code --retention-rows N} (10000000),
 * {@code --delete-budget DUR} (20m: the batched DELETE stops after it and the rest is extrapolated),
 * {@code --db-url}, {@code --db-user}, {@code --db-password}.
 */
public final class DayPartitioning {

    static final String PLAIN = "idemtx_days_plain";
    static final String PART = "idemtx_days_part";
    private static final String TABLE = IdempotencySchema.CLAIM_TABLE;
    private static final String APP = "days";
    private static final DateTimeFormatter DAY = DateTimeFormatter.ofPattern("uuuuMMdd", Locale.ROOT);

    private DayPartitioning() {}

    record Flags(
            String url,
            String user,
            String password,
            List<Long> rows,
            int rounds,
            List<Integer> threads,
            Duration warmup,
            Duration duration,
            Duration globalWarmup,
            boolean skipEmpty,
            boolean generic,
            List<String> phases,
            long retentionRows,
            Duration deleteBudget) {

        static Flags parse(String[] args) {
            Map<String, String> f = Options.flags(
                    args,
                    name -> name.equals("skip-empty") || name.equals("no-generic"),
                    "see the DayPartitioning class documentation for its flags");
            List<String> known = List.of(
                    "db-url",
                    "db-user",
                    "db-password",
                    "rows",
                    "rounds",
                    "threads",
                    "warmup",
                    "duration",
                    "global-warmup",
                    "skip-empty",
                    "no-generic",
                    "phases",
                    "retention-rows",
                    "delete-budget");
            for (String k : f.keySet()) {
                if (!known.contains(k)) {
                    throw new IllegalArgumentException("unknown flag --" + k);
                }
            }
            return new Flags(
                    f.getOrDefault(
                            "db-url", Objects.requireNonNullElse(System.getenv("BENCH_DB_URL"), Options.DEFAULT_URL)),
                    f.getOrDefault("db-user", Objects.requireNonNullElse(System.getenv("BENCH_DB_USER"), "postgres")),
                    f.getOrDefault("db-password", System.getenv("BENCH_DB_PASSWORD")),
                    longs(f.getOrDefault("rows", "1000000")),
                    Integer.parseInt(f.getOrDefault("rounds", "8")),
                    longs(f.getOrDefault("threads", "1,8")).stream()
                            .map(Long::intValue)
                            .toList(),
                    Options.duration(f.getOrDefault("warmup", "250ms")),
                    Options.duration(f.getOrDefault("duration", "1.5s")),
                    Options.duration(f.getOrDefault("global-warmup", "10s")),
                    Boolean.parseBoolean(f.getOrDefault("skip-empty", "false")),
                    !Boolean.parseBoolean(f.getOrDefault("no-generic", "false")),
                    List.of(f.getOrDefault("phases", "throughput,retention").split(",")),
                    Long.parseLong(f.getOrDefault("retention-rows", "10000000").replace("_", "")),
                    Options.duration(f.getOrDefault("delete-budget", "20m")));
        }

        private static List<Long> longs(String text) {
            return Partitioning.Flags.longs(text);
        }

        int maxThreads() {
            return threads.stream().mapToInt(Integer::intValue).max().orElse(1);
        }
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("org.jooq.no-logo", "true");
        System.setProperty("org.jooq.no-tips", "true");
        Flags flags = Flags.parse(args);
        Consumer<String> log = s -> {
            System.out.println(s);
            System.out.flush();
        };
        long started = System.nanoTime();
        Bench.Database db = Bench.jdbc(flags.url(), flags.user(), flags.password());
        int poolSize = flags.maxThreads() + 1;
        log.accept(String.format(
                Locale.ROOT,
                "day partitioning: %s, rows %s, %d rounds at %s clients, generic %s, phases %s, pool %d, started %s, %s",
                flags.url(),
                flags.rows(),
                flags.rounds(),
                flags.threads(),
                flags.generic(),
                flags.phases(),
                poolSize,
                Instant.now(),
                loadAverage()));
        try (HikariDataSource pool = db.pool(APP, poolSize, null);
                Driver driver = new Driver(flags.maxThreads(), new CpuProbe(pool, "idemtx-" + APP))) {
            DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES, BenchContext.SETTINGS);
            try {
                for (String schema : List.of(PLAIN, PART)) {
                    dsl.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
                }
                IdempotencySchema.migrate(pool, PLAIN);
                new Ledger(PLAIN, 10_000).create(dsl);
                ClaimPartitions partitions =
                        ClaimPartitions.byKeyDay(pool).schema(PART).build();
                List<LocalDate> created = partitions.migrate();
                new Ledger(PART, 10_000).create(dsl);
                try (Connection c = db.connect()) {
                    log.accept("migrated " + PART + " partitioned by key day, partitions created for " + created);
                    log.accept("    "
                            + strings(
                                            c,
                                            "SELECT pg_get_partkeydef('" + PART + "." + TABLE + "'::regclass) || '; '"
                                                    + " || (SELECT string_agg(pg_get_expr(p.relpartbound, p.oid), ' | ' ORDER BY p.relname)"
                                                    + "     FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid"
                                                    + "     WHERE i.inhparent = '" + PART + "." + TABLE + "'::regclass"
                                                    + "     AND p.relname LIKE '%"
                                                    + DAY.format(LocalDate.now(ZoneOffset.UTC)) + "')")
                                    .get(0));
                }
                if (flags.phases().contains("throughput")) {
                    throughputPhase(db, pool, driver, partitions, flags, log);
                }
                if (flags.phases().contains("retention")) {
                    retention(db, pool, flags, log);
                }
                if (flags.phases().contains("drop-detail")) {
                    dropDetail(db, pool, flags, log);
                }
            } finally {
                for (String schema : List.of(PLAIN, PART)) {
                    dsl.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
                }
            }
        }
        log.accept(String.format(
                Locale.ROOT,
                "done in %.0f s at %s, %s; schemas %s and %s dropped",
                (System.nanoTime() - started) / 1e9,
                Instant.now(),
                loadAverage(),
                PLAIN,
                PART));
        System.exit(0);
    }

    static String loadAverage() {
        try {
            return "loadavg "
                    + java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"))
                            .strip();
        } catch (Exception e) {
            return "loadavg ?";
        }
    }

    // ------------------------------------------------------------------ the claim path

    /** The bench's {@code claim}, with keys carrying today's day (built as {@link ClaimPartitions#key} does). */
    static final class DayClaim implements Strategy {
        private final String name;
        private final BenchContext ctx;
        private final IdempotentTransaction<Ledger.Receipt> idem;

        DayClaim(String name, BenchContext ctx, IdempotentTransaction<Ledger.Receipt> idem) {
            this.name = name;
            this.ctx = ctx;
            this.idem = idem;
        }

        /** {@link BenchContext#freshKey}'s key behind {@code yyyyMMdd-}, the day of now. */
        static IdempotencyKey dayKey(SplittableRandom random) {
            long hi = (random.nextLong() & ~0xF000L) | 0x4000L;
            long lo = (random.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
            return ClaimPartitions.key(Instant.now(), new UUID(hi, lo).toString());
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random =
                    new SplittableRandom(ThreadLocalRandom.current().nextLong());
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                Scope scope = BenchContext.scope(random.nextInt(BenchContext.SCOPES));
                IdempotencyKey key = dayKey(random);
                Fingerprint fingerprint = request.fingerprint();
                Outcome<Ledger.Receipt> outcome =
                        idem.run(scope, key, fingerprint, tx -> ctx.ledger.transfer(tx, request));
                if (outcome instanceof Outcome.Executed<Ledger.Receipt>) {
                    ctx.shared.completed(new BenchContext.Completed(scope, key, request, fingerprint));
                    return Kind.EXECUTED;
                }
                return Kind.OTHER;
            };
        }
    }

    private record Variant(String label, Strategy strategy, boolean generic) {}

    /** Every connection of the fixed pool at once, each given {@code sql}; returns what {@code probe} read first. */
    private static List<String> everyConnection(HikariDataSource pool, String probe, String sql) throws SQLException {
        List<Connection> held = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        try {
            for (int i = 0; i < pool.getMaximumPoolSize(); i++) {
                held.add(pool.getConnection());
            }
            for (Connection c : held) {
                try (Statement s = c.createStatement()) {
                    try (ResultSet rs = s.executeQuery(probe)) {
                        rs.next();
                        seen.add(rs.getString(1));
                    }
                    s.execute(sql);
                }
            }
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
        return seen;
    }

    private static void planMode(HikariDataSource pool, boolean generic) throws SQLException {
        String probe = "SELECT pg_backend_pid() || ':' || current_setting('plan_cache_mode')";
        List<String> before = everyConnection(
                pool, probe, generic ? "SET plan_cache_mode = force_generic_plan" : "RESET plan_cache_mode");
        String expected = generic ? "auto" : "force_generic_plan";
        for (String b : before) {
            if (!b.endsWith(":" + expected)) {
                throw new IllegalStateException("a pool connection had plan_cache_mode " + b + ", expected " + expected
                        + " (a connection was replaced during the segment?): " + before);
            }
        }
    }

    private static void throughputPhase(
            Bench.Database db,
            HikariDataSource pool,
            Driver driver,
            ClaimPartitions partitions,
            Flags flags,
            Consumer<String> log)
            throws Exception {
        BenchContext.Shared plainShared = new BenchContext.Shared();
        BenchContext.Shared partShared = new BenchContext.Shared();
        BenchContext plain =
                new BenchContext(pool, new Ledger(PLAIN, 10_000), plainShared, IdempotencyPolicy.defaults());
        BenchContext part = new BenchContext(pool, new Ledger(PART, 10_000), partShared, IdempotencyPolicy.defaults());
        DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES, BenchContext.SETTINGS);
        // each variant its own instance: the default (ADAPTIVE) mode learns from its own calls
        IdempotentTransaction<Ledger.Receipt> partIdem = IdempotentTransaction.builder(dsl, Ledger.CODEC)
                .partitions(partitions)
                .build();
        IdempotentTransaction<Ledger.Receipt> partGenericIdem = IdempotentTransaction.builder(dsl, Ledger.CODEC)
                .partitions(partitions)
                .build();
        IdempotentTransaction<Ledger.Receipt> plainDayIdem =
                IdempotentTransaction.builder(dsl, Ledger.CODEC).schema(PLAIN).build();
        List<Variant> vs = new ArrayList<>(List.of(
                new Variant("bare", Strategies.create(Strategies.BARE, plain, 0), false),
                new Variant("claim/plain", Strategies.create(Strategies.CLAIM, plain, 0), false),
                new Variant("claim/plain-daykey", new DayClaim("claim/plain-daykey", plain, plainDayIdem), false),
                new Variant("claim/days", new DayClaim("claim/days", part, partIdem), false)));
        if (flags.generic()) {
            vs.add(new Variant("claim/days-generic", new DayClaim("claim/days-generic", part, partGenericIdem), true));
        }

        // a key of another day is refused before any SQL: the guard the partitioned instance runs
        try {
            partIdem.run(
                    BenchContext.scope(0),
                    ClaimPartitions.key(Instant.now().minus(Duration.ofDays(10)), "old"),
                    Fingerprint.sha256("x"),
                    tx -> null);
            throw new IllegalStateException("a key 10 days old was accepted");
        } catch (IllegalArgumentException expected) {
            log.accept("guard: a key 10 days old refused: " + expected.getMessage());
        }

        log.accept("warm-up " + flags.globalWarmup().toMillis() / 1000.0 + " s");
        long each = flags.globalWarmup().toNanos() / vs.size();
        for (Variant v : vs) {
            if (v.generic()) {
                planMode(pool, true);
            }
            driver.run(
                    v.strategy(),
                    flags.maxThreads(),
                    new Driver.Segment(false, 0, each, 0, 0),
                    "warmup",
                    0,
                    new ClaimTable.Stats(0, 0, 0));
            if (v.generic()) {
                planMode(pool, false);
            }
        }
        ClaimTable plainTable = new ClaimTable(pool, PLAIN, plainShared);
        ClaimTable partTable = new ClaimTable(pool, PART, partShared);
        List<Long> sizes = new ArrayList<>();
        if (!flags.skipEmpty()) {
            sizes.add(0L);
        }
        flags.rows().stream().filter(r -> r > 0).forEach(sizes::add);
        for (long size : sizes) {
            plainTable.truncate();
            partTable.truncate();
            if (size > 0) {
                log.accept(String.format(Locale.ROOT, "loading %s to %,d rows", PLAIN, size));
                double s1 = plainTable.loadTo(size, db, log);
                double s2 = copyWithDays(db, partShared, plainShared);
                log.accept(String.format(
                        Locale.ROOT,
                        "    loaded in %.1f s, copied to %s (keys prefixed by their created_at's day) in %.1f s",
                        s1,
                        PART,
                        s2));
            }
            try (Connection c = db.connect()) {
                log.accept("    "
                        + strings(
                                        c,
                                        "SELECT format('plain %s rows, %s MB; days %s rows, %s MB (with indexes); rows per day partition: %s',"
                                                + " (SELECT count(*) FROM " + PLAIN + "." + TABLE
                                                + "), pg_total_relation_size('"
                                                + PLAIN + "." + TABLE + "') / 1048576,"
                                                + " (SELECT count(*) FROM " + PART + "." + TABLE + "),"
                                                + " (SELECT sum(pg_total_relation_size(inhrelid))::bigint FROM pg_inherits WHERE inhparent = '"
                                                + PART + "." + TABLE + "'::regclass) / 1048576,"
                                                + " (SELECT string_agg(right(tableoid::regclass::text, 8) || '=' || n, ' ' ORDER BY 1)"
                                                + "   FROM (SELECT tableoid, count(*) n FROM " + PART + "." + TABLE
                                                + "         GROUP BY tableoid) r))")
                                .get(0));
            }
            throughput(driver, pool, flags, size, vs, plainTable, log);
            planCounts(pool, size, log);
            try (Connection c = db.connect()) {
                explain(c, size, log);
            }
        }
    }

    /**
     * The plain table's rows into the partitioned one (emptied first), each key behind the day of its
     * created_at; then VACUUM ANALYZE and CHECKPOINT as after {@link ClaimTable#loadTo}.
     */
    private static double copyWithDays(
            Bench.Database db, BenchContext.Shared partShared, BenchContext.Shared plainShared) throws SQLException {
        long t0 = System.nanoTime();
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("SET maintenance_work_mem = '1GB'");
            s.execute("TRUNCATE " + PART + "." + TABLE);
            s.executeUpdate("INSERT INTO " + PART + "." + TABLE
                    + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                    + " SELECT scope, to_char(created_at AT TIME ZONE 'UTC', 'YYYYMMDD') || '-' || idem_key,"
                    + " fingerprint, state, result, created_at, completed_at, expires_at FROM " + PLAIN + "." + TABLE
                    + " ORDER BY created_at");
            s.execute("VACUUM (ANALYZE) " + PART + "." + TABLE);
            s.execute("CHECKPOINT");
        }
        partShared.claimRows.set(plainShared.claimRows.get());
        partShared.expiredRows.set(plainShared.expiredRows.get());
        partShared.clearCompleted();
        return (System.nanoTime() - t0) / 1e9;
    }

    /**
     * What the plan cache did on the pool's sessions (pgjdbc prepares server-side after 5 uses):
     * generic and custom plans per claim-table statement, summed over every connection of the pool,
     * per schema; the generic variant's executions are in these counts too.
     */
    private static void planCounts(HikariDataSource pool, long size, Consumer<String> log) throws SQLException {
        Map<String, long[]> counts = new java.util.TreeMap<>();
        List<Connection> held = new ArrayList<>();
        try {
            for (int i = 0; i < pool.getMaximumPoolSize(); i++) {
                held.add(pool.getConnection());
            }
            for (Connection c : held) {
                try (Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery(
                                "SELECT CASE WHEN statement LIKE '%" + PART + "%' THEN 'days' ELSE 'plain' END,"
                                        + " left(regexp_replace(statement, '\\s+', ' ', 'g'), 70), generic_plans, custom_plans"
                                        + " FROM pg_prepared_statements WHERE statement LIKE '%idempotency_claim%'")) {
                    while (rs.next()) {
                        long[] v = counts.computeIfAbsent(rs.getString(1) + " | " + rs.getString(2), k -> new long[2]);
                        v[0] += rs.getLong(3);
                        v[1] += rs.getLong(4);
                    }
                }
            }
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
        log.accept(String.format(
                Locale.ROOT,
                "    plan cache after the rounds at rows %s (all %d pool sessions; generic / custom plans per statement):",
                Report.human(size),
                held.size()));
        counts.forEach(
                (k, v) -> log.accept(String.format(Locale.ROOT, "    PLANS %s: generic %d, custom %d", k, v[0], v[1])));
    }

    /** The claim's first statements as the plan cache would run them, generic and custom, on both tables. */
    private static void explain(Connection c, long size, Consumer<String> log) throws SQLException {
        String key =
                ClaimPartitions.key(Instant.now(), UUID.randomUUID().toString()).value();
        for (String schema : List.of(PLAIN, PART)) {
            for (String mode : List.of("force_custom_plan", "force_generic_plan")) {
                try (Statement s = c.createStatement()) {
                    s.execute("SET plan_cache_mode = " + mode);
                    s.execute("DEALLOCATE ALL");
                    s.execute("PREPARE q(text, text) AS SELECT state, fingerprint, expires_at FROM " + schema + "."
                            + TABLE + " WHERE scope = $1 AND idem_key = $2");
                    List<String> plan = strings(
                            c, "EXPLAIN (ANALYZE, SUMMARY ON, COSTS OFF) EXECUTE q('tenant-01', '" + key + "')");
                    log.accept(String.format(
                            Locale.ROOT,
                            "    EXPLAIN rows %s %s %s: %s",
                            Report.human(size),
                            schema,
                            mode,
                            String.join(" / ", plan.stream().map(String::strip).toList())));
                    s.execute("DEALLOCATE q");
                    s.execute("RESET plan_cache_mode");
                }
            }
        }
    }

    private static void throughput(
            Driver driver,
            HikariDataSource pool,
            Flags flags,
            long size,
            List<Variant> vs,
            ClaimTable plainTable,
            Consumer<String> log)
            throws Exception {
        log.accept(String.format(
                Locale.ROOT, "rounds at rows %s start %s, %s", Report.human(size), Instant.now(), loadAverage()));
        Map<String, List<Double>> ops = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        Map<String, List<Double>> ratios = new LinkedHashMap<>();
        for (int r = 1; r <= flags.rounds(); r++) {
            for (int t : flags.threads()) {
                Map<String, Double> round = new LinkedHashMap<>();
                for (Variant v : Bench.rotate(vs, r - 1 + flags.threads().indexOf(t))) {
                    if (v.generic()) {
                        planMode(pool, true);
                    }
                    SegmentResult s;
                    try {
                        s = driver.run(
                                v.strategy(),
                                t,
                                new Driver.Segment(
                                        false,
                                        flags.warmup().toNanos(),
                                        flags.duration().toNanos(),
                                        0,
                                        0),
                                "days:" + size,
                                r,
                                plainTable.stats());
                    } finally {
                        if (v.generic()) {
                            planMode(pool, false);
                        }
                    }
                    if (s.errors() > 0 || s.kinds().get(Strategy.Kind.OTHER) > 0) {
                        throw new IllegalStateException(v.label() + " had errors: " + s.firstError());
                    }
                    round.put(v.label(), s.opsPerSecond());
                    ops.computeIfAbsent(v.label() + " x" + t, k -> new ArrayList<>())
                            .add(s.opsPerSecond());
                    Object srv = s.extra().get("server_cpu_us_per_call");
                    Object cli = s.extra().get("client_cpu_us_per_call");
                    if (srv instanceof Double d1 && cli instanceof Double d2) {
                        cpu.computeIfAbsent(v.label() + " x" + t, k -> new ArrayList<>())
                                .add(d1 + d2);
                    }
                }
                double p = round.get("claim/plain");
                ratio(ratios, "days/plain x" + t, round.get("claim/days") / p);
                ratio(ratios, "plain-daykey/plain x" + t, round.get("claim/plain-daykey") / p);
                ratio(ratios, "days/plain-daykey x" + t, round.get("claim/days") / round.get("claim/plain-daykey"));
                ratio(ratios, "plain/bare x" + t, p / round.get("bare"));
                ratio(ratios, "days/bare x" + t, round.get("claim/days") / round.get("bare"));
                if (round.containsKey("claim/days-generic")) {
                    ratio(ratios, "days-generic/plain x" + t, round.get("claim/days-generic") / p);
                    ratio(ratios, "days-generic/bare x" + t, round.get("claim/days-generic") / round.get("bare"));
                }
                StringBuilder line = new StringBuilder(
                        String.format(Locale.ROOT, "  [rows %s r%d/%d x%d]", Report.human(size), r, flags.rounds(), t));
                round.forEach((k, v) -> line.append(String.format(Locale.ROOT, " %s %.0f", k, v)));
                line.append(String.format(Locale.ROOT, " ops/s; days/plain %.3f", round.get("claim/days") / p));
                if (round.containsKey("claim/days-generic")) {
                    line.append(String.format(
                            Locale.ROOT, ", days-generic/plain %.3f", round.get("claim/days-generic") / p));
                }
                log.accept(line.toString());
            }
        }
        log.accept(String.format(
                Locale.ROOT,
                "RESULT rows %s (preloaded; the claims measured add to it), finished %s, %s:",
                Report.human(size),
                Instant.now(),
                loadAverage()));
        for (int t : flags.threads()) {
            for (String k : List.of(
                    "days/plain",
                    "days-generic/plain",
                    "plain-daykey/plain",
                    "days/plain-daykey",
                    "plain/bare",
                    "days/bare",
                    "days-generic/bare")) {
                List<Double> v = ratios.get(k + " x" + t);
                if (v != null) {
                    log.accept(String.format(Locale.ROOT, "RESULT   x%d  %-20s %s", t, k, stat(v)));
                }
            }
            StringBuilder medians = new StringBuilder(String.format(Locale.ROOT, "RESULT   x%d  ops/s median", t));
            for (Variant v : vs) {
                List<Double> o = ops.get(v.label() + " x" + t);
                List<Double> u = cpu.get(v.label() + " x" + t);
                medians.append(String.format(
                        Locale.ROOT,
                        " | %s %.0f (cpu %s us/call)",
                        v.label(),
                        Partitioning.median(o),
                        u == null ? "-" : String.format(Locale.ROOT, "%.0f", Partitioning.median(u))));
            }
            log.accept(medians.toString());
        }
    }

    private static void ratio(Map<String, List<Double>> ratios, String key, double value) {
        ratios.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
    }

    static String stat(List<Double> v) {
        return String.format(
                Locale.ROOT,
                "%.3f (IQR %.3f-%.3f, min %.3f, max %.3f, n %d)",
                Partitioning.median(v),
                Partitioning.quantile(v, 0.25),
                Partitioning.quantile(v, 0.75),
                v.stream().mapToDouble(Double::doubleValue).min().orElse(0),
                v.stream().mapToDouble(Double::doubleValue).max().orElse(0),
                v.size());
    }

    // ------------------------------------------------------------------ retention of one day

    private static final String DELETE_BATCH = "DELETE FROM %1$s WHERE (scope, idem_key) IN ("
            + "SELECT scope, idem_key FROM %1$s WHERE expires_at <= statement_timestamp() ORDER BY expires_at LIMIT ?"
            + " FOR UPDATE SKIP LOCKED) AND expires_at <= statement_timestamp()";

    /**
     * One day of {@code retentionRows} expired rows (the oldest day accepted, two days ago) in both
     * tables, then: {@code dropBehind} on the partitioned one with a clock at which that day, and no
     * other, is past the window; batched DELETE on the plain one; VACUUM of the plain one.
     */
    private static void retention(Bench.Database db, HikariDataSource pool, Flags flags, Consumer<String> log)
            throws Exception {
        LocalDate day = LocalDate.now(ZoneOffset.UTC).minusDays(2);
        String partition = PART + "." + TABLE + "_" + DAY.format(day);
        String plain = PLAIN + "." + TABLE;
        long n = flags.retentionRows();
        log.accept(String.format(
                Locale.ROOT, "retention: %,d rows of %s, started %s, %s", n, day, Instant.now(), loadAverage()));
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("SET maintenance_work_mem = '1GB'");
            s.execute("TRUNCATE " + plain);
            s.execute("TRUNCATE " + PART + "." + TABLE);
            loadDay(c, s, day, n, log);
            long t0 = System.nanoTime();
            // the same rows into the plain table, its indexes dropped and rebuilt
            List<String> plainRebuild = new ArrayList<>();
            plainRebuild.addAll(strings(
                    c,
                    "SELECT 'ALTER TABLE " + plain + " ADD CONSTRAINT ' || quote_ident(conname) || ' '"
                            + " || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '" + plain
                            + "'::regclass AND contype = 'p'"));
            plainRebuild.addAll(strings(
                    c,
                    "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = '" + plain
                            + "'::regclass AND NOT indisprimary"));
            for (String k : strings(
                    c,
                    "SELECT quote_ident(conname) FROM pg_constraint WHERE conrelid = '" + plain
                            + "'::regclass AND contype = 'p'")) {
                s.execute("ALTER TABLE " + plain + " DROP CONSTRAINT " + k);
            }
            for (String i : strings(
                    c,
                    "SELECT quote_ident(n.nspname) || '.' || quote_ident(ic.relname) FROM pg_index i"
                            + " JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_namespace n ON n.oid = ic.relnamespace"
                            + " WHERE i.indrelid = '" + plain + "'::regclass")) {
                s.execute("DROP INDEX " + i);
            }
            s.executeUpdate("INSERT INTO " + plain + " SELECT * FROM " + partition);
            for (String sql : plainRebuild) {
                s.execute(sql);
            }
            log.accept(String.format(
                    Locale.ROOT, "    copied to %s, indexed in %.0f s", plain, (System.nanoTime() - t0) / 1e9));
            s.execute("VACUUM (ANALYZE) " + partition);
            s.execute("VACUUM (ANALYZE) " + plain);
            s.execute("CHECKPOINT");
            log.accept("    "
                    + strings(
                                    c,
                                    "SELECT format('partition %s: %s rows, %s expired, %s MB with indexes; plain: %s rows, %s MB with indexes; indexes %s / %s',"
                                            + " '" + partition + "', (SELECT count(*) FROM " + partition + "),"
                                            + " (SELECT count(*) FROM " + partition + " WHERE expires_at <= now()),"
                                            + " pg_total_relation_size('" + partition + "') / 1048576,"
                                            + " (SELECT count(*) FROM " + plain + "), pg_total_relation_size('" + plain
                                            + "') / 1048576,"
                                            + " (SELECT string_agg(indexrelid::regclass::text, ',') FROM pg_index WHERE indrelid = '"
                                            + partition + "'::regclass),"
                                            + " (SELECT string_agg(indexrelid::regclass::text, ',') FROM pg_index WHERE indrelid = '"
                                            + plain + "'::regclass))")
                            .get(0));

            // 1. the partition dropped, as the daily job would: dropBehind, its clock where this day
            // (and no later one) is past acceptFor (2 d) + longestTransaction (1 h) + the TTL (24 h)
            Duration ttl = Duration.ofHours(24);
            Instant at = day.plusDays(1)
                    .atStartOfDay()
                    .toInstant(ZoneOffset.UTC)
                    .plus(Duration.ofDays(2))
                    .plus(Duration.ofHours(1))
                    .plus(ttl)
                    .plus(Duration.ofHours(12));
            ClaimPartitions later = ClaimPartitions.byKeyDay(pool)
                    .schema(PART)
                    .clock(Clock.fixed(at, ZoneOffset.UTC))
                    .build();
            log.accept("RESULT retention run at " + Instant.now() + ", " + loadAverage());
            long lsn0 = lsn(c);
            t0 = System.nanoTime();
            ClaimPartitions.Retention done = later.dropBehind(ttl);
            double dropMs = (System.nanoTime() - t0) / 1e6;
            long dropWal = lsn(c) - lsn0;
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT drop: dropBehind(%s) at clock %s: dropped %s, kept %s; %,d rows gone in %.0f ms, WAL %,d B (%.1f kB)",
                    ttl,
                    at,
                    done.dropped(),
                    done.kept(),
                    n,
                    dropMs,
                    dropWal,
                    dropWal / 1024.0));
            if (!done.dropped().equals(List.of(day))) {
                log.accept("SURPRISE: dropBehind dropped " + done.dropped() + ", expected only " + day);
            }

            // 2. the same rows deleted from the plain table in batches of 10,000
            String del = String.format(Locale.ROOT, DELETE_BATCH, plain);
            long rows = 0;
            int batches = 0;
            List<Double> batchMs = new ArrayList<>();
            lsn0 = lsn(c);
            t0 = System.nanoTime();
            long budget = flags.deleteBudget().toNanos();
            boolean cut = false;
            while (true) {
                long b0 = System.nanoTime();
                int k;
                try (PreparedStatement ps = c.prepareStatement(del)) {
                    ps.setInt(1, 10_000);
                    k = ps.executeUpdate();
                }
                batchMs.add((System.nanoTime() - b0) / 1e6);
                rows += k;
                batches++;
                if (batches % 100 == 0) {
                    log.accept(String.format(
                            Locale.ROOT,
                            "    deleted %,d rows in %d batches, %.0f s, last 100 batches median %.0f ms",
                            rows,
                            batches,
                            (System.nanoTime() - t0) / 1e9,
                            Partitioning.median(batchMs.subList(batchMs.size() - 100, batchMs.size()))));
                }
                if (k < 10_000) {
                    break;
                }
                if (System.nanoTime() - t0 > budget) {
                    cut = true;
                    break;
                }
            }
            double delMs = (System.nanoTime() - t0) / 1e6;
            long delWal = lsn(c) - lsn0;
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT delete: batched DELETE (10,000 a batch, by the expires_at index, PK-matched) of %s: %,d rows in %d batches, %.0f ms (%.1f us a row; batch ms median %.0f, IQR %.0f-%.0f, max %.0f), WAL %,d B (%.1f MB, %.0f B a row)%s",
                    plain,
                    rows,
                    batches,
                    delMs,
                    delMs * 1000 / Math.max(1, rows),
                    Partitioning.median(batchMs),
                    Partitioning.quantile(batchMs, 0.25),
                    Partitioning.quantile(batchMs, 0.75),
                    batchMs.stream().mapToDouble(Double::doubleValue).max().orElse(0),
                    delWal,
                    delWal / 1048576.0,
                    (double) delWal / Math.max(1, rows),
                    cut
                            ? String.format(
                                    Locale.ROOT,
                                    "; CUT at the budget: EXTRAPOLATED to %,d rows: %.0f s, %.0f MB",
                                    n,
                                    delMs / 1000 * n / rows,
                                    delWal / 1048576.0 * n / rows)
                            : ""));
            lsn0 = lsn(c);
            t0 = System.nanoTime();
            s.execute("VACUUM " + plain);
            double vacMs = (System.nanoTime() - t0) / 1e6;
            long vacWal = lsn(c) - lsn0;
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT then VACUUM %s: %.0f ms, WAL %,d B (%.1f MB); table now %s MB with indexes; finished %s, %s",
                    plain,
                    vacMs,
                    vacWal,
                    vacWal / 1048576.0,
                    strings(c, "SELECT pg_total_relation_size('" + plain + "') / 1048576")
                            .get(0),
                    Instant.now(),
                    loadAverage()));
        }
    }

    static List<String> strings(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    /**
     * The steps of {@link ClaimPartitions#dropBehind} one by one, as it runs them, on a day of
     * {@code retentionRows} expired rows, each timed with the WAL it wrote; while 4 threads claim
     * fresh keys of today through the library on the same partitioned table, whose slowest call in
     * each step shows whether a step stops the claims.
     */
    private static void dropDetail(Bench.Database db, HikariDataSource pool, Flags flags, Consumer<String> log)
            throws Exception {
        LocalDate day = LocalDate.now(ZoneOffset.UTC).minusDays(2);
        String parent = PART + "." + TABLE;
        String partition = parent + "_" + DAY.format(day);
        long n = flags.retentionRows();
        log.accept(String.format(
                Locale.ROOT, "drop-detail: %,d rows of %s, started %s, %s", n, day, Instant.now(), loadAverage()));
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("SET maintenance_work_mem = '1GB'");
            s.execute("TRUNCATE " + parent);
            loadDay(c, s, day, n, log);
            s.execute("VACUUM (ANALYZE) " + partition);
            s.execute("CHECKPOINT");
            BenchContext part = new BenchContext(
                    pool, new Ledger(PART, 10_000), new BenchContext.Shared(), IdempotencyPolicy.defaults());
            IdempotentTransaction<Ledger.Receipt> idem = IdempotentTransaction.builder(part.dsl, Ledger.CODEC)
                    .partitions(ClaimPartitions.byKeyDay(pool).schema(PART).build())
                    .build();
            DayClaim claim = new DayClaim("claim/days", part, idem);
            java.util.concurrent.atomic.AtomicLong maxNanos = new java.util.concurrent.atomic.AtomicLong();
            java.util.concurrent.atomic.AtomicLong calls = new java.util.concurrent.atomic.AtomicLong();
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            java.util.concurrent.atomic.AtomicReference<Throwable> failed =
                    new java.util.concurrent.atomic.AtomicReference<>();
            List<Thread> clients = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Strategy.Worker w = claim.worker(i, 4);
                Thread t = new Thread(() -> {
                    while (!stop.get()) {
                        long t0 = System.nanoTime();
                        try {
                            if (w.op(null) != Strategy.Kind.EXECUTED) {
                                failed.compareAndSet(null, new IllegalStateException("a claim did not execute"));
                            }
                        } catch (Throwable e) {
                            failed.compareAndSet(null, e);
                        }
                        maxNanos.accumulateAndGet(System.nanoTime() - t0, Math::max);
                        calls.incrementAndGet();
                    }
                });
                t.start();
                clients.add(t);
            }
            try {
                Thread.sleep(3000);
                String check = "SELECT count(*) FROM (SELECT state FROM " + partition
                        + " WHERE expires_at > now() LIMIT 1000) x";
                List<String[]> steps = List.of(
                        new String[] {"claims alone, 1 s", null},
                        new String[] {"check: rows that still answer", check},
                        new String[] {
                            "DETACH PARTITION CONCURRENTLY",
                            "ALTER TABLE " + parent + " DETACH PARTITION " + partition + " CONCURRENTLY"
                        },
                        new String[] {"check again", check},
                        new String[] {"DROP TABLE", "DROP TABLE " + partition},
                        new String[] {"claims alone, 1 s", null});
                for (String[] step : steps) {
                    maxNanos.set(0);
                    long calls0 = calls.get();
                    long lsn0 = lsn(c);
                    long t0 = System.nanoTime();
                    String result = "";
                    if (step[1] == null) {
                        Thread.sleep(1000);
                    } else if (step[1].startsWith("SELECT")) {
                        result = " -> " + strings(c, step[1]).get(0) + " live rows";
                    } else {
                        s.execute("SET lock_timeout = '5s'");
                        s.execute(step[1]);
                        s.execute("RESET lock_timeout");
                    }
                    double ms = (System.nanoTime() - t0) / 1e6;
                    long wal = lsn(c) - lsn0;
                    log.accept(String.format(
                            Locale.ROOT,
                            "RESULT drop-detail %-32s %8.1f ms, WAL %,9d B; claims during it %d, slowest %.1f ms%s",
                            step[0],
                            ms,
                            wal,
                            calls.get() - calls0,
                            maxNanos.get() / 1e6,
                            result));
                }
            } finally {
                stop.set(true);
                for (Thread t : clients) {
                    t.join();
                }
            }
            if (failed.get() != null) {
                log.accept("SURPRISE: a concurrent claim failed: " + failed.get());
            }
            log.accept("drop-detail finished " + Instant.now() + ", " + loadAverage());
        }
    }

    /**
     * Fills {@code day}'s (empty) partition with {@code n} rows created evenly over that day and
     * expired 24 h later: detached, its key and indexes dropped, the rows inserted, the key and
     * indexes rebuilt from their own definitions, attached again.
     */
    static void loadDay(Connection c, Statement s, LocalDate day, long n, Consumer<String> log) throws SQLException {
        String partition = PART + "." + TABLE + "_" + DAY.format(day);
        long t0 = System.nanoTime();
        // the day's partition, detached while empty, loaded without its indexes, rebuilt, attached again
        List<String> rebuild = new ArrayList<>();
        rebuild.addAll(strings(
                c,
                "SELECT 'ALTER TABLE " + partition + " ADD CONSTRAINT ' || quote_ident(conname) || ' '"
                        + " || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '" + partition
                        + "'::regclass AND contype = 'p'"));
        rebuild.addAll(strings(
                c,
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = '" + partition
                        + "'::regclass AND NOT indisprimary"));
        s.execute("ALTER TABLE " + PART + "." + TABLE + " DETACH PARTITION " + partition);
        for (String k : strings(
                c,
                "SELECT quote_ident(conname) FROM pg_constraint WHERE conrelid = '" + partition
                        + "'::regclass AND contype = 'p'")) {
            s.execute("ALTER TABLE " + partition + " DROP CONSTRAINT " + k);
        }
        for (String i : strings(
                c,
                "SELECT quote_ident(n.nspname) || '.' || quote_ident(ic.relname) FROM pg_index i"
                        + " JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_namespace n ON n.oid = ic.relnamespace"
                        + " WHERE i.indrelid = '" + partition + "'::regclass")) {
            s.execute("DROP INDEX " + i);
        }
        String seed = Long.toHexString(ThreadLocalRandom.current().nextLong());
        String dayStart = day + " 00:00:00+00";
        final long chunk = 1_000_000;
        for (long done = 0; done < n; ) {
            long k = Math.min(chunk, n - done);
            // created evenly over the day, expired 24 h later: every row expired by now
            s.executeUpdate("INSERT INTO " + partition
                    + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                    + " SELECT 'tenant-' || lpad((i % " + BenchContext.SCOPES + ")::text, 2, '0'),"
                    + "        '" + DAY.format(day) + "-' || md5('" + seed + "' || i)::uuid::text,"
                    + "        sha256(convert_to('" + seed + "' || i, 'UTF8')), 1,"
                    + "        convert_to(i || '|acct-000001|acct-000002|1.00', 'UTF8'),"
                    + "        t, t + interval '3 milliseconds', t + interval '24 hours'"
                    + " FROM (SELECT i, timestamptz '" + dayStart + "' + (i::float8 / " + n
                    + ") * interval '86399 seconds' AS t FROM generate_series(" + (done + 1) + ", " + (done + k)
                    + ") i) g");
            done += k;
            log.accept(String.format(Locale.ROOT, "    loaded %,d of %,d rows into %s", done, n, partition));
        }
        for (String sql : rebuild) {
            s.execute(sql);
        }
        s.execute("ALTER TABLE " + PART + "." + TABLE + " ATTACH PARTITION " + partition + " FOR VALUES FROM ('"
                + DAY.format(day) + "') TO ('" + DAY.format(day.plusDays(1)) + "')");
        log.accept(String.format(
                Locale.ROOT, "    partition loaded, indexed, attached in %.0f s", (System.nanoTime() - t0) / 1e9));
    }

    private static long lsn(Connection c) throws SQLException {
        return Long.parseLong(strings(c, "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
                .get(0));
    }
}
