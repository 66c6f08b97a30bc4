package io.github.idemtx.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The claim table partitioned by key day: its layout, its maintenance, and what they refuse. */
@DatabaseTest
class ClaimPartitionsTest {

    private final TestDatabase db = TestDatabase.get();
    private final String schema = db.schema() + "_days";
    private final String plain = db.schema() + "_plain";
    private HikariDataSource ds;

    private static final Instant NOW = Instant.now();
    private static final LocalDate TODAY = NOW.atOffset(ZoneOffset.UTC).toLocalDate();

    @BeforeEach
    void pool() {
        db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        db.execute("DROP SCHEMA IF EXISTS " + plain + " CASCADE");
        ds = db.newServerPool(3);
    }

    @AfterEach
    void drop() {
        ds.close();
        db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        db.execute("DROP SCHEMA IF EXISTS " + plain + " CASCADE");
    }

    private ClaimPartitions partitions(Instant now) {
        return ClaimPartitions.byKeyDay(ds)
                .schema(schema)
                .acceptFor(Duration.ofDays(2))
                .ahead(3)
                .longestTransaction(Duration.ofHours(1))
                .lockTimeout(Duration.ofMillis(500))
                .clock(Clock.fixed(now, ZoneOffset.UTC))
                .build();
    }

    @Test
    void aTablePartitionedBeforeV8TakesItsColumnsStateAndIndexesOnEveryPartition() throws Exception {
        org.flywaydb.core.Flyway.configure(IdempotencySchema.class.getClassLoader())
                .dataSource(ds)
                .locations(IdempotencySchema.LOCATION)
                .schemas(schema)
                .defaultSchema(schema)
                .createSchemas(true)
                .table(IdempotencySchema.HISTORY_TABLE)
                .target("7")
                .load()
                .migrate();
        String table = schema + ".idempotency_claim";
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement()) {
            for (String ddl : TableDdl.read(c, table).partitionByKey(table)) {
                s.execute(ddl);
            }
            s.execute("CREATE TABLE " + schema + ".claims_all PARTITION OF " + table
                    + " FOR VALUES FROM (MINVALUE) TO (MAXVALUE)");
        }

        assertThat(IdempotencySchema.migrate(ds, schema))
                .as("V8 on the partitioned table")
                .isEqualTo(1);

        assertThat(query("SELECT column_name FROM information_schema.columns WHERE table_schema = '" + schema
                        + "' AND table_name = 'claims_all' AND column_name IN ('reference', 'sent_at', 'sends')"))
                .containsExactlyInAnyOrder("reference", "sent_at", "sends");
        assertThat(query("SELECT count(*) FROM pg_index WHERE indrelid = '" + schema + ".claims_all'::regclass"))
                .as("the primary key, V4's two, V8's two")
                .containsExactly("5");
        db.execute("INSERT INTO " + table + " (scope, idem_key, fingerprint, state, created_at, expires_at, effect,"
                + " fence, reference, sent_at, sends) VALUES ('s', 'k', decode(repeat('00', 32), 'hex'), 5, now(),"
                + " 'infinity', 'pay', 1, 'pay:r', now(), 1)");
        assertThatThrownBy(
                        () -> db.execute(
                                "INSERT INTO " + table + " (scope, idem_key, fingerprint, state,"
                                        + " created_at, expires_at) VALUES ('s', 'k6', decode(repeat('00', 32), 'hex'), 6, now(), now())"))
                .hasStackTraceContaining("idempotency_claim_state_known");
    }

    @Test
    void migrateMakesAnEmptyTablePartitionedWithTheSameDefinitionAndTheDaysItAccepts() throws Exception {
        List<LocalDate> created = partitions(NOW).migrate();
        // accepted: keys whose day ended less than 2 days ago, so from (now - 2 days)'s day; 3 days ahead
        LocalDate first = NOW.minus(Duration.ofDays(2)).atOffset(ZoneOffset.UTC).toLocalDate();
        List<LocalDate> expected = new ArrayList<>();
        for (LocalDate d = first; !d.isAfter(TODAY.plusDays(3)); d = d.plusDays(1)) {
            expected.add(d);
        }
        assertThat(created).containsExactlyElementsOf(expected);
        assertThat(partitions(NOW).migrate())
                .as("a second start-up changes nothing")
                .isEmpty();
        assertThat(query("SELECT pg_get_partkeydef('" + schema + ".idempotency_claim'::regclass)"))
                .containsExactly("RANGE (idem_key)");

        IdempotencySchema.migrate(ds, plain);
        assertThat(describe(schema)).isEqualTo(describe(plain));
        // every partition carries the five indexes (V8's two for statement settlement), the trigger and the fill factor
        // (a partition's
        // copy of the trigger is marked internal up to PostgreSQL 14: counted by name)
        assertThat(query("SELECT count(*) || ' ' || min(ni) || '-' || max(ni) || ' ' || min(nt) || '-' || max(nt)"
                        + " || ' ' || min(ro) FROM (SELECT (SELECT count(*) FROM pg_index i WHERE i.indrelid = p.oid) ni,"
                        + " (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = p.oid"
                        + " AND t.tgname = 'idempotency_claim_expiry_from_commit') nt,"
                        + " array_to_string(p.reloptions, ',') ro FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhrelid"
                        + " WHERE h.inhparent = '" + schema + ".idempotency_claim'::regclass) x"))
                .containsExactly(expected.size() + " 5-5 1-1 fillfactor=90");

        // a key lands in its day's partition, the primary key holds across the parent
        String key = ClaimPartitions.key(NOW, "a").value();
        insert(key, "now() + interval '1 day'", 1);
        assertThat(query("SELECT tableoid::regclass::text FROM " + schema + ".idempotency_claim"))
                .containsExactly(schema + ".idempotency_claim_" + ClaimPartitions.prefix(NOW));
        assertThatThrownBy(() -> insert(key, "now()", 1))
                .hasStackTraceContaining("\"idempotency_claim_pk_" + ClaimPartitions.prefix(NOW) + "\"");
    }

    @Test
    void aTableHoldingRowsIsNotConvertedAndNothingChanges() throws Exception {
        IdempotencySchema.migrate(ds, schema);
        insert("k", "now()", 1);
        assertThatThrownBy(() -> partitions(NOW).migrate())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("holds 1 rows")
                .hasMessageContaining("only an empty one is partitioned");
        assertThat(query("SELECT relkind::text FROM pg_class WHERE oid = '" + schema + ".idempotency_claim'::regclass"))
                .containsExactly("r");
        assertThat(query("SELECT idem_key FROM " + schema + ".idempotency_claim"))
                .containsExactly("k");
        assertThatThrownBy(() -> partitions(NOW).createAhead())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is not partitioned by key day");
    }

    @Test
    void keysOutsideTheAcceptedDaysAreRefusedWithTheirReason() {
        ClaimPartitions p = partitions(Instant.parse("2026-12-03T10:00:00Z"));
        p.requireAccepted(IdempotencyKey.of("20261203-a"));
        p.requireAccepted(IdempotencyKey.of("20261201-a")); // ended 1 day 10 h ago: within 2 days
        p.requireAccepted(IdempotencyKey.of("20261204-a")); // a client's clock ahead over midnight
        assertThatThrownBy(() -> p.requireAccepted(IdempotencyKey.of("20261130-a")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("belongs to 2026-11-30")
                .hasMessageContaining("2026-12-01 to 2026-12-04")
                .hasMessageContaining("retried for at most PT48H");
        assertThatThrownBy(() -> p.requireAccepted(IdempotencyKey.of("20261205-a")))
                .hasMessageContaining("not one in the future");
        for (String bad : List.of("2026120", "20261332-a", "order-42", "20260230x")) {
            assertThatThrownBy(() -> p.requireAccepted(IdempotencyKey.of(bad)))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("does not begin with the day of its intent");
        }
        assertThat(ClaimPartitions.key(Instant.parse("2026-12-03T23:59:59Z"), "x")
                        .value())
                .isEqualTo("20261203-x");
        assertThatThrownBy(() -> ClaimPartitions.key(NOW, "")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void dropBehindDropsOnlyDaysPastTheWindowWhoseRowsCannotAnswer() throws Exception {
        partitions(NOW).migrate();
        Instant dayA = NOW.minus(Duration.ofDays(2)); // the oldest day created
        Instant dayB = dayA.plus(Duration.ofDays(1));
        Instant dayC = dayB.plus(Duration.ofDays(1)); // today
        insert(ClaimPartitions.key(dayA, "done").value(), "now() - interval '1 minute'", 1);
        insert(ClaimPartitions.key(dayB, "effect").value(), "'infinity'", 4);
        insert(ClaimPartitions.key(dayC, "live").value(), "now() + interval '1 hour'", 1);

        // not yet: today's window is open
        ClaimPartitions.Retention none = partitions(NOW).dropBehind(Duration.ofHours(24));
        assertThat(none.dropped()).isEmpty();

        // 30 days on: every day is past acceptFor + longestTransaction + ttl
        Instant later = NOW.plus(Duration.ofDays(30));
        ClaimPartitions.Retention r = partitions(later).dropBehind(Duration.ofHours(24));
        LocalDate a = day(dayA);
        LocalDate b = day(dayB);
        LocalDate c = day(dayC);
        assertThat(r.dropped()).contains(a).doesNotContain(b, c);
        assertThat(r.kept()).containsOnlyKeys(b, c);
        assertThat(r.kept().get(b)).contains("1 row not expired yet (1 external effects", "1 of them needing");
        assertThat(query("SELECT count(*) FROM pg_class WHERE relname = 'idempotency_claim_"
                        + a.toString().replace("-", "") + "' AND relnamespace = '" + schema + "'::regnamespace"))
                .containsExactly("0");
        assertThat(query("SELECT idem_key FROM " + schema + ".idempotency_claim ORDER BY 1"))
                .containsExactly(
                        ClaimPartitions.key(dayB, "effect").value(),
                        ClaimPartitions.key(dayC, "live").value());
        // a key of a dropped day, were it to come (a client ignoring the window), has nowhere to go
        assertThatThrownBy(() -> insert(ClaimPartitions.key(dayA, "late").value(), "now()", 1))
                .hasStackTraceContaining("no partition of relation");
    }

    @Test
    void aDetachLeftHalfDoneIsFinishedAndTheDayDropped() throws Exception {
        partitions(NOW).migrate();
        LocalDate oldest =
                NOW.minus(Duration.ofDays(2)).atOffset(ZoneOffset.UTC).toLocalDate();
        String partition = schema + ".idempotency_claim_" + oldest.toString().replace("-", "");
        // a reader keeps the table in use; the detach's second step waits for it and is cut short
        try (Connection reader = db.connect();
                Connection detacher = db.connect()) {
            reader.setAutoCommit(false);
            try (Statement s = reader.createStatement()) {
                s.execute("SELECT count(*) FROM " + schema + ".idempotency_claim");
            }
            try (Statement s = detacher.createStatement()) {
                s.execute("SET lock_timeout = '300ms'");
                assertThatThrownBy(() -> s.execute("ALTER TABLE " + schema + ".idempotency_claim DETACH PARTITION "
                                + partition + " CONCURRENTLY"))
                        .hasMessageContaining("lock timeout");
            }
            reader.rollback();
        }
        assertThat(query("SELECT count(*) FROM pg_inherits WHERE inhrelid = '" + partition
                        + "'::regclass AND inhdetachpending"))
                .containsExactly("1");
        ClaimPartitions.Retention r = partitions(NOW).dropBehind(Duration.ofHours(24));
        assertThat(r.dropped()).containsExactly(oldest);
        assertThat(query("SELECT count(*) FROM pg_class WHERE oid = to_regclass('" + partition + "')"))
                .containsExactly("0");
    }

    @Test
    void createAheadAddsTheDaysToComeAndWaitsForNoClaim() throws Exception {
        partitions(NOW).migrate();
        List<LocalDate> more = partitions(NOW.plus(Duration.ofDays(2))).createAhead();
        assertThat(more).containsExactly(TODAY.plusDays(4), TODAY.plusDays(5));
        // a claim transaction open on the table does not keep a new day from being attached
        try (Connection claimer = db.connect()) {
            claimer.setAutoCommit(false);
            try (Statement s = claimer.createStatement()) {
                s.execute(
                        "INSERT INTO " + schema + ".idempotency_claim (scope, idem_key, fingerprint, state, created_at,"
                                + " expires_at) VALUES ('s', '"
                                + ClaimPartitions.key(NOW, "open").value()
                                + "', decode(repeat('00', 32), 'hex'), 1, now(), now() + interval '1 day')");
            }
            assertThat(partitions(NOW.plus(Duration.ofDays(3))).createAhead()).containsExactly(TODAY.plusDays(6));
            claimer.rollback();
        }
    }

    @Test
    void instancesRunningTheJobsAtOnceNeverRaceOverADay() throws Exception {
        partitions(NOW).migrate();
        Instant later = NOW.plus(Duration.ofDays(10));
        java.util.concurrent.ExecutorService two = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
            List<java.util.concurrent.Future<List<LocalDate>>> made = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                made.add(two.submit(() -> {
                    go.await();
                    return partitions(later).createAhead();
                }));
            }
            go.countDown();
            List<LocalDate> all = new ArrayList<>(made.get(0).get());
            all.addAll(made.get(1).get());
            // each missing day made once, by one of the two (the other found it at work and
            // returned); neither failed
            // the days accepted then through 3 ahead: none of them existed
            long days = java.time.temporal.ChronoUnit.DAYS.between(
                            day(later.minus(Duration.ofDays(2))), day(later).plusDays(3))
                    + 1;
            assertThat(all).doesNotHaveDuplicates().hasSize((int) days);
            List<java.util.concurrent.Future<ClaimPartitions.Retention>> dropped = new ArrayList<>();
            java.util.concurrent.CountDownLatch again = new java.util.concurrent.CountDownLatch(1);
            for (int i = 0; i < 2; i++) {
                dropped.add(two.submit(() -> {
                    again.await();
                    return partitions(later.plus(Duration.ofDays(3))).dropBehind(Duration.ofHours(24));
                }));
            }
            again.countDown();
            List<LocalDate> gone = new ArrayList<>(dropped.get(0).get().dropped());
            gone.addAll(dropped.get(1).get().dropped());
            assertThat(gone).doesNotHaveDuplicates().isNotEmpty();
        } finally {
            two.shutdownNow();
        }
    }

    @Test
    void badSettingsAreRefusedByName() {
        assertThatThrownBy(() -> ClaimPartitions.byKeyDay(ds).acceptFor(Duration.ofDays(-1)))
                .hasMessageContaining("acceptFor");
        assertThatThrownBy(() -> ClaimPartitions.byKeyDay(ds).ahead(0)).hasMessageContaining("ahead");
        assertThatThrownBy(() -> ClaimPartitions.byKeyDay(ds).schema("a b")).hasMessageContaining("schema");
        assertThatThrownBy(() -> partitions(NOW).dropBehind(Duration.ofSeconds(-1)))
                .hasMessageContaining("ttl");
    }

    private static LocalDate day(Instant i) {
        return i.atOffset(ZoneOffset.UTC).toLocalDate();
    }

    private void insert(String key, String expiresAt, int state) {
        db.execute("INSERT INTO " + schema + ".idempotency_claim (scope, idem_key, fingerprint, state, created_at,"
                + " expires_at" + (state >= 3 ? ", effect, fence, lookups" : "") + ") VALUES ('s', '" + key
                + "', decode(repeat('00', 32), 'hex'), " + state + ", now(), " + expiresAt
                + (state >= 3 ? ", 'charge', 1, 0" : "") + ")");
    }

    private Map<String, List<String>> describe(String s) throws Exception {
        String rel = "'" + s + ".idempotency_claim'::regclass";
        return Map.of(
                "columns",
                query(
                        "SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || coalesce(co.collname, '-')"
                                + " || ' ' || a.attnotnull FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = a.attcollation"
                                + " WHERE a.attrelid = " + rel
                                + " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"),
                "constraints",
                query(
                        "SELECT conname || ' ' || replace(pg_get_constraintdef(oid), ' NOT VALID', '') || ' ' || condeferrable"
                                + " FROM pg_constraint WHERE conrelid = " + rel + " ORDER BY conname"),
                "indexes",
                query("SELECT replace(replace(pg_get_indexdef(indexrelid), ' ON ONLY ', ' ON '), '" + s + ".', '')"
                        + " FROM pg_index WHERE indrelid = " + rel + " ORDER BY 1"),
                "triggers",
                query("SELECT replace(pg_get_triggerdef(oid), '" + s + ".', '') FROM pg_trigger WHERE tgrelid = " + rel
                        + " AND NOT tgisinternal ORDER BY tgname"));
    }

    private List<String> query(String sql) throws Exception {
        List<String> out = new ArrayList<>();
        try (Connection c = db.connect();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }
}
