package io.github.idemtx.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * The claim table hash-partitioned by scope, measured against the plain table in one process
 * (docs/scaling.md): the library's claim path on both, interleaved round by round, with the tables
 * empty and preloaded; then the purge, globally on both and on one partition, and the removal of
 * a whole partition (TRUNCATE, DETACH + DROP) against deleting its expired rows.
 *
 * <p>Two schemas, each migrated with {@link IdempotencySchema#migrate} and given the bench's ledger
 * tables: {@value #PLAIN} keeps the migrated table; in {@value #HASH} the table is replaced by one
 * {@code PARTITION BY HASH (scope)} with the same columns, constraints, indexes, triggers and
 * storage parameters, all read from the catalog of the migrated table (so it follows the
 * migrations as they change). Before measuring, the library is run against the partitioned table
 * once for each path of the protocol (first call, replay, mismatch, a duplicate waiting on the
 * holder, an expired row taken over, a joined call whose expiry the deferred trigger rewrites at
 * commit, the purge, an external effect, V1's function). Both schemas are dropped at the end.
 *
 * <p>A one-off experiment, not part of the bench: it lives in the bench's test sources and runs
 * through the bench's {@code partitioning} profile (bench/README.md):
 *
 * <pre>
 * ./mvnw -q -B -pl bench -am -Ppartitioning -DskipTests test-compile exec:java -Dexec.args="--rows 1000000"
 * </pre>
 *
 * Flags: {@code --rows LIST} (table sizes after the empty one; 0 alone for only the empty table),
 * {@code --partitions N} (16), {@code --rounds N} (8), {@code --threads LIST} (1,8),
 * {@code --warmup DUR} (250ms), {@code --duration DUR} (1.5s), {@code --global-warmup DUR} (8s),
 * {@code --purge-batches N} (30), {@code --purge-limit N} (1000), {@code --phases LIST}
 * (throughput,purge), {@code --skip-empty}, {@code --generic} (adds claim/hash-generic: the partitioned table from a
 * second pool whose sessions run {@code plan_cache_mode = force_generic_plan}, to show what re-planning costs),
 * {@code --db-url}, {@code --db-user}, {@code --db-password}.
 */
public final class Partitioning {

    static final String PLAIN = "idemtx_partitions_plain";
    static final String HASH = "idemtx_partitions_hash";
    private static final String TABLE = IdempotencySchema.CLAIM_TABLE;

    private Partitioning() {}

    record Flags(
            String url,
            String user,
            String password,
            List<Long> rows,
            int partitions,
            int rounds,
            List<Integer> threads,
            Duration warmup,
            Duration duration,
            Duration globalWarmup,
            int purgeBatches,
            int purgeLimit,
            List<String> phases,
            boolean skipEmpty,
            boolean generic) {

        static Flags parse(String[] args) {
            Map<String, String> f = Options.flags(
                    args,
                    name -> name.equals("skip-empty") || name.equals("generic"),
                    "see the Partitioning class documentation for its flags");
            String url = f.getOrDefault(
                    "db-url", Objects.requireNonNullElse(System.getenv("BENCH_DB_URL"), Options.DEFAULT_URL));
            Flags flags = new Flags(
                    url,
                    f.getOrDefault("db-user", Objects.requireNonNullElse(System.getenv("BENCH_DB_USER"), "postgres")),
                    f.getOrDefault("db-password", System.getenv("BENCH_DB_PASSWORD")),
                    longs(f.getOrDefault("rows", "1000000")),
                    Integer.parseInt(f.getOrDefault("partitions", "16")),
                    Integer.parseInt(f.getOrDefault("rounds", "8")),
                    longs(f.getOrDefault("threads", "1,8")).stream()
                            .map(Long::intValue)
                            .toList(),
                    Options.duration(f.getOrDefault("warmup", "250ms")),
                    Options.duration(f.getOrDefault("duration", "1.5s")),
                    Options.duration(f.getOrDefault("global-warmup", "8s")),
                    Integer.parseInt(f.getOrDefault("purge-batches", "30")),
                    Integer.parseInt(f.getOrDefault("purge-limit", "1000")),
                    List.of(f.getOrDefault("phases", "throughput,purge").split(",")),
                    Boolean.parseBoolean(f.getOrDefault("skip-empty", "false")),
                    Boolean.parseBoolean(f.getOrDefault("generic", "false")));
            for (String k : f.keySet()) {
                if (!List.of(
                                "db-url",
                                "db-user",
                                "db-password",
                                "rows",
                                "partitions",
                                "rounds",
                                "threads",
                                "warmup",
                                "duration",
                                "global-warmup",
                                "purge-batches",
                                "purge-limit",
                                "phases",
                                "skip-empty",
                                "generic")
                        .contains(k)) {
                    throw new IllegalArgumentException("unknown flag --" + k);
                }
            }
            return flags;
        }

        /** Comma-separated numbers, {@code _} allowed inside them (also DayPartitioning's). */
        static List<Long> longs(String text) {
            List<Long> out = new ArrayList<>();
            for (String s : text.split(",")) {
                if (!s.isBlank()) {
                    out.add(Long.parseLong(s.strip().replace("_", "")));
                }
            }
            return out;
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
        log.accept(String.format(
                Locale.ROOT,
                "partitioning: %s, %d hash partitions, rows %s, %d rounds at %s clients, started %s",
                flags.url(),
                flags.partitions(),
                flags.rows(),
                flags.rounds(),
                flags.threads(),
                Instant.now()));
        try (HikariDataSource pool = db.pool("partitions", flags.maxThreads() + 1, null);
                HikariDataSource genericPool = flags.generic()
                        ? db.pool("partitions-generic", flags.maxThreads(), "SET plan_cache_mode = force_generic_plan")
                        : null;
                Driver driver = new Driver(flags.maxThreads(), new CpuProbe(pool, "idemtx-partitions"))) {
            DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES, BenchContext.SETTINGS);
            try {
                for (String schema : List.of(PLAIN, HASH)) {
                    dsl.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
                    IdempotencySchema.migrate(pool, schema);
                    new Ledger(schema, 10_000).create(dsl);
                }
                TableDdl ddl;
                try (Connection c = db.connect()) {
                    ddl = TableDdl.read(c, PLAIN);
                    ddl.partitionByHash(c, HASH, flags.partitions(), log);
                    compare(c, log);
                }
                BenchContext.Shared plainShared = new BenchContext.Shared();
                BenchContext.Shared hashShared = new BenchContext.Shared();
                BenchContext plain =
                        new BenchContext(pool, new Ledger(PLAIN, 10_000), plainShared, IdempotencyPolicy.defaults());
                BenchContext hash =
                        new BenchContext(pool, new Ledger(HASH, 10_000), hashShared, IdempotencyPolicy.defaults());
                BenchContext hashGeneric = genericPool == null
                        ? null
                        : new BenchContext(
                                genericPool, new Ledger(HASH, 10_000), hashShared, IdempotencyPolicy.defaults());
                protocolCheck(pool, dsl, HASH, log);
                protocolCheck(pool, dsl, PLAIN, log);

                ClaimTable plainTable = new ClaimTable(pool, PLAIN, plainShared);
                ClaimTable hashTable = new ClaimTable(pool, HASH, hashShared);
                if (flags.phases().contains("throughput")) {
                    warmUp(driver, flags, plain, hash, hashGeneric, log);
                }
                List<Long> sizes = new ArrayList<>();
                if (!flags.skipEmpty()) {
                    sizes.add(0L);
                }
                flags.rows().stream().filter(r -> r > 0).forEach(sizes::add);
                for (long size : sizes) {
                    if (size == 0) {
                        plainTable.truncate();
                        hashTable.truncate();
                    } else {
                        log.accept(String.format(Locale.ROOT, "loading %s to %,d rows", PLAIN, size));
                        double s1 = plainTable.loadTo(size, db, log);
                        double s2 = copy(db, ddl, hashShared, plainShared);
                        log.accept(String.format(
                                Locale.ROOT, "    loaded in %.1f s, copied to %s in %.1f s", s1, HASH, s2));
                    }
                    try (Connection c = db.connect()) {
                        log.accept("    " + sizes(c));
                        log.accept("    rows per partition: " + partitionRows(c));
                    }
                    if (flags.phases().contains("throughput")) {
                        throughput(driver, flags, size, plain, hash, hashGeneric, plainTable, log);
                    }
                }
                if (flags.phases().contains("purge") && !sizes.isEmpty() && sizes.get(sizes.size() - 1) > 0) {
                    purge(db, flags, plain, hash, log);
                }
            } finally {
                for (String schema : List.of(PLAIN, HASH)) {
                    dsl.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
                }
            }
        }
        log.accept(String.format(
                Locale.ROOT,
                "done in %.0f s; schemas %s and %s dropped",
                (System.nanoTime() - started) / 1e9,
                PLAIN,
                HASH));
        System.exit(0);
    }

    // ------------------------------------------------------------------ the partitioned table

    /** The migrated claim table's definition, read from the catalog, to be replayed on a partitioned table. */
    record TableDdl(
            List<String> columns,
            List<String> constraints,
            List<String> indexes,
            List<String> triggers,
            String reloptions) {

        static TableDdl read(Connection c, String schema) throws SQLException {
            String rel = "'" + schema + "." + TABLE + "'::regclass";
            List<String> columns = strings(
                    c,
                    "SELECT quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)"
                            + " || CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation"
                            + "      THEN ' COLLATE ' || quote_ident(co.collname) ELSE '' END"
                            + " || CASE WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END"
                            + " || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END"
                            + " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
                            + " LEFT JOIN pg_collation co ON co.oid = a.attcollation"
                            + " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                            + " WHERE a.attrelid = " + rel
                            + " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum");
            // the primary key first (the rest may rely on it), each with its name and NOT VALID as it is;
            // not the constraint trigger's entry (contype t), which CREATE CONSTRAINT TRIGGER makes
            List<String> constraints = strings(
                    c,
                    "SELECT 'CONSTRAINT ' || quote_ident(conname) || ' ' || pg_get_constraintdef(oid)"
                            + " FROM pg_constraint WHERE conrelid = " + rel
                            + " AND contype <> 't' ORDER BY contype <> 'p', conname");
            List<String> indexes = strings(
                    c,
                    "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i"
                            + " WHERE i.indrelid = " + rel
                            + " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) ORDER BY i.indexrelid");
            List<String> triggers = strings(
                    c,
                    "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = " + rel
                            + " AND NOT tgisinternal ORDER BY tgname");
            List<String> options = strings(
                    c,
                    "SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = " + rel
                            + " AND reloptions IS NOT NULL");
            return new TableDdl(columns, constraints, indexes, triggers, options.isEmpty() ? null : options.get(0));
        }

        /**
         * Replaces {@code schema}'s claim table by one hash-partitioned by scope: the same columns,
         * then the partitions (with the table's storage parameters: a partitioned table takes none
         * itself), then the constraints, indexes and triggers of the migrated table, renamed to
         * {@code schema}. PostgreSQL creates each index, constraint and row trigger on every partition.
         */
        void partitionByHash(Connection c, String schema, int partitions, Consumer<String> log) throws SQLException {
            String table = schema + "." + TABLE;
            List<String> ddl = new ArrayList<>();
            ddl.add("DROP TABLE " + table);
            ddl.add("CREATE TABLE " + table + " (" + String.join(", ", columns) + ") PARTITION BY HASH (scope)");
            for (int r = 0; r < partitions; r++) {
                ddl.add("CREATE TABLE " + partition(schema, r) + " PARTITION OF " + table
                        + " FOR VALUES WITH (MODULUS " + partitions + ", REMAINDER " + r + ")"
                        + (reloptions == null ? "" : " WITH (" + reloptions + ")"));
            }
            for (String k : constraints) {
                ddl.add("ALTER TABLE " + table + " ADD " + k);
            }
            for (String i : indexes) {
                ddl.add(rename(i, schema));
            }
            for (String t : triggers) {
                ddl.add(rename(t, schema));
            }
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                for (String sql : ddl) {
                    s.execute(sql);
                }
                c.commit();
            } catch (SQLException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
            log.accept("partitioned " + table + " by HASH (scope) into " + partitions + " partitions:");
            for (String sql : ddl) {
                if (!sql.contains("PARTITION OF") || sql.contains("REMAINDER 0)")) {
                    log.accept("    " + sql + ";");
                }
            }
            log.accept("    (and " + (partitions - 1) + " more partitions like _p00)");
        }

        /** Rebuilds the primary key and the indexes on {@code schema}'s table after a bulk load. */
        List<String> rebuild(String schema) {
            List<String> out = new ArrayList<>();
            for (String k : constraints) {
                if (k.contains(" PRIMARY KEY ")) {
                    out.add("ALTER TABLE " + schema + "." + TABLE + " ADD " + k);
                }
            }
            for (String i : indexes) {
                out.add(rename(i, schema));
            }
            return out;
        }

        private static String rename(String ddl, String schema) {
            return ddl.replace(PLAIN + ".", schema + ".");
        }
    }

    static String partition(String schema, int r) {
        return String.format(Locale.ROOT, "%s.%s_p%02d", schema, TABLE, r);
    }

    /** Prints the two tables' definitions side by side, as the catalog has them; they must be the same. */
    private static void compare(Connection c, Consumer<String> log) throws SQLException {
        Map<String, List<String>> plain = describe(c, PLAIN);
        Map<String, List<String>> hash = describe(c, HASH);
        boolean same = plain.equals(hash);
        log.accept("catalog check, " + PLAIN + " vs " + HASH + " (columns, constraints, indexes, triggers): "
                + (same ? "the same" : "DIFFERENT"));
        if (!same) {
            plain.forEach((k, v) -> {
                if (!v.equals(hash.get(k))) {
                    log.accept("    " + k + "\n      plain: " + v + "\n      hash:  " + hash.get(k));
                }
            });
        }
        // every partition carries every index and the row trigger, and the storage parameters
        List<String> perPartition = strings(
                c,
                "SELECT count(*) || ' partitions; indexes per partition ' || min(ni) || '-' || max(ni)"
                        + " || ', triggers per partition ' || min(nt) || '-' || max(nt) || ', reloptions ' || coalesce(min(ro), 'none')"
                        + " FROM (SELECT p.oid, (SELECT count(*) FROM pg_index i WHERE i.indrelid = p.oid) ni,"
                        + "        (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = p.oid AND NOT t.tgisinternal) nt,"
                        + "        array_to_string(p.reloptions, ',') ro"
                        + "       FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhrelid"
                        + "       WHERE h.inhparent = '" + HASH + "." + TABLE + "'::regclass) x");
        log.accept("    " + perPartition.get(0) + " (plain: "
                + strings(
                                c,
                                "SELECT (SELECT count(*) FROM pg_index WHERE indrelid = '" + PLAIN + "." + TABLE
                                        + "'::regclass)"
                                        + " || ' indexes, reloptions ' || coalesce(array_to_string(reloptions, ','), 'none') FROM pg_class"
                                        + " WHERE oid = '" + PLAIN + "." + TABLE + "'::regclass")
                        .get(0)
                + ")");
    }

    private static Map<String, List<String>> describe(Connection c, String schema) throws SQLException {
        String rel = "'" + schema + "." + TABLE + "'::regclass";
        Map<String, List<String>> m = new LinkedHashMap<>();
        m.put(
                "columns",
                strings(
                        c,
                        "SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' collate ' || coalesce(co.collname, '-')"
                                + " || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END FROM pg_attribute a"
                                + " LEFT JOIN pg_collation co ON co.oid = a.attcollation"
                                + " WHERE a.attrelid = " + rel
                                + " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"));
        m.put(
                "constraints",
                strings(
                        c,
                        "SELECT conname || ' ' || pg_get_constraintdef(oid) || CASE WHEN condeferrable THEN ' deferrable' ELSE '' END"
                                + " FROM pg_constraint WHERE conrelid = " + rel + " ORDER BY conname"));
        m.put(
                "indexes",
                strings(
                        c,
                        "SELECT replace(replace(pg_get_indexdef(indexrelid), ' ON ONLY ', ' ON '), '" + schema
                                + ".', '')" + " FROM pg_index WHERE indrelid = " + rel + " ORDER BY 1"));
        m.put(
                "triggers",
                strings(
                        c,
                        "SELECT replace(pg_get_triggerdef(oid), '" + schema + ".', '') FROM pg_trigger"
                                + " WHERE tgrelid = " + rel + " AND NOT tgisinternal ORDER BY tgname"));
        return m;
    }

    /**
     * Copies the plain table's rows into the partitioned one (emptied first), with its primary key and
     * indexes dropped and rebuilt, then VACUUM ANALYZE and CHECKPOINT, as {@link ClaimTable#loadTo}
     * does for the plain one; both tables then hold the same rows.
     */
    private static double copy(
            Bench.Database db, TableDdl ddl, BenchContext.Shared hashShared, BenchContext.Shared plainShared)
            throws SQLException {
        long t0 = System.nanoTime();
        String table = HASH + "." + TABLE;
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("SET maintenance_work_mem = '1GB'");
            s.execute("TRUNCATE " + table);
            for (String name : strings(
                    c,
                    "SELECT quote_ident(conname) FROM pg_constraint WHERE conrelid = '" + table
                            + "'::regclass AND contype = 'p'")) {
                s.execute("ALTER TABLE " + table + " DROP CONSTRAINT " + name);
            }
            for (String name : strings(
                    c,
                    "SELECT quote_ident(n.nspname) || '.' || quote_ident(ic.relname) FROM pg_index i"
                            + " JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_namespace n ON n.oid = ic.relnamespace"
                            + " WHERE i.indrelid = '" + table + "'::regclass AND NOT i.indisprimary")) {
                s.execute("DROP INDEX " + name);
            }
            s.executeUpdate("INSERT INTO " + table + " SELECT * FROM " + PLAIN + "." + TABLE);
            for (String sql : ddl.rebuild(HASH)) {
                s.execute(sql);
            }
            s.execute("VACUUM (ANALYZE) " + table);
            s.execute("CHECKPOINT");
        }
        hashShared.claimRows.set(plainShared.claimRows.get());
        hashShared.expiredRows.set(plainShared.expiredRows.get());
        hashShared.clearCompleted();
        return (System.nanoTime() - t0) / 1e9;
    }

    private static String sizes(Connection c) throws SQLException {
        return strings(
                        c,
                        "SELECT format('plain %s rows, %s MB; hash %s rows, %s MB (with indexes)',"
                                + " (SELECT count(*) FROM " + PLAIN + "." + TABLE + "), pg_total_relation_size('"
                                + PLAIN + "." + TABLE + "') / 1048576,"
                                + " (SELECT count(*) FROM " + HASH + "." + TABLE + "),"
                                + " (SELECT sum(pg_total_relation_size(inhrelid))::bigint FROM pg_inherits WHERE inhparent = '"
                                + HASH + "." + TABLE + "'::regclass) / 1048576)")
                .get(0);
    }

    private static String partitionRows(Connection c) throws SQLException {
        return String.join(
                " ",
                strings(
                        c,
                        "SELECT coalesce(n, 0)::text FROM (SELECT inhrelid, relname FROM pg_inherits JOIN pg_class ON oid = inhrelid"
                                + " WHERE inhparent = '" + HASH + "." + TABLE + "'::regclass) p"
                                + " LEFT JOIN (SELECT tableoid, count(*) n FROM " + HASH + "." + TABLE
                                + " GROUP BY tableoid) r ON r.tableoid = p.inhrelid"
                                + " ORDER BY p.relname"));
    }

    // ------------------------------------------------------------------ the protocol on the partitioned table

    /**
     * Runs each path of the claim protocol once through the library on {@code schema}'s table and
     * says what came back; throws if any path misbehaves.
     */
    private static void protocolCheck(HikariDataSource pool, DSLContext dsl, String schema, Consumer<String> log)
            throws Exception {
        IdempotentTransaction<String> idem = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .schema(schema)
                .build();
        Scope scope = Scope.of("tenant-check");
        IdempotencyKey key = IdempotencyKey.of("check-" + System.nanoTime());
        Fingerprint fp = Fingerprint.sha256("request");
        List<String> seen = new ArrayList<>();
        Outcome<String> first = idem.run(scope, key, fp, tx -> "first");
        Outcome<String> again = idem.run(scope, key, fp, tx -> "second");
        Outcome<String> other = idem.run(scope, key, Fingerprint.sha256("another request"), tx -> "third");
        expect(first instanceof Outcome.Executed<String> e && e.value().equals("first"), "first call: " + first);
        expect(again instanceof Outcome.Replayed<String> r && r.value().equals("first"), "replay: " + again);
        expect(other instanceof Outcome.FingerprintMismatch<String>, "mismatch: " + other);
        seen.add("executed, replayed, mismatch");

        // a duplicate that arrives while the holder runs waits on the key's advisory lock, then replays
        IdempotencyKey busy = IdempotencyKey.of("busy-" + System.nanoTime());
        CountDownLatch holding = new CountDownLatch(1);
        ExecutorService two = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome<String>> holder = two.submit(() -> idem.run(scope, busy, fp, tx -> {
                holding.countDown();
                Thread.sleep(300);
                return "holder";
            }));
            expect(holding.await(10, TimeUnit.SECONDS), "the holder started");
            Thread.sleep(50);
            long t0 = System.nanoTime();
            Outcome<String> dup = two.submit(() -> idem.run(scope, busy, fp, tx -> "duplicate ran"))
                    .get(30, TimeUnit.SECONDS);
            long waitedMs = (System.nanoTime() - t0) / 1_000_000;
            expect(holder.get(30, TimeUnit.SECONDS) instanceof Outcome.Executed<String>, "holder executed");
            expect(
                    dup instanceof Outcome.Replayed<String> r && r.value().equals("holder"),
                    "duplicate replayed the holder: " + dup);
            seen.add("duplicate waited " + waitedMs + " ms then replayed");
        } finally {
            two.shutdownNow();
        }

        // an expired row is taken over (the upsert, ON CONFLICT ... DO UPDATE ... WHERE expired)
        IdempotencyKey old = IdempotencyKey.of("expired-" + System.nanoTime());
        dsl.execute(
                "INSERT INTO " + schema + "." + TABLE
                        + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                        + " VALUES (?, ?, ?, 1, convert_to('stale', 'UTF8'), now() - interval '2 days', now() - interval '2 days', now() - interval '1 day')",
                scope.value(),
                old.value(),
                fp.bytes());
        Outcome<String> takeover = idem.run(scope, old, fp, tx -> "fresh");
        expect(takeover instanceof Outcome.Executed<String> e && e.value().equals("fresh"), "takeover: " + takeover);
        seen.add("expired row taken over");

        // a joined call: state written negative, the deferred constraint trigger rewrites it at commit
        IdempotencyKey joined = IdempotencyKey.of("joined-" + System.nanoTime());
        IdempotencyPolicy shortLived =
                IdempotencyPolicy.builder().ttl(Duration.ofMinutes(5)).build();
        Outcome<String> inCaller =
                dsl.transactionResult(cfg -> IdempotentTransaction.builder(cfg.dsl(), ResultCodec.utf8())
                        .schema(schema)
                        .policy(shortLived)
                        .build()
                        .run(scope, joined, fp, tx -> "joined"));
        expect(inCaller instanceof Outcome.Executed<String>, "joined call: " + inCaller);
        List<String> row = strings(
                pool,
                "SELECT state || ' ' || (expires_at - completed_at > interval '4 minutes')" + " FROM " + schema + "."
                        + TABLE + " WHERE scope = '" + scope.value() + "' AND idem_key = '" + joined.value() + "'");
        expect(row.equals(List.of("1 true")), "joined row after commit (state, expiry from commit): " + row);
        seen.add("joined call's row rewritten at commit by the deferred trigger (state "
                + row.get(0).split(" ")[0] + ")");

        // the purge deletes expired rows only
        dsl.execute(
                "INSERT INTO " + schema + "." + TABLE
                        + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                        + " VALUES (?, ?, ?, 1, NULL, now() - interval '2 days', now() - interval '2 days', now() - interval '1 day')",
                scope.value(),
                "purge-me-" + System.nanoTime(),
                fp.bytes());
        int purged = idem.purgeExpired(100);
        expect(purged == 1, "purged " + purged + " (expected the one expired row)");
        seen.add("purge deleted " + purged);

        // an external effect: the claim committed in flight, the fenced record (V4's columns)
        BenchContext ctx = new BenchContext(
                pool, new Ledger(schema, 10_000), new BenchContext.Shared(), IdempotencyPolicy.defaults());
        Strategy.Kind effect =
                Strategies.create(Strategies.REMOTE_EFFECT, ctx, 0).worker(0, 1).op(null);
        expect(effect == Strategy.Kind.EXECUTED, "external effect: " + effect);
        seen.add("external effect executed");

        // V1's function, kept for rolling upgrades: INSERT ... ON CONFLICT (scope, idem_key) DO NOTHING
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("SELECT claimed FROM " + schema
                    + ".idempotency_acquire(?, ?, ?, 60000, 100, 0::smallint, NULL::bytea)")) {
                ps.setString(1, scope.value());
                ps.setString(2, key.value());
                ps.setBytes(3, fp.bytes());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    expect(!rs.getBoolean(1), "V1 idempotency_acquire on a completed key claims nothing");
                }
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
        seen.add("V1 idempotency_acquire answered");
        log.accept("protocol on " + schema + ": " + String.join("; ", seen));
        dsl.execute("DELETE FROM " + schema + "." + TABLE);
    }

    private static void expect(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("protocol check failed: " + what);
        }
    }

    // ------------------------------------------------------------------ throughput

    private record Variant(String label, Strategy strategy) {}

    private static List<Variant> variants(BenchContext plain, BenchContext hash, BenchContext hashGeneric) {
        List<Variant> vs = new ArrayList<>(List.of(
                new Variant("bare", Strategies.create(Strategies.BARE, plain, 0)),
                new Variant("claim/plain", Strategies.create(Strategies.CLAIM, plain, 0)),
                new Variant("claim/hash", Strategies.create(Strategies.CLAIM, hash, 0))));
        if (hashGeneric != null) {
            vs.add(new Variant("claim/hash-generic", Strategies.create(Strategies.CLAIM, hashGeneric, 0)));
        }
        return vs;
    }

    private static void warmUp(
            Driver driver,
            Flags flags,
            BenchContext plain,
            BenchContext hash,
            BenchContext hashGeneric,
            Consumer<String> log)
            throws Exception {
        log.accept("warm-up " + flags.globalWarmup().toMillis() / 1000.0 + " s");
        List<Variant> vs = variants(plain, hash, hashGeneric);
        long each = flags.globalWarmup().toNanos() / vs.size();
        for (Variant v : vs) {
            driver.run(
                    v.strategy(),
                    flags.maxThreads(),
                    new Driver.Segment(false, 0, each, 0, 0),
                    "warmup",
                    0,
                    new ClaimTable.Stats(0, 0, 0));
        }
    }

    private static void throughput(
            Driver driver,
            Flags flags,
            long size,
            BenchContext plain,
            BenchContext hash,
            BenchContext hashGeneric,
            ClaimTable plainTable,
            Consumer<String> log)
            throws Exception {
        List<Variant> vs = variants(plain, hash, hashGeneric);
        Map<Integer, List<Double>> genericOverPlain = new LinkedHashMap<>();
        Map<String, List<Double>> ops = new LinkedHashMap<>();
        Map<Integer, List<Double>> hashOverPlain = new LinkedHashMap<>();
        Map<Integer, List<Double>> plainOverBare = new LinkedHashMap<>();
        Map<Integer, List<Double>> hashOverBare = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        for (int r = 1; r <= flags.rounds(); r++) {
            for (int t : flags.threads()) {
                Map<String, Double> round = new LinkedHashMap<>();
                for (Variant v : Bench.rotate(vs, r - 1 + flags.threads().indexOf(t))) {
                    SegmentResult s = driver.run(
                            v.strategy(),
                            t,
                            new Driver.Segment(
                                    false,
                                    flags.warmup().toNanos(),
                                    flags.duration().toNanos(),
                                    0,
                                    0),
                            "partitions:" + size,
                            r,
                            plainTable.stats());
                    if (s.errors() > 0 || s.kinds().get(Strategy.Kind.OTHER) > 0) {
                        throw new IllegalStateException(v.label() + " had errors: " + s.firstError());
                    }
                    round.put(v.label(), s.opsPerSecond());
                    ops.computeIfAbsent(v.label() + " x" + t, k -> new ArrayList<>())
                            .add(s.opsPerSecond());
                    Object srv = s.extra().get("server_cpu_us_per_call");
                    Object cli = s.extra().get("client_cpu_us_per_call");
                    if (srv instanceof Double d1
                            && cli instanceof Double d2
                            && !v.label().endsWith("-generic")) { // the probe sees the main pool only
                        cpu.computeIfAbsent(v.label() + " x" + t, k -> new ArrayList<>())
                                .add(d1 + d2);
                    }
                }
                hashOverPlain
                        .computeIfAbsent(t, k -> new ArrayList<>())
                        .add(round.get("claim/hash") / round.get("claim/plain"));
                plainOverBare
                        .computeIfAbsent(t, k -> new ArrayList<>())
                        .add(round.get("claim/plain") / round.get("bare"));
                hashOverBare
                        .computeIfAbsent(t, k -> new ArrayList<>())
                        .add(round.get("claim/hash") / round.get("bare"));
                if (round.containsKey("claim/hash-generic")) {
                    genericOverPlain
                            .computeIfAbsent(t, k -> new ArrayList<>())
                            .add(round.get("claim/hash-generic") / round.get("claim/plain"));
                }
                log.accept(String.format(
                        Locale.ROOT,
                        "  [rows %s r%d/%d x%d] bare %.0f, claim/plain %.0f, claim/hash %.0f ops/s; hash/plain %.3f%s",
                        Report.human(size),
                        r,
                        flags.rounds(),
                        t,
                        round.get("bare"),
                        round.get("claim/plain"),
                        round.get("claim/hash"),
                        round.get("claim/hash") / round.get("claim/plain"),
                        round.containsKey("claim/hash-generic")
                                ? String.format(
                                        Locale.ROOT,
                                        "; hash-generic %.0f ops/s, /plain %.3f",
                                        round.get("claim/hash-generic"),
                                        round.get("claim/hash-generic") / round.get("claim/plain"))
                                : ""));
            }
        }
        log.accept(String.format(
                Locale.ROOT, "RESULT rows %s (preloaded; the claims measured add to it):", Report.human(size)));
        for (int t : flags.threads()) {
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT   x%d  claim/hash / claim/plain %s | claim/plain / bare %s | claim/hash / bare %s | ops/s median bare %.0f plain %.0f hash %.0f | cpu us/call plain %s hash %s",
                    t,
                    stat(hashOverPlain.get(t)),
                    stat(plainOverBare.get(t)),
                    stat(hashOverBare.get(t)),
                    median(ops.get("bare x" + t)),
                    median(ops.get("claim/plain x" + t)),
                    median(ops.get("claim/hash x" + t)),
                    cpu.containsKey("claim/plain x" + t)
                            ? String.format(Locale.ROOT, "%.0f", median(cpu.get("claim/plain x" + t)))
                            : "-",
                    cpu.containsKey("claim/hash x" + t)
                            ? String.format(Locale.ROOT, "%.0f", median(cpu.get("claim/hash x" + t)))
                            : "-"));
            if (genericOverPlain.containsKey(t)) {
                log.accept(String.format(
                        Locale.ROOT,
                        "RESULT   x%d  claim/hash-generic / claim/plain %s | ops/s median %.0f",
                        t,
                        stat(genericOverPlain.get(t)),
                        median(ops.get("claim/hash-generic x" + t))));
            }
        }
    }

    // ------------------------------------------------------------------ purge

    private static final String PARTITION_PURGE = "DELETE FROM %1$s WHERE (scope, idem_key) IN ("
            + "SELECT scope, idem_key FROM %1$s WHERE expires_at <= statement_timestamp() ORDER BY expires_at LIMIT ?"
            + " FOR UPDATE SKIP LOCKED) AND expires_at <= statement_timestamp()";

    /**
     * The purge on the loaded tables: batches of {@code purgeLimit}, interleaved: the library's
     * {@code purgeExpired} on the plain table, the same on the partitioned table (all partitions in
     * one statement), and the same statement aimed at one partition. Then, on three other
     * partitions: every expired row deleted in batches, TRUNCATE, and DETACH + DROP, with the rows
     * each removed, its time and the WAL it wrote; and VACUUM after the deletes.
     */
    private static void purge(
            Bench.Database db, Flags flags, BenchContext plain, BenchContext hash, Consumer<String> log)
            throws Exception {
        int limit = flags.purgeLimit();
        List<String> parts;
        try (Connection c = db.connect()) {
            // the partitions holding rows, largest first
            parts = strings(
                    c,
                    "SELECT p.relname FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhrelid"
                            + " JOIN (SELECT tableoid, count(*) n FROM " + HASH + "." + TABLE
                            + " GROUP BY tableoid) r ON r.tableoid = p.oid"
                            + " WHERE h.inhparent = '" + HASH + "." + TABLE + "'::regclass ORDER BY r.n DESC");
        }
        if (parts.size() < 4) {
            log.accept("purge: fewer than 4 non-empty partitions, skipped");
            return;
        }
        String one = HASH + "." + parts.get(0);
        Map<String, List<Double>> ms = new LinkedHashMap<>();
        Map<String, Long> rows = new LinkedHashMap<>();
        Map<String, Long> wal = new LinkedHashMap<>();
        try (Connection c = db.connect()) {
            log.accept(String.format(
                    Locale.ROOT,
                    "purge: %d batches of %d each, interleaved; one partition = %s (%s rows, %s expired)",
                    flags.purgeBatches(),
                    limit,
                    one,
                    strings(c, "SELECT count(*) FROM " + one).get(0),
                    strings(c, "SELECT count(*) FROM " + one + " WHERE expires_at <= now()")
                            .get(0)));
            String partSql = String.format(Locale.ROOT, PARTITION_PURGE, one);
            for (int b = 0; b < flags.purgeBatches(); b++) {
                timed("global/plain (purgeExpired)", c, ms, rows, wal, () -> plain.idem.purgeExpired(limit));
                timed("global/hash (purgeExpired)", c, ms, rows, wal, () -> hash.idem.purgeExpired(limit));
                timed("one partition (same DELETE)", c, ms, rows, wal, () -> {
                    try (PreparedStatement ps = c.prepareStatement(partSql)) {
                        ps.setInt(1, limit);
                        return ps.executeUpdate();
                    }
                });
            }
            for (String k : ms.keySet()) {
                List<Double> v = ms.get(k);
                log.accept(String.format(
                        Locale.ROOT,
                        "RESULT purge %-28s batch ms median %.1f (IQR %.1f-%.1f), %d rows in %d batches, %.0f rows/s, WAL %.0f B/row",
                        k,
                        median(v),
                        quantile(v, 0.25),
                        quantile(v, 0.75),
                        rows.get(k),
                        v.size(),
                        rows.get(k)
                                / (v.stream().mapToDouble(Double::doubleValue).sum() / 1000),
                        (double) wal.get(k) / Math.max(1, rows.get(k))));
            }

            // removal of a whole partition: delete its expired rows, or drop it
            String del = HASH + "." + parts.get(1);
            String trunc = HASH + "." + parts.get(2);
            String drop = HASH + "." + parts.get(3);
            String delSql = String.format(Locale.ROOT, PARTITION_PURGE, del);
            long delRows = 0;
            long lsn0 = lsn(c);
            long t0 = System.nanoTime();
            int batches = 0;
            while (true) {
                int n;
                try (PreparedStatement ps = c.prepareStatement(delSql)) {
                    ps.setInt(1, 10_000);
                    n = ps.executeUpdate();
                }
                delRows += n;
                batches++;
                if (n < 10_000) {
                    break;
                }
            }
            double delMs = (System.nanoTime() - t0) / 1e6;
            long delWal = lsn(c) - lsn0;
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT whole partition: DELETE of its expired rows (%s, batches of 10000): %d rows, %d batches, %.0f ms, WAL %.1f MB",
                    del,
                    delRows,
                    batches,
                    delMs,
                    delWal / 1048576.0));
            t0 = System.nanoTime();
            try (Statement s = c.createStatement()) {
                s.execute("VACUUM " + del);
            }
            log.accept(String.format(
                    Locale.ROOT, "RESULT   then VACUUM of that partition: %.0f ms", (System.nanoTime() - t0) / 1e6));
            long truncRows =
                    Long.parseLong(strings(c, "SELECT count(*) FROM " + trunc).get(0));
            lsn0 = lsn(c);
            t0 = System.nanoTime();
            try (Statement s = c.createStatement()) {
                s.execute("TRUNCATE " + trunc);
            }
            double truncMs = (System.nanoTime() - t0) / 1e6;
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT whole partition: TRUNCATE %s: %d rows, %.0f ms, WAL %.1f kB",
                    trunc,
                    truncRows,
                    truncMs,
                    (lsn(c) - lsn0) / 1024.0));
            long dropRows =
                    Long.parseLong(strings(c, "SELECT count(*) FROM " + drop).get(0));
            lsn0 = lsn(c);
            t0 = System.nanoTime();
            try (Statement s = c.createStatement()) {
                s.execute("ALTER TABLE " + HASH + "." + TABLE + " DETACH PARTITION " + drop);
                s.execute("DROP TABLE " + drop);
            }
            double dropMs = (System.nanoTime() - t0) / 1e6;
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT whole partition: DETACH + DROP %s: %d rows, %.0f ms, WAL %.1f kB",
                    drop,
                    dropRows,
                    dropMs,
                    (lsn(c) - lsn0) / 1024.0));
            t0 = System.nanoTime();
            try (Statement s = c.createStatement()) {
                s.execute("VACUUM " + PLAIN + "." + TABLE);
            }
            log.accept(String.format(
                    Locale.ROOT,
                    "RESULT VACUUM of the whole plain table after its %d purged rows: %.0f ms",
                    rows.get("global/plain (purgeExpired)"),
                    (System.nanoTime() - t0) / 1e6));
        }
    }

    @FunctionalInterface
    private interface Batch {
        int run() throws Exception;
    }

    private static void timed(
            String label,
            Connection c,
            Map<String, List<Double>> ms,
            Map<String, Long> rows,
            Map<String, Long> wal,
            Batch batch)
            throws Exception {
        long lsn0 = lsn(c);
        long t0 = System.nanoTime();
        int n = batch.run();
        double took = (System.nanoTime() - t0) / 1e6;
        long w = lsn(c) - lsn0;
        ms.computeIfAbsent(label, k -> new ArrayList<>()).add(took);
        rows.merge(label, (long) n, Long::sum);
        wal.merge(label, w, Long::sum);
    }

    private static long lsn(Connection c) throws SQLException {
        return Long.parseLong(strings(c, "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
                .get(0));
    }

    // ------------------------------------------------------------------ helpers

    private static List<String> strings(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    private static List<String> strings(javax.sql.DataSource pool, String sql) throws SQLException {
        try (Connection c = pool.getConnection()) {
            return strings(c, sql);
        }
    }

    static double median(List<Double> v) {
        return quantile(v, 0.5);
    }

    static double quantile(List<Double> v, double q) {
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        double pos = q * (s.size() - 1);
        int lo = (int) Math.floor(pos);
        int hi = (int) Math.ceil(pos);
        return s.get(lo) + (s.get(hi) - s.get(lo)) * (pos - lo);
    }

    private static String stat(List<Double> v) {
        return String.format(
                Locale.ROOT,
                "%.3f (IQR %.3f-%.3f, min %.3f, max %.3f, n %d)",
                median(v),
                quantile(v, 0.25),
                quantile(v, 0.75),
                v.stream().mapToDouble(Double::doubleValue).min().orElse(0),
                v.stream().mapToDouble(Double::doubleValue).max().orElse(0),
                v.size());
    }
}
