package io.github.idemtx.jooq.tx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionDetector;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.jooq.support.Db;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.jooq.ConnectionProvider;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jooq.impl.DataSourceConnectionProvider;
import org.jooq.impl.DefaultConfiguration;
import org.jooq.impl.ThreadLocalTransactionProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The ownership invariant across the set-ups users run: a call that owns its transaction and
 * returns {@code Executed}, {@code Replayed} or {@code Rejected} has committed (another connection
 * sees it at once); a joined call's claim and effect commit or vanish with the caller's
 * transaction, which stays usable after every outcome and exception. Runs directly and through
 * PgBouncer; the set-ups that change session state (init SQL that SETs, {@code schema},
 * {@code transactionIsolation}) only directly, where they belong.
 */
@DatabaseTest
class TransactionOwnershipTest {

    /** A way to get connections, as users configure it. */
    record Pool(String name, boolean sessionState, boolean idleBeforeBorrow, Function<Boolean, DataSource> open) {
        @Override
        public String toString() {
            return name;
        }

        DataSource open(boolean autoCommit) {
            return open.apply(autoCommit);
        }
    }

    private static final String INIT_MARK = "idemtx-init";

    static Stream<Pool> pools() {
        return Stream.of(
                hikari("hikari", false, false, c -> {}),
                // HikariCP runs the test query on a borrow after the connection sat idle > 500 ms
                hikari("hikari+connectionTestQuery", false, true, c -> c.setConnectionTestQuery("SELECT 1")),
                hikari("hikari+connectionInitSql(SELECT)", false, false, c -> c.setConnectionInitSql("SELECT 1")),
                hikari(
                        "hikari+connectionInitSql(SET)",
                        true,
                        false,
                        c -> c.setConnectionInitSql("SET application_name = '" + INIT_MARK + "'")),
                hikari("hikari+schema", true, false, c -> c.setSchema(Db.SCHEMA)),
                hikari(
                        "hikari+transactionIsolation(REPEATABLE_READ)",
                        true,
                        false,
                        c -> c.setTransactionIsolation("TRANSACTION_REPEATABLE_READ")),
                hikari(
                        "hikari+transactionIsolation(SERIALIZABLE)",
                        true,
                        false,
                        c -> c.setTransactionIsolation("TRANSACTION_SERIALIZABLE")),
                new Pool("plain DataSource, no pool", false, false, autoCommit -> plainDataSource()));
    }

    private static Pool hikari(
            String name, boolean sessionState, boolean idle, Consumer<com.zaxxer.hikari.HikariConfig> customizer) {
        return new Pool(
                name,
                sessionState,
                idle,
                autoCommit -> Db.DATABASE.newPool(1, c -> {
                    c.setAutoCommit(autoCommit);
                    customizer.accept(c);
                }));
    }

    private static DataSource plainDataSource() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(Db.DATABASE.url());
        if (Db.DATABASE.user() != null) {
            ds.setUser(Db.DATABASE.user());
        }
        if (Db.DATABASE.password() != null) {
            ds.setPassword(Db.DATABASE.password());
        }
        if (!Db.DATABASE.throughPgBouncer()) {
            ds.setCurrentSchema(Db.SCHEMA);
        }
        return ds;
    }

    static Stream<Object[]> ownSetUps() {
        return pools().flatMap(p -> Stream.of(new Object[] {p, true}, new Object[] {p, false}))
                .filter(a -> !(((Pool) a[0]).name().startsWith("plain") && !(Boolean) a[1]));
    }

    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("ownership");

    private static IdempotentTransaction<String> idem(DSLContext dsl) {
        return Db.builder(dsl, ResultCodec.utf8()).schema(Db.SCHEMA).build();
    }

    private static void close(DataSource ds) {
        if (ds instanceof HikariDataSource h) {
            h.close();
        }
    }

    /** A fresh pool for one step, so that its first borrow meets whatever the pool's set-up left open. */
    private static <R> R withPool(Pool pool, boolean autoCommit, Function<DSLContext, R> body) {
        assumeFalse(
                pool.sessionState() && Db.DATABASE.throughPgBouncer(),
                "session settings do not belong behind a transaction-mode pooler");
        DataSource ds = pool.open(autoCommit);
        try {
            DSLContext dsl = DSL.using(ds, SQLDialect.POSTGRES);
            if (pool.idleBeforeBorrow()) {
                dsl.execute("SELECT 1"); // the connection exists and goes idle
                sleep(700);
            }
            return body.apply(dsl);
        } finally {
            close(ds);
        }
    }

    // ------------------------------------------------------------------ own transaction

    @ParameterizedTest(name = "{0}, autoCommit={1}")
    @MethodSource("ownSetUps")
    void anOwnExecutedIsCommittedWhenRunReturnsAndReplays(Pool pool, boolean autoCommit) {
        IdempotencyKey key = Db.freshKey();
        Outcome<String> first = withPool(
                pool,
                autoCommit,
                dsl -> idem(dsl).run(scope, key, fingerprint, tx -> "paid-" + Db.writeEffect(tx, scope, key, "own")));
        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(Db.claims(scope, key)).as("claim seen by another connection").isEqualTo(1);
        assertThat(Db.effects(scope, key))
                .as("effect seen by another connection")
                .isEqualTo(1);

        Outcome<String> again =
                withPool(pool, autoCommit, dsl -> idem(dsl).run(scope, key, fingerprint, tx -> "twice"));
        assertThat(again)
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<String>) first).value()));
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @ParameterizedTest(name = "{0}, autoCommit={1}")
    @MethodSource("ownSetUps")
    void anOwnRejectedIsCommittedWhenRunReturns(Pool pool, boolean autoCommit) {
        IdempotencyKey key = Db.freshKey();
        Outcome<String> first = withPool(
                pool,
                autoCommit,
                dsl -> idem(dsl).run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "undone");
                    throw new Rejection("insufficient_funds", "no money");
                }));
        assertThat(first)
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isFalse());
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(idem(Db.dsl()).run(scope, key, fingerprint, tx -> "x"))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isTrue());
    }

    @ParameterizedTest(name = "{0}, autoCommit={1}")
    @MethodSource("ownSetUps")
    void aFailedOwnCallLeavesNothingAndThePoolsSetUpIntact(Pool pool, boolean autoCommit) {
        IdempotencyKey key = Db.freshKey();
        // what the pool's set-up leaves on a connection, read where it cannot be rolled back
        String expected = withPool(pool, true, TransactionOwnershipTest::sessionSetUp);
        withPool(pool, autoCommit, dsl -> {
            assertThatThrownBy(() -> idem(dsl).run(scope, key, fingerprint, tx -> {
                        Db.writeEffect(tx, scope, key, "undone");
                        throw new IllegalStateException("the work broke");
                    }))
                    .hasMessage("the work broke");
            assertThat(sessionSetUp(dsl))
                    .as("what the pool set on its connection survives the rollback")
                    .isEqualTo(expected);
            assertThat(Db.claims(scope, key)).isZero();
            assertThat(Db.effects(scope, key)).isZero();
            assertThat(idem(dsl)
                            .run(scope, key, fingerprint, tx -> "second-" + Db.writeEffect(tx, scope, key, "again")))
                    .isInstanceOf(Outcome.Executed.class);
            return null;
        });
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @ParameterizedTest(name = "{0}, autoCommit={1}")
    @MethodSource("ownSetUps")
    void purgeCommitsWhatItCountsAndItsLoopEnds(Pool pool, boolean autoCommit) {
        for (int i = 0; i < 5; i++) {
            IdempotencyKey key = Db.freshKey();
            idem(Db.dsl()).run(scope, key, fingerprint, tx -> "old");
            Db.expire(scope, key);
        }
        int calls = withPool(pool, autoCommit, dsl -> {
            IdempotentTransaction<String> idem = idem(dsl);
            int n = 0;
            while (n < 50) {
                n++;
                if (idem.purgeExpired(2) < 2) {
                    break;
                }
            }
            return n;
        });
        assertThat(calls).as("the loop docs/operations.md describes ends").isLessThan(50);
        assertThat(Db.claims(scope)).as("the deletions were committed").isZero();
    }

    /** What the pool's own statements set on the session (a rollback of them would undo it). */
    private static String sessionSetUp(DSLContext dsl) {
        return dsl.resultQuery("select current_setting('application_name') || '|' || current_schema()"
                        + " || '|' || current_setting('transaction_isolation')")
                .fetchSingle()
                .get(0, String.class);
    }

    @Test
    void anOwnCallOnACallerManagedConnectionInAutoCommitModeCommits() throws SQLException {
        IdempotencyKey key = Db.freshKey();
        try (Connection c = Db.POOL.getConnection()) {
            assertThat(c.getAutoCommit()).isTrue();
            assertThat(idem(DSL.using(c, SQLDialect.POSTGRES))
                            .run(scope, key, fingerprint, tx -> "c-" + Db.writeEffect(tx, scope, key, "own")))
                    .isInstanceOf(Outcome.Executed.class);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
            assertThat(c.getAutoCommit()).as("auto-commit put back").isTrue();
        }
    }

    @Test
    void aThreadLocalTransactionProviderOutsideATransactionCommitsOnItsOwn() {
        IdempotencyKey key = Db.freshKey();
        DSLContext dsl = threadLocal(Db.POOL);
        assertThat(idem(dsl).run(scope, key, fingerprint, tx -> "tl-" + Db.writeEffect(tx, scope, key, "own")))
                .isInstanceOf(Outcome.Executed.class);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(
            value = ClaimMode.class,
            names = Db.ALIAS,
            mode = org.junit.jupiter.params.provider.EnumSource.Mode.EXCLUDE)
    void withAThreadLocalTransactionProviderTheWorkRunsInTheCallsOwnTransaction(ClaimMode mode) throws Exception {
        // jOOQ's derive() puts the thread-local connection provider back in: the work's tx must not
        // follow it to other pooled connections (each statement committed on its own, or never)
        try (com.zaxxer.hikari.HikariDataSource manual = Db.DATABASE.newPool(4, c -> c.setAutoCommit(false))) {
            for (DataSource ds : List.<DataSource>of(Db.POOL, manual)) {
                IdempotentTransaction<String> idem = IdempotentTransaction.builder(threadLocal(ds), ResultCodec.utf8())
                        .schema(Db.SCHEMA)
                        .claimMode(mode)
                        .build();
                IdempotencyKey key = Db.freshKey();
                assertThat(idem.run(scope, key, fingerprint, tx -> "tl-" + Db.writeEffect(tx, scope, key, "own")))
                        .isInstanceOf(Outcome.Executed.class);
                assertThat(Db.effects(scope, key))
                        .as("Executed: the work's write committed with the claim")
                        .isEqualTo(1);

                IdempotencyKey refused = Db.freshKey();
                assertThat(idem.run(scope, refused, fingerprint, tx -> {
                            Db.writeEffect(tx, scope, refused, "undone");
                            throw new io.github.idemtx.core.Rejection("no", "refused");
                        }))
                        .isInstanceOf(Outcome.Rejected.class);
                assertThat(Db.effects(scope, refused))
                        .as("Rejected: the work's write rolled back")
                        .isZero();
            }
        }
    }

    // ------------------------------------------------------------------ joined

    /** A caller's transaction style: runs {@code body} with the DSLContext to build on, commits, or rolls back on a throw. */
    interface Caller {
        <R> R inTransaction(Function<DSLContext, R> body);
    }

    record Style(String name, Caller caller) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Style> joinedStyles() {
        return Stream.of(
                new Style("jOOQ transaction(cfg -> cfg.dsl())", new Caller() {
                    @Override
                    public <R> R inTransaction(Function<DSLContext, R> body) {
                        return Db.dsl().transactionResult(cfg -> body.apply(cfg.dsl()));
                    }
                }),
                new Style("jOOQ nested transaction (savepoint)", new Caller() {
                    @Override
                    public <R> R inTransaction(Function<DSLContext, R> body) {
                        return Db.dsl()
                                .transactionResult(
                                        outer -> outer.dsl().transactionResult(inner -> body.apply(inner.dsl())));
                    }
                }),
                new Style("jOOQ transaction on a pool with autoCommit=false and a test query", new Caller() {
                    @Override
                    public <R> R inTransaction(Function<DSLContext, R> body) {
                        try (HikariDataSource ds = Db.DATABASE.newPool(1, c -> {
                            c.setAutoCommit(false);
                            c.setConnectionTestQuery("SELECT 1");
                        })) {
                            DSLContext dsl = DSL.using(ds, SQLDialect.POSTGRES);
                            dsl.execute("SELECT 1");
                            sleep(700);
                            return dsl.transactionResult(cfg -> body.apply(cfg.dsl()));
                        }
                    }
                }),
                new Style("ThreadLocalTransactionProvider, run first", new Caller() {
                    @Override
                    public <R> R inTransaction(Function<DSLContext, R> body) {
                        DSLContext dsl = threadLocal(Db.POOL);
                        return dsl.transactionResult(() -> body.apply(dsl));
                    }
                }),
                new Style("ThreadLocalTransactionProvider, run after a statement", new Caller() {
                    @Override
                    public <R> R inTransaction(Function<DSLContext, R> body) {
                        DSLContext dsl = threadLocal(Db.POOL);
                        return dsl.transactionResult(() -> {
                            dsl.execute("SELECT 1");
                            return body.apply(dsl);
                        });
                    }
                }),
                new Style("DSL.using(connection), auto-commit off, caller commits", new Caller() {
                    @Override
                    public <R> R inTransaction(Function<DSLContext, R> body) {
                        try (Connection c = Db.POOL.getConnection()) {
                            c.setAutoCommit(false);
                            try {
                                R r = body.apply(DSL.using(c, SQLDialect.POSTGRES));
                                c.commit();
                                return r;
                            } catch (RuntimeException e) {
                                c.rollback();
                                throw e;
                            } finally {
                                c.setAutoCommit(true);
                            }
                        } catch (SQLException e) {
                            throw new IllegalStateException(e);
                        }
                    }
                }));
    }

    static DSLContext threadLocal(DataSource ds) {
        return DSL.using(new DefaultConfiguration()
                .set(SQLDialect.POSTGRES)
                .set(new ThreadLocalTransactionProvider(new DataSourceConnectionProvider(ds))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("joinedStyles")
    void aJoinedClaimAndEffectVanishWhenTheCallerRollsBack(Style style) {
        IdempotencyKey key = Db.freshKey();
        assertThatThrownBy(() -> style.caller().inTransaction(dsl -> {
                    assertThat(idem(dsl)
                                    .run(
                                            scope,
                                            key,
                                            fingerprint,
                                            tx -> "j-" + Db.writeEffect(tx, scope, key, "inside")))
                            .isInstanceOf(Outcome.Executed.class);
                    assertThat(Db.claims(scope, key))
                            .as("nothing visible before the caller commits")
                            .isZero();
                    Db.writeEffect(dsl, scope, key, "the caller's own write");
                    throw new IllegalStateException("the caller fails later");
                }))
                .hasMessage("the caller fails later");

        assertThat(Db.claims(scope, key)).isZero();
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(idem(Db.dsl()).run(scope, key, fingerprint, tx -> "ran again"))
                .as("the key is free")
                .isInstanceOf(Outcome.Executed.class);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("joinedStyles")
    void aJoinedClaimCommitsWithTheCallerAndTheCallersTransactionSurvivesEveryOutcome(Style style) {
        IdempotencyKey executed = Db.freshKey();
        IdempotencyKey rejected = Db.freshKey();
        IdempotencyKey failed = Db.freshKey();
        List<Outcome<String>> outcomes = style.caller().inTransaction(dsl -> {
            IdempotentTransaction<String> idem = idem(dsl);
            Outcome<String> first =
                    idem.run(scope, executed, fingerprint, tx -> "j-" + Db.writeEffect(tx, scope, executed, "inside"));
            Outcome<String> replay = idem.run(scope, executed, fingerprint, tx -> "not run");
            Outcome<String> mismatch = idem.run(scope, executed, Db.fingerprint("other"), tx -> "not run");
            Outcome<String> rejection = idem.run(scope, rejected, fingerprint, tx -> {
                Db.writeEffect(tx, scope, rejected, "undone");
                throw new Rejection("insufficient_funds", "no");
            });
            assertThatThrownBy(() -> idem.run(scope, failed, fingerprint, tx -> {
                        Db.writeEffect(tx, scope, failed, "undone");
                        tx.execute("select 1/0");
                        return "never";
                    }))
                    .hasMessageContaining("division by zero");
            Db.writeEffect(dsl, scope, failed, "the caller goes on");
            return List.of(first, replay, mismatch, rejection);
        });

        assertThat(outcomes.get(0)).isInstanceOf(Outcome.Executed.class);
        assertThat(outcomes.get(1)).isInstanceOf(Outcome.Replayed.class);
        assertThat(outcomes.get(2)).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(outcomes.get(3))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isFalse());
        assertThat(Db.effects(scope, executed)).isEqualTo(1);
        assertThat(Db.effects(scope, rejected)).isZero();
        assertThat(Db.effects(scope, failed)).as("only the caller's own write").isEqualTo(1);
        assertThat(Db.claims(scope)).as("executed and rejected").isEqualTo(2);
        assertThat(storedStates(scope))
                .as("committed rows carry their final state")
                .containsOnly(1, 2);
        assertThat(idem(Db.dsl()).run(scope, executed, fingerprint, tx -> "x")).isInstanceOf(Outcome.Replayed.class);
        assertThat(idem(Db.dsl()).run(scope, rejected, fingerprint, tx -> "x"))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isTrue());
    }

    static List<Integer> storedStates(Scope scope) {
        return Db.dsl()
                .resultQuery(
                        "SELECT state::int FROM " + Db.SCHEMA + ".idempotency_claim WHERE scope = ?", scope.value())
                .fetch(0, Integer.class);
    }

    @Test
    void purgeInsideACallersTransactionCommitsWithIt() {
        IdempotencyKey key = Db.freshKey();
        idem(Db.dsl()).run(scope, key, fingerprint, tx -> "old");
        Db.expire(scope, key);
        assertThatThrownBy(() -> Db.dsl().transaction(cfg -> {
                    assertThat(idem(cfg.dsl()).purgeExpired(1000)).isPositive();
                    throw new IllegalStateException("rolled back");
                }))
                .hasMessage("rolled back");
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        Db.dsl()
                .transaction(
                        cfg -> assertThat(idem(cfg.dsl()).purgeExpired(1000)).isPositive());
        assertThat(Db.claims(scope, key)).isZero();
    }

    // ------------------------------------------------------------------ stated, refused

    @Test
    void ownStatedInsideACallersTransactionIsRefusedBeforeTheWorkAndLeavesItUsable() {
        IdempotencyKey key = Db.freshKey();
        AtomicBoolean ran = new AtomicBoolean();
        Db.dsl().transaction(cfg -> {
            IdempotentTransaction<String> own = Db.builder(cfg.dsl(), ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .transactionMode(TransactionMode.OWN)
                    .build();
            assertThatThrownBy(() -> own.run(scope, key, fingerprint, tx -> {
                        ran.set(true);
                        return "x";
                    }))
                    .isInstanceOf(TransactionOwnershipException.class)
                    .hasMessageContaining("transactionMode is OWN")
                    .hasMessageContaining("split");
            Db.writeEffect(cfg.dsl(), scope, key, "the caller goes on");
        });
        assertThat(ran).isFalse();
        assertThat(Db.claims(scope, key)).isZero();
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void joinStatedWithoutATransactionIsRefused() {
        IdempotencyKey key = Db.freshKey();
        IdempotentTransaction<String> join = Db.builder(Db.dsl(), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .transactionMode(TransactionMode.JOIN)
                .build();
        assertThatThrownBy(() -> join.run(scope, key, fingerprint, tx -> "x"))
                .isInstanceOf(TransactionOwnershipException.class)
                .hasMessageContaining("no transaction is open to join")
                .satisfies(e ->
                        assertThat(((TransactionOwnershipException) e).key()).isEqualTo(key));
        assertThat(Db.claims(scope, key)).isZero();
    }

    @Test
    void joinStatedForATransactionManagerNoDetectorKnowsJoinsIt() throws SQLException {
        IdempotencyKey key = Db.freshKey();
        try (Connection c = Db.POOL.getConnection()) {
            c.setAutoCommit(false);
            DSLContext dsl = DSL.using(new OneConnection(c), SQLDialect.POSTGRES);
            IdempotentTransaction<String> join = Db.builder(dsl, ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .transactionMode(TransactionMode.JOIN)
                    .build();
            assertThat(join.run(scope, key, fingerprint, tx -> "j-" + Db.writeEffect(tx, scope, key, "x")))
                    .isInstanceOf(Outcome.Executed.class);
            assertThat(Db.claims(scope, key)).isZero();
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(Db.claims(scope, key)).isZero();
        assertThat(Db.effects(scope, key)).isZero();
    }

    @Test
    void aConnectionProviderNobodyKnowsWithAutoCommitOffIsRefusedNotGuessed() throws SQLException {
        IdempotencyKey key = Db.freshKey();
        AtomicBoolean ran = new AtomicBoolean();
        try (Connection c = Db.POOL.getConnection()) {
            c.setAutoCommit(false);
            IdempotentTransaction<String> idem = idem(DSL.using(new OneConnection(c), SQLDialect.POSTGRES));
            assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                        ran.set(true);
                        return "x";
                    }))
                    .isInstanceOf(TransactionOwnershipException.class)
                    .hasMessageContaining("cannot tell")
                    .hasMessageContaining("transactionMode");
            assertThatThrownBy(() -> idem.purgeExpired(10)).isInstanceOf(TransactionOwnershipException.class);
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(ran).isFalse();
    }

    @Test
    void aDetectorOnTheBuilderIsAskedFirst() throws SQLException {
        IdempotencyKey key = Db.freshKey();
        try (Connection c = Db.POOL.getConnection()) {
            c.setAutoCommit(false);
            IdempotentTransaction<String> idem = Db.builder(
                            DSL.using(new OneConnection(c), SQLDialect.POSTGRES), ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .detector(cfg -> TransactionDetector.Detection.ACTIVE)
                    .build();
            assertThat(idem.run(scope, key, fingerprint, tx -> "j-" + Db.writeEffect(tx, scope, key, "x")))
                    .isInstanceOf(Outcome.Executed.class);
            assertThat(Db.claims(scope, key)).as("joined: not yet committed").isZero();
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void aReadOnlyConnectionIsRefusedBeforeTheWork() {
        IdempotencyKey key = Db.freshKey();
        AtomicBoolean ran = new AtomicBoolean();
        try (HikariDataSource ds = Db.DATABASE.newPool(1, c -> c.setReadOnly(true))) {
            assertThatThrownBy(() -> idem(DSL.using(ds, SQLDialect.POSTGRES)).run(scope, key, fingerprint, tx -> {
                        ran.set(true);
                        return "x";
                    }))
                    .isInstanceOf(TransactionOwnershipException.class)
                    .hasMessageContaining("read-only");
        }
        assertThat(ran).isFalse();
    }

    /** A ConnectionProvider of the application's own, handing out one connection it manages. */
    private record OneConnection(Connection connection) implements ConnectionProvider {
        @Override
        public Connection acquire() {
            return connection;
        }

        @Override
        public void release(Connection c) {}
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
