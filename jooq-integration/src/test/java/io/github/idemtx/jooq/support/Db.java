package io.github.idemtx.jooq.support;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.internal.store.StatementKind;
import java.time.Instant;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/** The shared database of this module's tests: one pool, the claim table, and a table of effects. */
public final class Db {

    public static final TestDatabase DATABASE = TestDatabase.get();
    public static final String SCHEMA = DATABASE.schema();
    /**
     * The shared pool: 24 at most (the widest test, ConcurrencyTest, runs 16 clients), so that two
     * forks of this suite and a second build fit a server's default max_connections of 100.
     */
    public static final HikariDataSource POOL = DATABASE.newPool(24);

    public static final DSLContext DSL_CONTEXT = DSL.using(POOL, SQLDialect.POSTGRES);

    /**
     * Whether this run's claim table is partitioned by key day ({@link ClaimPartitions};
     * {@code idemtx.test.layout=partitioned}, jooq-integration/pom.xml runs the suite on both layouts).
     * Then {@link #freshKey} carries today's day and the builders here are given {@link #PARTITIONS}.
     */
    public static final boolean PARTITIONED = "partitioned".equals(System.getProperty("idemtx.test.layout", ""));

    /** The partitions of a partitioned run, else null. */
    public static final @Nullable ClaimPartitions PARTITIONS =
            PARTITIONED ? ClaimPartitions.byKeyDay(POOL).schema(SCHEMA).build() : null;

    static {
        // migrations go straight to the server, as docs/poolers.md advises: behind a transaction-mode
        // pooler Flyway's session-level search path can stay on a shared server connection
        try (HikariDataSource direct = DATABASE.newServerPool(2)) {
            if (PARTITIONED) {
                ClaimPartitions.byKeyDay(direct).schema(SCHEMA).build().migrate();
            } else {
                IdempotencySchema.migrate(direct, SCHEMA);
            }
        }
        DSL_CONTEXT.execute("CREATE TABLE IF NOT EXISTS " + SCHEMA + ".effect ("
                + " id bigserial PRIMARY KEY, scope text NOT NULL, idem_key text NOT NULL, note text)");
    }

    /**
     * The {@link ClaimMode} this run's instances use: the library's default ({@link ClaimMode#CLAIM_FIRST}),
     * or the one the surefire execution names in {@code idemtx.test.claimMode} (jooq-integration/pom.xml
     * runs the suites in the default and in {@link ClaimMode#ADAPTIVE}).
     */
    public static final ClaimMode CLAIM_MODE = claimMode();

    /**
     * The deprecated alias of {@link ClaimMode#CLAIM_FIRST} (the same order, mapped by the builder),
     * for {@code @EnumSource(..., names = Db.ALIAS, mode = EXCLUDE)}: a test of every order runs each
     * once. DefaultClaimModeTest pins the mapping.
     */
    public static final String ALIAS = "READ_FIRST";

    /** Every claim order once: {@link ClaimMode#values()} without the deprecated alias. */
    public static ClaimMode[] modes() {
        return java.util.Arrays.stream(ClaimMode.values())
                .filter(m -> !m.name().equals(ALIAS))
                .toArray(ClaimMode[]::new);
    }

    private Db() {}

    private static ClaimMode claimMode() {
        String named = System.getProperty("idemtx.test.claimMode", "");
        return named.isBlank() ? IdempotentTransaction.DEFAULT_CLAIM_MODE : ClaimMode.valueOf(named.trim());
    }

    /** {@link IdempotentTransaction#builder} in this run's claim mode. */
    public static <T> IdempotentTransaction.Builder<T> builder(
            DSLContext dsl, io.github.idemtx.core.ResultCodec<T> codec) {
        return layout(IdempotentTransaction.builder(dsl, codec).claimMode(CLAIM_MODE));
    }

    /**
     * {@link #builder} with the order pinned: the run's fixed mode, or {@link ClaimMode#WORK_FIRST}
     * in an {@link ClaimMode#ADAPTIVE} run (the order it starts in and keeps while retries are rare).
     * For the fault tests that count what each order sends or runs per call over many calls on one
     * instance, half of them retries: an adaptive instance would switch order partway through. The
     * switching itself, under concurrency and retries, is AdaptiveClaimModeTest's and the ledger
     * storm's.
     */
    public static <T> IdempotentTransaction.Builder<T> pinnedBuilder(
            DSLContext dsl, io.github.idemtx.core.ResultCodec<T> codec) {
        return layout(IdempotentTransaction.builder(dsl, codec)
                .claimMode(CLAIM_MODE == ClaimMode.ADAPTIVE ? ClaimMode.WORK_FIRST : CLAIM_MODE));
    }

    /**
     * A builder in {@link ClaimMode#CLAIM_FIRST} whatever the run's mode: for the tests of that
     * mode's own mechanism (a duplicate waiting on the holder's advisory lock), which
     * {@link ClaimMode#WORK_FIRST} does not have; WorkFirstTest covers that mode's waits.
     */
    public static <T> IdempotentTransaction.Builder<T> claimFirst(
            DSLContext dsl, io.github.idemtx.core.ResultCodec<T> codec) {
        return layout(IdempotentTransaction.builder(dsl, codec).claimMode(ClaimMode.CLAIM_FIRST));
    }

    /** {@link IdempotentTransaction#create} in this run's claim mode. */
    public static <T> IdempotentTransaction<T> create(
            DSLContext dsl,
            io.github.idemtx.core.IdempotencyPolicy policy,
            io.github.idemtx.core.ResultCodec<T> codec) {
        return builder(dsl, codec).policy(policy).build();
    }

    /**
     * Whether this run's owned calls work first: in {@link ClaimMode#WORK_FIRST}, and in
     * {@link ClaimMode#ADAPTIVE}, which works first until a share of calls meeting taken keys far
     * beyond what a test makes on one instance (AdaptiveClaimModeTest drives it over).
     */
    public static boolean workFirst() {
        return CLAIM_MODE != ClaimMode.CLAIM_FIRST;
    }

    public static DSLContext dsl() {
        return DSL_CONTEXT;
    }

    /** A scope no other test uses. */
    public static Scope freshScope() {
        return Scope.of("tenant-" + UUID.randomUUID());
    }

    public static IdempotencyKey freshKey() {
        return PARTITIONED
                ? ClaimPartitions.key(Instant.now(), UUID.randomUUID().toString())
                : IdempotencyKey.random();
    }

    /** A key of {@code text}, preceded by today's day in a partitioned run (where keys must carry it). */
    public static IdempotencyKey key(String text) {
        return IdempotencyKey.of(keyText(text));
    }

    /** {@code text} as a key's text in this run's layout: preceded by today's day in a partitioned run. */
    public static String keyText(String text) {
        return PARTITIONED ? ClaimPartitions.prefix(Instant.now()) + text : text;
    }

    /**
     * Migrates {@code schema} in this run's layout, for a test with a server or schema of its own;
     * returns the partitions in a partitioned run, else null (for {@link #builderIn}).
     */
    public static @Nullable ClaimPartitions migrate(javax.sql.DataSource dataSource, String schema) {
        if (!PARTITIONED) {
            IdempotencySchema.migrate(dataSource, schema);
            return null;
        }
        ClaimPartitions partitions =
                ClaimPartitions.byKeyDay(dataSource).schema(schema).build();
        partitions.migrate();
        return partitions;
    }

    /** {@link #builder} for a claim table {@link #migrate}d into {@code schema}. */
    public static <T> IdempotentTransaction.Builder<T> builderIn(
            DSLContext dsl,
            io.github.idemtx.core.ResultCodec<T> codec,
            String schema,
            @Nullable ClaimPartitions partitions) {
        IdempotentTransaction.Builder<T> b =
                IdempotentTransaction.builder(dsl, codec).claimMode(CLAIM_MODE).schema(schema);
        return partitions == null ? b : b.partitions(partitions);
    }

    /** {@code builder} given this run's {@link #PARTITIONS}, if any. */
    public static <T> IdempotentTransaction.Builder<T> layout(IdempotentTransaction.Builder<T> builder) {
        ClaimPartitions p = PARTITIONS;
        return p == null ? builder : builder.partitions(p);
    }

    public static Fingerprint fingerprint(String request) {
        return Fingerprint.sha256(request);
    }

    /** The work's business write: one row in the effect table. */
    public static long writeEffect(DSLContext tx, Scope scope, IdempotencyKey key, String note) {
        return tx.resultQuery(
                        "INSERT INTO " + SCHEMA + ".effect (scope, idem_key, note) VALUES (?, ?, ?) RETURNING id",
                        scope.value(),
                        key.value(),
                        note)
                .fetchSingle()
                .get(0, Long.class);
    }

    public static int effects(Scope scope, IdempotencyKey key) {
        return count(
                "SELECT count(*)::int FROM " + SCHEMA + ".effect WHERE scope = ? AND idem_key = ?",
                scope.value(),
                key.value());
    }

    /** The effect rows of the key that carry {@code note}. */
    public static int effects(Scope scope, IdempotencyKey key, String note) {
        return count(
                "SELECT count(*)::int FROM " + SCHEMA + ".effect WHERE scope = ? AND idem_key = ? AND note = ?",
                scope.value(),
                key.value(),
                note);
    }

    public static int effects(Scope scope) {
        return count("SELECT count(*)::int FROM " + SCHEMA + ".effect WHERE scope = ?", scope.value());
    }

    public static int claims(Scope scope, IdempotencyKey key) {
        return count(
                "SELECT count(*)::int FROM " + SCHEMA + ".idempotency_claim WHERE scope = ? AND idem_key = ?",
                scope.value(),
                key.value());
    }

    /** The rows of {@code table} (in the test schema) for ({@code scope}, {@code key}). */
    public static int rows(String table, Scope scope, IdempotencyKey key) {
        return count(
                "SELECT count(*)::int FROM " + SCHEMA + "." + table + " WHERE scope = ? AND idem_key = ?",
                scope.value(),
                key.value());
    }

    public static int claims(Scope scope) {
        return count("SELECT count(*)::int FROM " + SCHEMA + ".idempotency_claim WHERE scope = ?", scope.value());
    }

    /** Waits until {@code n} sessions are blocked inside the claim function, waiting on a lock. */
    public static void awaitWaitersOnClaim(int n) throws InterruptedException {
        DATABASE.awaitLockWaiters(Faults.running(StatementKind.AWAIT), n);
    }

    public static String lockTimeout(DSLContext ctx) {
        return ctx.resultQuery("select current_setting('lock_timeout')")
                .fetchSingle()
                .get(0, String.class);
    }

    private static int count(String sql, Object... bindings) {
        return DSL_CONTEXT.resultQuery(sql, bindings).fetchSingle().get(0, Integer.class);
    }

    /** Moves a claim's expiry into the past. */
    public static void expire(Scope scope, IdempotencyKey key) {
        DSL_CONTEXT.execute(
                "UPDATE " + SCHEMA + ".idempotency_claim SET expires_at = clock_timestamp() - interval '1 second'"
                        + " WHERE scope = ? AND idem_key = ?",
                scope.value(),
                key.value());
    }
}
