package io.github.idemtx.jooq.tx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.jooq.internal.tx.TransactionSql;
import io.github.idemtx.jooq.support.Db;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.core.BaseConnection;

/**
 * The protocol guarding itself against code and settings outside the happy path (issue 23's
 * adversarial cases): a work that ends its own transaction, a data source that hands out a caller's
 * open transaction, pools with {@code lock_timeout} or {@code statement_timeout}, holders of the
 * other claim mode with a slow COMMIT, a COMMIT whose deferred check waits. Each case runs in both
 * claim modes (and, with the module's PgBouncer execution, through PgBouncer) and asserts the
 * invariant, one committed effect per key and every answer equal to what is stored, besides the
 * status.
 */
@DatabaseTest
class ProtocolGuardTest {

    private static final String T = Db.SCHEMA;
    private final Fingerprint fingerprint = Db.fingerprint("guard");

    @BeforeAll
    static void tables() {
        // a COMMIT that takes its time (a lagging synchronous standby does this): a deferred trigger sleeps
        Db.dsl().execute("CREATE TABLE IF NOT EXISTS " + T + ".slow_commit (id bigserial PRIMARY KEY, note text)");
        Db.dsl()
                .execute("CREATE OR REPLACE FUNCTION " + T + ".slow_commit_sleep() RETURNS trigger LANGUAGE plpgsql AS"
                        + " $$ BEGIN PERFORM pg_sleep(4); RETURN NULL; END $$");
        Db.dsl().execute("DROP TRIGGER IF EXISTS slow_commit_sleep ON " + T + ".slow_commit");
        Db.dsl()
                .execute("CREATE CONSTRAINT TRIGGER slow_commit_sleep AFTER INSERT ON " + T + ".slow_commit"
                        + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION " + T + ".slow_commit_sleep()");
        // a deferred foreign key whose check at COMMIT waits on a row another transaction locked
        Db.dsl().execute("CREATE TABLE IF NOT EXISTS " + T + ".guard_parent (id bigint PRIMARY KEY)");
        Db.dsl()
                .execute("CREATE TABLE IF NOT EXISTS " + T + ".guard_child (id bigserial PRIMARY KEY, parent bigint"
                        + " REFERENCES " + T
                        + ".guard_parent DEFERRABLE INITIALLY DEFERRED, scope text, idem_key text)");
    }

    @AfterAll
    static void dropTables() {
        Db.dsl().execute("DROP TABLE IF EXISTS " + T + ".slow_commit, " + T + ".guard_child, " + T + ".guard_parent");
    }

    private static IdempotentTransaction<String> idem(DSLContext dsl, ClaimMode mode, Duration wait) {
        return IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .schema(T)
                .claimMode(mode)
                .policy(IdempotencyPolicy.builder().duplicateWait(wait).build())
                .build();
    }

    // ------------------------------------------------------------------ a work that ends its transaction

    @FunctionalInterface
    interface Step {
        void run(DSLContext tx) throws Exception;
    }

    /** The ways a work ends the transaction it was handed; {@code seen}: stopped before it went out. */
    enum Ending {
        CONNECTION_COMMIT(true, tx -> tx.connection(Connection::commit)),
        CONNECTION_ROLLBACK(true, tx -> tx.connection(Connection::rollback)),
        AUTO_COMMIT_ON(true, tx -> tx.connection(c -> c.setAutoCommit(true))),
        CONNECTION_CLOSE(true, tx -> tx.connection(Connection::close)),
        COMMIT_STATEMENT(true, tx -> tx.execute("commit")),
        ROLLBACK_STATEMENT(true, tx -> tx.execute("ROLLBACK")),
        END_STATEMENT(true, tx -> tx.execute("/* done */ end")),
        COMMIT_IN_A_MULTI_STATEMENT(true, tx -> tx.execute("select 'a; commit'; commit")),
        COMMIT_ON_A_PLAIN_STATEMENT(
                true,
                tx -> tx.connection(c -> {
                    try (Statement st = c.createStatement()) {
                        st.execute("COMMIT");
                    }
                })),
        COMMIT_ON_THE_UNWRAPPED_DRIVER(
                false, tx -> tx.connection(c -> c.unwrap(BaseConnection.class).commit())),
        AUTO_COMMIT_ON_THE_UNWRAPPED_DRIVER(
                false, tx -> tx.connection(c -> c.unwrap(BaseConnection.class).setAutoCommit(true))),
        // past the guard, then on through tx in a new transaction pgjdbc opens: the next call sees it
        COMMIT_ON_THE_DRIVER_THEN_MORE_WORK(false, tx -> {
            tx.connection(c -> c.unwrap(BaseConnection.class).commit());
            tx.execute("select 1");
        }),
        ROLLBACK_ON_THE_DRIVER_THEN_MORE_WORK(false, tx -> {
            tx.connection(c -> c.unwrap(BaseConnection.class).rollback());
            tx.execute("select 1");
        }),
        AUTO_COMMIT_TOGGLED_ON_THE_DRIVER_THEN_MORE_WORK(false, tx -> {
            tx.connection(c -> {
                c.unwrap(BaseConnection.class).setAutoCommit(true);
                c.unwrap(BaseConnection.class).setAutoCommit(false);
            });
            tx.execute("select 1");
        }),
        COMMIT_IN_A_NESTED_TRANSACTION_ON_THE_DRIVER(false, tx -> {
            tx.transaction(nested ->
                    nested.dsl().connection(c -> c.unwrap(BaseConnection.class).commit()));
            tx.execute("select 1");
        });

        final boolean seen;
        final Step step;

        Ending(boolean seen, Step step) {
            this.seen = seen;
            this.step = step;
        }
    }

    /** Every pair of one of {@code firsts} with one of {@code seconds}. */
    private static Stream<Arguments> pairs(Object[] firsts, Object[] seconds) {
        List<Arguments> all = new ArrayList<>();
        for (Object first : firsts) {
            for (Object second : seconds) {
                all.add(Arguments.of(first, second));
            }
        }
        return all.stream();
    }

    static Stream<Arguments> endingsInBothModes() {
        return pairs(Ending.values(), Db.modes());
    }

    @ParameterizedTest(name = "{0} in {1}")
    @MethodSource("endingsInBothModes")
    void aWorkThatEndsItsTransactionIsRefusedAndNoClaimCoversIt(Ending ending, ClaimMode mode) throws Exception {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        CountDownLatch start = new CountDownLatch(1);
        List<Callable<Object>> callers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            callers.add(() -> {
                start.await();
                try {
                    return idem.run(scope, key, fingerprint, tx -> {
                        Db.writeEffect(tx, scope, key, "before the ending");
                        try {
                            ending.step.run(tx);
                        } catch (DataAccessException swallowed) {
                            // a work that catches the refusal and goes on is refused all the same
                        }
                        return "done";
                    });
                } catch (RuntimeException e) {
                    return e;
                }
            });
        }
        List<Object> answers = runTogether(callers, start);

        for (Object answer : answers) {
            assertThat(answer)
                    .as("every caller is refused: none may record work its transaction did not cover")
                    .isInstanceOfSatisfying(WorkEndedTransactionException.class, e -> {
                        assertThat(e.committedByWork()).isEqualTo(!ending.seen);
                        assertThat(e.scope()).isEqualTo(scope);
                        assertThat(e.getMessage()).contains("must not end the transaction");
                    });
        }
        assertThat(Db.claims(scope, key)).as("no claim recorded").isZero();
        if (ending.seen) {
            assertThat(Db.effects(scope, key))
                    .as("stopped before it went out: nothing committed")
                    .isZero();
        }
        int before = Db.effects(scope, key);

        // the key is free: a correct work runs once, and its answer replays
        Outcome<String> fixed =
                idem.run(scope, key, fingerprint, tx -> "id-" + Db.writeEffect(tx, scope, key, "fixed"));
        assertThat(fixed).isInstanceOf(Outcome.Executed.class);
        assertThat(idem.run(scope, key, fingerprint, tx -> "again"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<String>) fixed).value()));
        assertThat(Db.effects(scope, key)).isEqualTo(before + 1);
        assertThat(Db.DATABASE.leftoverSessionState(Db.POOL))
                .as("the pool's connections are clean")
                .isEmpty();
    }

    /**
     * A work whose first act is to unwrap the driver's connection, write on it and commit there: no
     * transaction was open when it unwrapped, so the guard opens one first; the commit is then seen
     * as the end of it, and the call refused (working first too, where the work runs before any
     * statement of the library).
     */
    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void aWorkThatUnwrapsTheDriverFirstAndCommitsOnItIsRefused(ClaimMode mode) {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    tx.connection(c -> {
                        BaseConnection driver = c.unwrap(BaseConnection.class);
                        try (java.sql.PreparedStatement insert = driver.prepareStatement(
                                "INSERT INTO " + T + ".effect (scope, idem_key, note) VALUES (?, ?, 'driver')")) {
                            insert.setString(1, scope.value());
                            insert.setString(2, key.value());
                            insert.executeUpdate();
                        }
                        driver.commit();
                    });
                    return "done";
                }))
                .isInstanceOfSatisfying(
                        WorkEndedTransactionException.class,
                        e -> assertThat(e.committedByWork()).isTrue());
        assertThat(Db.claims(scope, key))
                .as("no claim covers the committed write")
                .isZero();
    }

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void aRejectionThrownAfterACommitPastTheGuardIsNotRecordedAsTheAnswer(ClaimMode mode) {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "x");
                    tx.connection(c -> c.unwrap(BaseConnection.class).commit());
                    throw new Rejection(io.github.idemtx.core.Failure.of("late", "rejected after a commit"));
                }))
                .isInstanceOfSatisfying(
                        WorkEndedTransactionException.class,
                        e -> assertThat(e.committedByWork()).isTrue())
                .hasCauseInstanceOf(Rejection.class);
        assertThat(Db.claims(scope, key))
                .as("no rejection recorded for a work that committed")
                .isZero();
    }

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void aRejectionThrownAfterACommitIsNotRecordedAsTheAnswer(ClaimMode mode) {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "x");
                    try {
                        tx.execute("commit");
                    } catch (DataAccessException ignored) {
                        // goes on as if it had worked
                    }
                    throw new Rejection(io.github.idemtx.core.Failure.of("late", "rejected after a commit"));
                }))
                .isInstanceOf(WorkEndedTransactionException.class)
                .hasCauseInstanceOf(Rejection.class);
        assertThat(Db.claims(scope, key)).isZero();
        assertThat(Db.effects(scope, key)).isZero();
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void aJoinedWorkThatEndsTheCallersTransactionIsRefusedAndTheCallerRollsBack(Ending ending) {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        IdempotentTransaction<String> idem = idem(Db.dsl(), ClaimMode.CLAIM_FIRST, Duration.ofSeconds(5));
        assertThatThrownBy(() -> Db.dsl().transaction(caller -> {
                    Db.writeEffect(caller.dsl(), scope, key, "the caller's own write");
                    IdempotentTransaction<String> joined = IdempotentTransaction.builder(
                                    caller.dsl(), ResultCodec.utf8())
                            .schema(T)
                            .transactionMode(TransactionMode.JOIN)
                            .build();
                    joined.run(scope, key, fingerprint, tx -> {
                        Db.writeEffect(tx, scope, key, "the work's");
                        try {
                            ending.step.run(tx);
                        } catch (DataAccessException swallowed) {
                            // refused all the same
                        }
                        return "done";
                    });
                }))
                .isInstanceOf(WorkEndedTransactionException.class);
        assertThat(Db.claims(scope, key)).isZero();
        if (ending.seen) {
            assertThat(Db.effects(scope, key))
                    .as("the caller's transaction rolled back whole")
                    .isZero();
        }
        assertThat(idem).isNotNull();
    }

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void setConstraintsAllImmediateInTheWorkKeepsOneEffectAndItsReplay(ClaimMode mode) {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        Outcome<String> first = idem.run(scope, key, fingerprint, tx -> {
            tx.execute("SET CONSTRAINTS ALL IMMEDIATE");
            return "id-" + Db.writeEffect(tx, scope, key, "immediate");
        });
        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(idem.run(scope, key, fingerprint, tx -> "again"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<String>) first).value()));

        // joined, with the caller committing later: the row's expiry still counts, the replay still holds
        IdempotencyKey joinedKey = Db.freshKey();
        Db.dsl().transaction(caller -> {
            IdempotentTransaction<String> joined = IdempotentTransaction.builder(caller.dsl(), ResultCodec.utf8())
                    .schema(T)
                    .transactionMode(TransactionMode.JOIN)
                    .build();
            assertThat(joined.run(scope, joinedKey, fingerprint, tx -> {
                        tx.execute("SET CONSTRAINTS ALL IMMEDIATE");
                        return "joined-" + Db.writeEffect(tx, scope, joinedKey, "immediate");
                    }))
                    .isInstanceOf(Outcome.Executed.class);
        });
        assertThat(idem.run(scope, joinedKey, fingerprint, tx -> "again")).isInstanceOf(Outcome.Replayed.class);
        assertThat(Db.effects(scope)).isEqualTo(2);
        assertThat(Db.claims(scope)).isEqualTo(2);
    }

    // ------------------------------------------------------------------ a caller's transaction handed out

    /**
     * A data source that hands the thread the connection of its open transaction, as many in-house
     * frameworks and JTA-style wrappers do; its close() leaves the connection to the transaction.
     */
    private static DataSource threadBound(Connection open) {
        Connection handle = (Connection) Proxy.newProxyInstance(
                ProtocolGuardTest.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                        return null;
                    }
                    try {
                        return method.invoke(open, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        return new DataSource() {
            @Override
            public Connection getConnection() {
                return handle;
            }

            @Override
            public Connection getConnection(String user, String password) {
                return handle;
            }

            @Override
            public PrintWriter getLogWriter() {
                return null;
            }

            @Override
            public void setLogWriter(PrintWriter out) {}

            @Override
            public void setLoginTimeout(int seconds) {}

            @Override
            public int getLoginTimeout() {
                return 0;
            }

            @Override
            public Logger getParentLogger() {
                return Logger.getGlobal();
            }

            @Override
            public <W> W unwrap(Class<W> iface) throws SQLException {
                throw new SQLException("not a wrapper");
            }

            @Override
            public boolean isWrapperFor(Class<?> iface) {
                return false;
            }
        };
    }

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void detectNeverCommitsACallersWriteHandedOutByAThreadBoundDataSource(ClaimMode mode) throws Exception {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        try (Connection open = Db.POOL.getConnection()) {
            open.setAutoCommit(false);
            Db.writeEffect(DSL.using(open, SQLDialect.POSTGRES), scope, key, "the caller's write");
            DSLContext bound = DSL.using(threadBound(open), SQLDialect.POSTGRES);
            IdempotentTransaction<String> idem = idem(bound, mode, Duration.ofSeconds(5));

            assertThatThrownBy(() ->
                            idem.run(scope, key, fingerprint, tx -> "id-" + Db.writeEffect(tx, scope, key, "work")))
                    .isInstanceOf(TransactionOwnershipException.class)
                    .hasMessageContaining("caller's transaction")
                    .hasMessageContaining("JOIN");
            open.rollback();
        }
        assertThat(Db.effects(scope, key))
                .as("the caller's rollback undid its write: run committed nothing")
                .isZero();
        assertThat(Db.claims(scope, key)).isZero();
    }

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void aThreadBoundTransactionThatOnlyReadIsTakenOverAndJoinStatedWorksInsideIt(ClaimMode mode) throws Exception {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        IdempotencyKey joinedKey = Db.freshKey();
        try (Connection open = Db.POOL.getConnection()) {
            open.setAutoCommit(false);
            DSL.using(open, SQLDialect.POSTGRES).fetch("select 1"); // like a pool's test query: nothing of anybody's
            DSLContext bound = DSL.using(threadBound(open), SQLDialect.POSTGRES);
            assertThat(idem(bound, mode, Duration.ofSeconds(5))
                            .run(scope, key, fingerprint, tx -> "id-" + Db.writeEffect(tx, scope, key, "work")))
                    .isInstanceOf(Outcome.Executed.class);

            Db.writeEffect(DSL.using(open, SQLDialect.POSTGRES), scope, joinedKey, "the caller's write");
            IdempotentTransaction<String> joined = IdempotentTransaction.builder(bound, ResultCodec.utf8())
                    .schema(T)
                    .claimMode(mode)
                    .transactionMode(TransactionMode.JOIN)
                    .build();
            assertThat(joined.run(
                            scope, joinedKey, fingerprint, tx -> "id-" + Db.writeEffect(tx, scope, joinedKey, "w")))
                    .isInstanceOf(Outcome.Executed.class);
            open.rollback();
        }
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(Db.effects(scope, joinedKey))
                .as("joined: gone with the caller's rollback")
                .isZero();
        assertThat(Db.claims(scope, joinedKey)).isZero();
    }

    // ------------------------------------------------------------------ one bound for every wait

    /** A case of a check that sleeps in its holder's COMMIT: named, so a failure says which. */
    @FunctionalInterface
    interface SlowCase {
        void run() throws Exception;
    }

    /**
     * Runs the cases side by side (each one's holder sleeps 4 s in its COMMIT; one after the other
     * they took most of this class's time) and fails naming every case that failed. Each case has
     * its own scope and key, holder and duplicate. Six at a time (a case holds up to three
     * connections: the holder's, the duplicate's and its pool's): the suite's forks share the
     * server's max_connections. Through PgBouncer two at a time: its pool of 6 server connections
     * would queue a duplicate behind the sleeping holders, a wait no bound covers.
     */
    private static void sideBySide(Map<String, SlowCase> cases) throws Exception {
        int parallel = Math.min(cases.size(), Db.DATABASE.throughPgBouncer() ? 2 : 6);
        ExecutorService runner = Executors.newFixedThreadPool(parallel);
        try {
            Map<String, Future<?>> running = new LinkedHashMap<>();
            cases.forEach((name, check) -> running.put(name, runner.submit(() -> {
                check.run();
                return null;
            })));
            AssertionError failed = new AssertionError("failed cases (each one's error is suppressed below)");
            List<String> names = new ArrayList<>();
            for (Map.Entry<String, Future<?>> e : running.entrySet()) {
                try {
                    e.getValue().get(5, TimeUnit.MINUTES);
                } catch (java.util.concurrent.ExecutionException x) {
                    names.add(e.getKey());
                    failed.addSuppressed(new AssertionError(e.getKey() + ": " + x.getCause(), x.getCause()));
                }
            }
            if (!names.isEmpty()) {
                AssertionError named = new AssertionError("failed: " + names);
                for (Throwable t : failed.getSuppressed()) {
                    named.addSuppressed(t);
                }
                throw named;
            }
        } finally {
            runner.shutdownNow();
        }
    }

    /**
     * The holder's COMMIT sleeps 4 s (a deferred trigger); the duplicate may wait 300 ms. Bounded,
     * it answers InProgress; had it waited past its bound it would have replayed. Every pair of the
     * holder's mode and the duplicate's.
     */
    @Test
    void aDuplicateBehindASlowCommitAnswersInProgressAtItsBoundWhateverEachMode() throws Exception {
        Map<String, SlowCase> cases = new LinkedHashMap<>();
        for (ClaimMode holderMode : Db.modes()) {
            for (ClaimMode duplicateMode : Db.modes()) {
                cases.put(
                        "holder " + holderMode + ", duplicate " + duplicateMode,
                        () -> assertBoundedBehindSlowCommit(
                                holderMode, idem(Db.dsl(), duplicateMode, Duration.ofMillis(300))));
            }
        }
        sideBySide(cases);
    }

    /** The same with the duplicate's pool setting a statement_timeout or lock_timeout shorter than its wait. */
    @Test
    void aPoolsStatementTimeoutOrLockTimeoutGivesInProgressNotARawError() throws Exception {
        assumeFalse(
                Db.DATABASE.throughPgBouncer(),
                "PgBouncer refuses an options start-up parameter;"
                        + " aJoinedDuplicateUnderAStatementTimeoutAnswersInProgress covers the setting there");
        Map<String, SlowCase> cases = new LinkedHashMap<>();
        for (String setting : List.of("statement_timeout", "lock_timeout")) {
            for (ClaimMode holderMode : Db.modes()) {
                for (ClaimMode duplicateMode : Db.modes()) {
                    cases.put(setting + ", holder " + holderMode + ", duplicate " + duplicateMode, () -> {
                        try (HikariDataSource pool = Db.DATABASE.newPool(
                                2, c -> c.addDataSourceProperty("options", "-c " + setting + "=300ms"))) {
                            assertBoundedBehindSlowCommit(
                                    holderMode,
                                    idem(DSL.using(pool, SQLDialect.POSTGRES), duplicateMode, Duration.ofSeconds(2)));
                        }
                    });
                }
            }
        }
        sideBySide(cases);
    }

    @Test
    void aJoinedDuplicateUnderAStatementTimeoutAnswersInProgress() throws Exception {
        Map<String, SlowCase> cases = new LinkedHashMap<>();
        for (ClaimMode holderMode : Db.modes()) {
            cases.put("holder " + holderMode, () -> joinedDuplicateUnderAStatementTimeout(holderMode));
        }
        sideBySide(cases);
    }

    private void joinedDuplicateUnderAStatementTimeout(ClaimMode holderMode) throws Exception {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Future<Outcome<String>> held = startSlowCommit(holder, holderMode, scope, key);
            Outcome<String> duplicate = Db.dsl().transactionResult(caller -> {
                caller.dsl().execute("SET LOCAL statement_timeout = '300ms'");
                IdempotentTransaction<String> joined = IdempotentTransaction.builder(caller.dsl(), ResultCodec.utf8())
                        .schema(T)
                        .transactionMode(TransactionMode.JOIN)
                        .policy(IdempotencyPolicy.builder()
                                .duplicateWait(Duration.ofSeconds(2))
                                .build())
                        .build();
                Outcome<String> answer = joined.run(scope, key, fingerprint, tx -> "duplicate ran");
                caller.dsl().fetch("select 1"); // the caller's transaction is still usable
                return answer;
            });
            assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
            assertThat(held.get(60, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
        } finally {
            holder.shutdownNow();
        }
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    private void assertBoundedBehindSlowCommit(ClaimMode holderMode, IdempotentTransaction<String> duplicate)
            throws Exception {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Future<Outcome<String>> held = startSlowCommit(holder, holderMode, scope, key);
            Outcome<String> answer =
                    duplicate.run(scope, key, fingerprint, tx -> "id-" + Db.writeEffect(tx, scope, key, "dup"));
            assertThat(answer)
                    .as("the duplicate's wait is bounded by its duplicateWait, not the holder's COMMIT")
                    .isInstanceOf(Outcome.InProgress.class);
            Outcome<String> first = held.get(60, TimeUnit.SECONDS);
            assertThat(first).isInstanceOf(Outcome.Executed.class);
            assertThat(duplicate.run(scope, key, fingerprint, tx -> "later"))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class,
                            r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<String>) first).value()));
        } finally {
            holder.shutdownNow();
        }
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    /** Starts a holder whose COMMIT sleeps, and returns once that COMMIT is under way. */
    private Future<Outcome<String>> startSlowCommit(
            ExecutorService holder, ClaimMode mode, Scope scope, IdempotencyKey key) throws InterruptedException {
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        String note = "slow-" + key.value();
        java.util.concurrent.atomic.AtomicInteger backend = new java.util.concurrent.atomic.AtomicInteger();
        Future<Outcome<String>> held = holder.submit(() -> idem.run(scope, key, fingerprint, tx -> {
            backend.set(tx.resultQuery("select pg_backend_pid()").fetchSingle().get(0, Integer.class));
            tx.execute("INSERT INTO " + T + ".slow_commit (note) VALUES (?)", note);
            return "id-" + Db.writeEffect(tx, scope, key, "holder");
        }));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        // the holder's own session (others on the server may sleep too), sleeping in its COMMIT's trigger
        while (backend.get() == 0
                || count(
                                "select count(*) from pg_stat_activity where wait_event = 'PgSleep'" + " and pid = ?",
                                backend.get())
                        == 0) {
            assertThat(System.nanoTime())
                    .as("the holder's COMMIT started sleeping")
                    .isLessThan(deadline);
            assertThat(held.isDone()).as("the holder is still committing").isFalse();
            Thread.sleep(5);
        }
        return held;
    }

    // ------------------------------------------------------------------ an error that is not a holder's

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void aCommitsOwnLockTimeoutIsThrownAsItIsNeverInProgress(ClaimMode mode) throws Exception {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        long parent = System.nanoTime();
        Db.dsl().execute("INSERT INTO " + T + ".guard_parent VALUES (?)", parent);
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        try (Connection locker = Db.POOL.getConnection()) {
            locker.setAutoCommit(false);
            DSL.using(locker, SQLDialect.POSTGRES)
                    .execute("SELECT 1 FROM " + T + ".guard_parent WHERE id = ? FOR UPDATE", parent);
            assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                        tx.execute(
                                "SET LOCAL lock_timeout = '300ms'"); // the caller's own bound, as a pool would set it
                        tx.execute(
                                "INSERT INTO " + T + ".guard_child (parent, scope, idem_key) VALUES (?, ?, ?)",
                                parent,
                                scope.value(),
                                key.value());
                        return "child";
                    }))
                    .as("no duplicate exists: the deferred check's lock timeout is the error it is")
                    .isInstanceOf(DataAccessException.class)
                    .satisfies(e -> assertThat(io.github.idemtx.jooq.internal.store.SqlStates.has(e, "55P03"))
                            .isTrue());
            locker.rollback();
        }
        assertThat(Db.claims(scope, key)).isZero();
        assertThat(count("select count(*) from " + T + ".guard_child where idem_key = ?", key.value()))
                .isZero();
        // and once the row is free the same key runs
        assertThat(idem.run(scope, key, fingerprint, tx -> "ok")).isInstanceOf(Outcome.Executed.class);
    }

    // ------------------------------------------------------------------ the two front doors

    private void effectRow(Scope scope, IdempotencyKey key, String expiresAt) {
        Db.dsl()
                .execute(
                        "INSERT INTO " + T + ".idempotency_claim (scope, idem_key, fingerprint, state, result,"
                                + " created_at, completed_at, expires_at, effect, request, fence, lookups) VALUES (?, ?, ?, 1,"
                                + " convert_to('the effect''s answer', 'UTF8'), now(), now(), " + expiresAt
                                + ", 'payout',"
                                + " convert_to('{}', 'UTF8'), 1, 0)",
                        scope.value(),
                        key.value(),
                        fingerprint.bytes());
    }

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void aSettledEffectsRowIsNeverReplayedAsThisDoorsAnswer(ClaimMode mode) {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        effectRow(scope, key, "now() + interval '1 hour'");
        Outcome<String> answer = idem(Db.dsl(), mode, Duration.ofSeconds(5))
                .run(scope, key, fingerprint, tx -> "ran-" + Db.writeEffect(tx, scope, key, "work"));
        assertThat(answer)
                .as("the key belongs to an external effect: another request's, whatever the fingerprint")
                .isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(Db.effects(scope, key)).isZero();
    }

    @ParameterizedTest
    @EnumSource(value = ClaimMode.class, names = Db.ALIAS, mode = EnumSource.Mode.EXCLUDE)
    void anExpiredEffectsRowTakenOverKeepsNoneOfTheEffectsColumns(ClaimMode mode) {
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        effectRow(scope, key, "now() - interval '1 second'");
        IdempotentTransaction<String> idem = idem(Db.dsl(), mode, Duration.ofSeconds(5));
        Outcome<String> first =
                idem.run(scope, key, fingerprint, tx -> "ran-" + Db.writeEffect(tx, scope, key, "work"));
        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(count(
                        "select count(*) from " + T + ".idempotency_claim where scope = ? and idem_key = ? and effect"
                                + " is null and request is null and fence is null and lookups is null",
                        scope.value(),
                        key.value()))
                .isEqualTo(1);
        assertThat(idem.run(scope, key, fingerprint, tx -> "again"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<String>) first).value()));
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void theGuardTellsTransactionEndingStatementsFromOthers() {
        assertThat(TransactionSql.endingVerb("commit")).isEqualTo("commit");
        assertThat(TransactionSql.endingVerb("  -- x\n/* y /* z */ */ COMMIT AND CHAIN"))
                .isEqualTo("commit");
        assertThat(TransactionSql.endingVerb("select 1; rollback")).isEqualTo("rollback");
        assertThat(TransactionSql.endingVerb("prepare transaction 'x'")).isEqualTo("prepare transaction");
        assertThat(TransactionSql.endingVerb("abort")).isEqualTo("abort");
        assertThat(TransactionSql.endingVerb("rollback to savepoint a")).isNull();
        assertThat(TransactionSql.endingVerb("insert into t values ('x; commit')"))
                .isNull();
        assertThat(TransactionSql.endingVerb("select $$; commit$$, $1")).isNull();
        assertThat(TransactionSql.endingVerb("select 1 -- ; commit")).isNull();
        assertThat(TransactionSql.endingVerb("update t set committed = true")).isNull();
        assertThat(TransactionSql.endingVerb("do $f$ begin perform 1; end $f$")).isNull();
        assertThat(TransactionSql.endingVerb("prepare p as select 1")).isNull();
        // an outside attack's finds: escaped quotes in E-strings, $ inside identifiers, a comment
        // ended by a carriage return, ROLLBACK WORK TO
        assertThat(TransactionSql.endingVerb("select E'\\' '; commit; --'")).isEqualTo("commit");
        assertThat(TransactionSql.endingVerb("select 1 as a$b$; commit; --$b$")).isEqualTo("commit");
        assertThat(TransactionSql.endingVerb("select 1; --x\rcommit")).isEqualTo("commit");
        assertThat(TransactionSql.endingVerb("insert into t values (E'it\\'s; commit')"))
                .isNull();
        assertThat(TransactionSql.endingVerb("ROLLBACK WORK TO SAVEPOINT a")).isNull();
        assertThat(TransactionSql.endingVerb("rollback transaction to a")).isNull();
        assertThat(TransactionSql.endingVerb("rollback work")).isEqualTo("rollback");
    }

    private static long count(String sql, Object... bindings) {
        return Db.dsl().resultQuery(sql, bindings).fetchSingle().get(0, Long.class);
    }

    private static List<Object> runTogether(List<Callable<Object>> callers, CountDownLatch start) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(callers.size());
        try {
            List<Future<Object>> futures = new ArrayList<>();
            for (Callable<Object> c : callers) {
                futures.add(pool.submit(c));
            }
            start.countDown();
            List<Object> answers = new ArrayList<>();
            for (Future<Object> f : futures) {
                answers.add(f.get(60, TimeUnit.SECONDS));
            }
            return answers;
        } finally {
            pool.shutdownNow();
        }
    }
}
