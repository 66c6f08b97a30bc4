package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.internal.store.StatementKind;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.SqlHook;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link ClaimMode#WORK_FIRST}'s own mechanism, whatever the run's default mode: the insert with
 * COMMIT is the claim, a duplicate that overtakes a slow holder wins, and a duplicate of a holder
 * whose row is not committed yet (a joined call's) waits for it within {@code duplicateWait}. (The contract as a whole runs
 * in both modes: every suite of this module, see jooq-integration/pom.xml's executions.)
 */
@DatabaseTest
class WorkFirstTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("work first");

    private static IdempotentTransaction.Builder<String> workFirst() {
        return IdempotentTransaction.builder(Db.dsl(), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .claimMode(ClaimMode.WORK_FIRST);
    }

    @Test
    void isChosenOnTheBuilderAndIsNotTheDefault() {
        assertThat(IdempotentTransaction.create(Db.dsl(), IdempotencyPolicy.defaults(), ResultCodec.utf8())
                        .claimMode())
                .isEqualTo(IdempotentTransaction.DEFAULT_CLAIM_MODE)
                .isNotEqualTo(ClaimMode.WORK_FIRST);
        assertThat(workFirst().build().claimMode()).isEqualTo(ClaimMode.WORK_FIRST);
    }

    @Test
    void aDuplicateThatOvertakesASlowHolderCommitsFirstAndTheHolderReplaysItsAnswer() throws Exception {
        IdempotentTransaction<String> idem = workFirst().build();
        CountDownLatch working = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Future<Outcome<String>> slow = holder.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                long id = Db.writeEffect(tx, scope, key, "slow");
                working.countDown();
                release.await(30, TimeUnit.SECONDS);
                return "slow-" + id;
            }));
            assertThat(working.await(30, TimeUnit.SECONDS)).isTrue();

            Outcome<String> fast =
                    idem.run(scope, key, fingerprint, tx -> "fast-" + Db.writeEffect(tx, scope, key, "fast"));
            release.countDown();

            assertThat(fast).isInstanceOf(Outcome.Executed.class);
            String answer = ((Outcome.Executed<String>) fast).value();
            assertThat(slow.get(30, TimeUnit.SECONDS))
                    .as("one key, one answer")
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(answer));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
        } finally {
            release.countDown();
            holder.shutdownNow();
        }
    }

    @Test
    void aDuplicateMeetingAnUncommittedRowGetsInProgressPastTheBoundAndReplaysOnceItCommits() throws Exception {
        assumeThat(Db.DATABASE.throughPgBouncer())
                .as("the holder pins a server connection for seconds")
                .isFalse();
        List<CallEvent> events = new CopyOnWriteArrayList<>();
        Duration retryAfter = Duration.ofSeconds(2);
        IdempotentTransaction<String> impatient = workFirst()
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(300))
                        .retryAfter(retryAfter)
                        .build())
                .listener(new IdempotencyListener<Object>() {
                    @Override
                    public void callFinished(CallEvent event, Object context) {
                        events.add(event);
                    }
                })
                .build();
        CountDownLatch recorded = new CountDownLatch(1);
        CountDownLatch commit = new CountDownLatch(1);
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            // the holder: a joined call, whose completed row stays uncommitted until its caller commits
            Future<Outcome<String>> joined = holder.submit(() -> Db.dsl().transactionResult(cfg -> {
                Outcome<String> o = Db.builder(cfg.dsl(), ResultCodec.utf8())
                        .schema(Db.SCHEMA)
                        .build()
                        .run(scope, key, fingerprint, tx -> "holder-" + Db.writeEffect(tx, scope, key, "holder"));
                recorded.countDown();
                commit.await(30, TimeUnit.SECONDS);
                return o;
            }));
            assertThat(recorded.await(30, TimeUnit.SECONDS)).isTrue();

            Outcome<String> duplicate =
                    impatient.run(scope, key, fingerprint, tx -> "dup-" + Db.writeEffect(tx, scope, key, "dup"));

            assertThat(duplicate).isEqualTo(new Outcome.InProgress<String>(retryAfter));
            assertThat(events).singleElement().satisfies(e -> {
                assertThat(e.result()).isEqualTo(CallEvent.Result.IN_PROGRESS);
                assertThat(e.waiting())
                        .as("the wait on the holder's row is timed as waiting")
                        .isGreaterThanOrEqualTo(Duration.ofMillis(250));
            });
            assertThat(Db.lockTimeout(Db.dsl()))
                    .as("the bound was transaction-local")
                    .isEqualTo("0");
            commit.countDown();
            assertThat(joined.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            String answer = ((Outcome.Executed<String>) joined.get()).value();
            assertThat(impatient.run(scope, key, fingerprint, tx -> "again-" + Db.writeEffect(tx, scope, key, "again")))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(answer));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            commit.countDown();
            holder.shutdownNow();
        }
    }

    @Test
    void aDuplicateMeetingAnUncommittedRowThatCommitsWithinTheBoundWaitsAndReplaysIt() throws Exception {
        assumeThat(Db.DATABASE.throughPgBouncer())
                .as("the holder pins a server connection while it waits")
                .isFalse();
        IdempotentTransaction<String> patient = workFirst()
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofSeconds(20))
                        .build())
                .build();
        CountDownLatch recorded = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome<String>> joined = threads.submit(() -> Db.dsl().transactionResult(cfg -> {
                Outcome<String> o = Db.builder(cfg.dsl(), ResultCodec.utf8())
                        .schema(Db.SCHEMA)
                        .build()
                        .run(scope, key, fingerprint, tx -> "holder-" + Db.writeEffect(tx, scope, key, "holder"));
                recorded.countDown();
                // the duplicate's insert found the key's lock held (never waiting on our row): it
                // reads the key and waits on the lock
                Db.DATABASE.awaitLockWaiters(Faults.running(StatementKind.AWAIT), 1);
                return o;
            }));
            assertThat(recorded.await(30, TimeUnit.SECONDS)).isTrue();
            Future<Outcome<String>> duplicate = threads.submit(
                    () -> patient.run(scope, key, fingerprint, tx -> "dup-" + Db.writeEffect(tx, scope, key, "dup")));

            String answer = ((Outcome.Executed<String>) joined.get(30, TimeUnit.SECONDS)).value();
            assertThat(duplicate.get(30, TimeUnit.SECONDS))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(answer));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            threads.shutdownNow();
        }
    }

    /**
     * Found by an outside attack: a pool whose {@code lock_timeout} (or {@code statement_timeout})
     * is shorter than a holder's hold on a business row. Working first, the duplicate's own work
     * waits on that row (the holder holds no lock of the key yet) until the session's bound cuts it;
     * it must be answered InProgress, as reading first answers a duplicate at the pool's bound, not
     * with the raw 55P03/57014. In both fixed orders and the default.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({
        "WORK_FIRST, SET lock_timeout = '300ms'",
        "WORK_FIRST, SET statement_timeout = '300ms'",
        "ADAPTIVE, SET lock_timeout = '300ms'",
        "CLAIM_FIRST, SET lock_timeout = '300ms'"
    })
    void aDuplicateWhoseWorkWaitsOnTheHoldersRowPastThePoolsBoundIsInProgress(ClaimMode mode, String initSql)
            throws Exception {
        assumeThat(Db.DATABASE.throughPgBouncer())
                .as("the holder pins a server connection for seconds")
                .isFalse();
        try (com.zaxxer.hikari.HikariDataSource pool = Db.DATABASE.newPool(4, c -> c.setConnectionInitSql(initSql))) {
            IdempotentTransaction<String> idem = IdempotentTransaction.builder(
                            org.jooq.impl.DSL.using(pool, org.jooq.SQLDialect.POSTGRES), ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .claimMode(mode)
                    .build();
            IdempotencyKey row = Db.freshKey(); // a business row both works lock: its own key in the effect table
            Db.writeEffect(Db.dsl(), scope, row, "the account");
            String lockRow = "select 1 from " + Db.SCHEMA + ".effect where scope = '" + scope.value()
                    + "' and idem_key = '" + row.value() + "' for update";
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            ExecutorService holder = Executors.newSingleThreadExecutor();
            try {
                Future<Outcome<String>> first = holder.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                    tx.execute(lockRow);
                    long id = Db.writeEffect(tx, scope, key, "holder");
                    holding.countDown();
                    release.await(30, TimeUnit.SECONDS);
                    return "holder-" + id;
                }));
                assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();

                Outcome<String> duplicate = idem.run(scope, key, fingerprint, tx -> {
                    tx.execute(lockRow); // waits on the holder, until the pool's bound cuts it
                    return "dup-" + Db.writeEffect(tx, scope, key, "dup");
                });

                assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
                release.countDown();
                String answer = ((Outcome.Executed<String>) first.get(30, TimeUnit.SECONDS)).value();
                assertThat(idem.run(scope, key, fingerprint, tx -> "again-" + Db.writeEffect(tx, scope, key, "x")))
                        .isInstanceOfSatisfying(
                                Outcome.Replayed.class,
                                r -> assertThat(r.value()).isEqualTo(answer));
                assertThat(Db.effects(scope, key)).isEqualTo(1);
            } finally {
                release.countDown();
                holder.shutdownNow();
            }
        }
    }

    @Test
    void concurrentDuplicatesEachRunTheWorkButOneCommitsAndAllGetItsAnswer() throws Exception {
        IdempotentTransaction<String> idem = workFirst().build();
        AtomicInteger runs = new AtomicInteger();

        List<Concurrently.Result<Outcome<String>>> results = Concurrently.times(
                16,
                () -> idem.run(scope, key, fingerprint, tx -> {
                    runs.incrementAndGet();
                    long id = Db.writeEffect(
                            tx, scope, key, Thread.currentThread().getName());
                    Thread.sleep(20);
                    return "effect-" + id;
                }));

        assertThat(results).extracting(Concurrently.Result::error).containsOnlyNulls();
        List<Outcome<String>> outcomes =
                results.stream().map(Concurrently.Result::value).toList();
        List<String> executed = outcomes.stream()
                .filter(o -> o instanceof Outcome.Executed)
                .map(o -> ((Outcome.Executed<String>) o).value())
                .toList();
        assertThat(executed).hasSize(1);
        assertThat(outcomes)
                .filteredOn(o -> !(o instanceof Outcome.Executed))
                .allSatisfy(o -> assertThat(o)
                        .isInstanceOfSatisfying(
                                Outcome.Replayed.class,
                                r -> assertThat(r.value()).isEqualTo(executed.get(0))));
        assertThat(runs.get()).as("the duplicates ran speculatively").isGreaterThan(1);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void anExpiredClaimIsTakenOverAfterTheInsertMeetsIt() {
        IdempotentTransaction<String> idem = workFirst().build();
        idem.run(scope, key, fingerprint, tx -> "old-" + Db.writeEffect(tx, scope, key, "old"));
        Db.expire(scope, key);

        Outcome<String> again = idem.run(scope, key, fingerprint, tx -> "new-" + Db.writeEffect(tx, scope, key, "new"));

        assertThat(again)
                .isInstanceOfSatisfying(
                        Outcome.Executed.class,
                        e -> assertThat((String) e.value()).startsWith("new-"));
        assertThat(Db.effects(scope, key))
                .as("the old effect and the new one; the speculative run rolled back")
                .isEqualTo(2);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(idem.run(scope, key, fingerprint, tx -> "never"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat((String) r.value()).startsWith("new-"));
    }

    @Test
    void aRejectionIsRecordedAndReplayedEvenIfTheWorkWouldNowSucceed() {
        IdempotentTransaction<String> idem = workFirst().build();
        Outcome<String> refused = idem.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "undone");
            throw new io.github.idemtx.core.Rejection("insufficient_funds", "no money");
        });
        assertThat(refused).isInstanceOf(Outcome.Rejected.class);

        Outcome<String> retry = idem.run(scope, key, fingerprint, tx -> "now-" + Db.writeEffect(tx, scope, key, "now"));

        assertThat(retry)
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isTrue());
        assertThat(Db.effects(scope, key)).isZero();
    }

    /**
     * The duplicate's insert fails on the key and the backend is terminated right after: pgjdbc
     * reports the 23505 with the 57P01 chained as its next exception (and HikariCP, which walks that
     * chain, closes the connection). That is a lost connection, not a taken key to read on it; and
     * since the insert failed, nothing of the call committed: the error says so. Reading first, the
     * same at the record sent with the COMMIT.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(
            value = ClaimMode.class,
            names = {"WORK_FIRST", "CLAIM_FIRST"})
    void anInsertThatMeetsTheKeyAndThenLosesItsConnectionSaysNothingCommitted(ClaimMode mode) throws Exception {
        assumeThat(Db.DATABASE.throughPgBouncer()).as("kills a server backend").isFalse();
        try (io.github.idemtx.db.testing.Backends killer =
                new io.github.idemtx.db.testing.Backends(Db.DATABASE.connect())) {
            java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean(true);
            SqlHook duplicateThenKilled = new SqlHook() {
                @Override
                public void before(Sql sql) throws java.sql.SQLException {
                    if (StatementKind.of(sql.sql()) == StatementKind.RECORD_AND_COMMIT
                            && armed.compareAndSet(true, false)) {
                        killer.kill(sql.connection());
                        java.sql.SQLException duplicate = new java.sql.SQLException(
                                "ERROR: duplicate key value violates unique constraint \"idempotency_claim_pk\"",
                                "23505");
                        duplicate.setNextException(new java.sql.SQLException(
                                "FATAL: terminating connection due to administrator command", "57P01"));
                        throw duplicate;
                    }
                }
            };
            org.jooq.DSLContext dsl = SqlHook.around(Db.dsl(), duplicateThenKilled);
            IdempotentTransaction<String> idem = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .claimMode(mode)
                    .build();

            org.assertj.core.api.Assertions.assertThatThrownBy(
                            () -> idem.run(scope, key, fingerprint, tx -> "x-" + Db.writeEffect(tx, scope, key, "x")))
                    .isInstanceOf(org.jooq.exception.DataAccessException.class)
                    .isNotInstanceOf(io.github.idemtx.core.CommitOutcomeUnknownException.class)
                    .hasMessageContaining("failed (SQLSTATE 23505) and the connection is closed")
                    .hasMessageContaining("nothing of this call was committed")
                    .satisfies(e -> assertThat(Faults.isConnectionError(e))
                            .as("classified as a lost connection")
                            .isTrue());
            assertThat(Db.effects(scope, key)).isZero();
            assertThat(Db.claims(scope, key)).isZero();
            assertThat(idem.run(scope, key, fingerprint, tx -> "y")).isEqualTo(new Outcome.Executed<>("y"));
        }
    }
}
