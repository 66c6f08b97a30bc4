package io.github.idemtx.spring.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.spring.Committed;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.sample.PaymentController.Payment;
import io.github.idemtx.spring.sample.PaymentController.PaymentRequest;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.dao.ConcurrencyFailureException;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Concurrent duplicates of calls joined to Spring transactions. Under READ COMMITTED (PostgreSQL's
 * and {@code @Transactional}'s default) a duplicate waits for the call holding its key and replays
 * it, whatever the interleaving, never an exception. Under REPEATABLE READ a duplicate whose
 * transaction's snapshot predates the first call's commit cannot see its row: it fails with a
 * serialization failure, nothing of it remains, and the retry of its whole transaction replays.
 */
@SpringBootTest(classes = PaymentsApplication.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
// the server is shared with other builds: its pool's connections go back when the class is done,
// not when the JVM ends (each test class's dynamic properties make a context of its own)
@DatabaseTest
@DirtiesContext
class SpringConcurrentDuplicatesTest {

    /** Callers of one key at once; groups of them work through keys side by side. */
    private static final int CALLERS_PER_KEY = 4;

    private static final int GROUPS = 4;
    private static final int KEYS_PER_GROUP = 250;
    /** Only a guard against a hang (a broken barrier fails the test); nothing here is timed. */
    private static final long HANG_GUARD_SECONDS = 300;

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        PaymentsApplication.databaseProperties().forEach((k, v) -> registry.add(k, () -> v));
    }

    @Autowired
    PaymentService payments;

    @Autowired
    IdempotentTransactions transactions;

    @Autowired
    PlatformTransactionManager transactionManager;

    @Autowired
    DSLContext dsl;

    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());
    private final Fingerprint fingerprint = Fingerprint.sha256("request");

    /** Every answer of one key. */
    private record Answers(Queue<Outcome<Payment>> outcomes, Queue<Throwable> failures) {
        Answers() {
            this(new ConcurrentLinkedQueue<>(), new ConcurrentLinkedQueue<>());
        }
    }

    @Test
    void concurrentDuplicatesInsideTransactionalAtReadCommittedExecuteOnceAndReplayNeverThrow() throws Exception {
        Map<String, Answers> answers = callConcurrently(100);
        assertNoFailures(answers);
        Map<String, Integer> rows = paymentsByReference();
        for (Map.Entry<String, Answers> e : answers.entrySet()) {
            List<Outcome<Payment>> outcomes = List.copyOf(e.getValue().outcomes());
            assertThat(outcomes).hasSize(CALLERS_PER_KEY);
            List<Payment> executed = outcomes.stream()
                    .filter(o -> o instanceof Outcome.Executed<Payment>)
                    .map(o -> ((Outcome.Executed<Payment>) o).value())
                    .toList();
            assertThat(executed)
                    .as("Executed for key %s: %s", e.getKey(), outcomes)
                    .hasSize(1);
            for (Outcome<Payment> o : outcomes) {
                if (o instanceof Outcome.Replayed<Payment> r) {
                    assertThat(r.value()).as("a replay answers the execution").isEqualTo(executed.get(0));
                } else {
                    assertThat(o)
                            .as("key %s", e.getKey())
                            .isInstanceOfAny(Outcome.Executed.class, Outcome.InProgress.class);
                }
            }
            assertThat(rows.get(e.getKey()))
                    .as("payment rows of key %s", e.getKey())
                    .isEqualTo(1);
        }
        assertThat(rows).as("no payment without its key").hasSize(answers.size());
        // Not asserted (it depends on the interleaving), told so a run shows whether it met the narrow
        // race: a duplicate whose claim read the key just before the first committed and took the
        // key's lock just after, ran its work, met the row at its record (40001) and replayed. Its
        // payment id was drawn and rolled back, a gap in this test's ids (nobody else writes now).
        System.out.println(
                "SpringConcurrentDuplicatesTest: works run and undone for a duplicate that replayed: " + undoneWorks());
    }

    private long undoneWorks() {
        return Committed.number(
                "select max(id) - min(id) + 1 - count(*) from {schema}.payment where payer = ?", scope.value());
    }

    @Test
    void concurrentDuplicatesOfARejectedWorkInsideTransactionalRecordOneRejectionAndReplayItNeverThrow()
            throws Exception {
        Map<String, Answers> answers = callConcurrently(0); // the work rejects a non-positive amount
        assertNoFailures(answers);
        for (Map.Entry<String, Answers> e : answers.entrySet()) {
            List<Outcome<Payment>> outcomes = List.copyOf(e.getValue().outcomes());
            assertThat(outcomes).hasSize(CALLERS_PER_KEY);
            assertThat(outcomes)
                    .as("key %s", e.getKey())
                    .allSatisfy(o -> assertThat(o).isInstanceOfAny(Outcome.Rejected.class, Outcome.InProgress.class));
            assertThat(outcomes.stream().filter(o -> o instanceof Outcome.Rejected<Payment> r && !r.replayed()))
                    .as("recorded once for key %s: %s", e.getKey(), outcomes)
                    .hasSize(1);
        }
        assertThat(paymentsByReference())
                .as("a rejected work's payment is undone")
                .isEmpty();
    }

    @Test
    void underRepeatableReadADuplicateThatWaitedOnTheFirstFailsToSerializeAndItsRetriedTransactionReplays()
            throws Exception {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = IdempotencyKey.of(UUID.randomUUID().toString());
        CountDownLatch firstHolds = new CountDownLatch(1);
        CountDownLatch firstMayFinish = new CountDownLatch(1);
        AtomicBoolean duplicateRan = new AtomicBoolean();
        AtomicReference<Throwable> duplicateFailure = new AtomicReference<>();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome<String>> first = pool.submit(() -> repeatableRead()
                    .execute(status -> idem.run(scope, key, fingerprint, tx -> {
                        firstHolds.countDown();
                        await(firstMayFinish);
                        return write(tx, key);
                    })));
            await(firstHolds);
            Future<?> duplicate = pool.submit(() -> {
                try {
                    repeatableRead()
                            .executeWithoutResult(status -> idem.run(scope, key, fingerprint, tx -> {
                                duplicateRan.set(true);
                                return write(tx, key);
                            }));
                } catch (RuntimeException e) {
                    duplicateFailure.set(e);
                }
            });
            awaitWaitingOnTheKey(); // the duplicate's snapshot is taken: it waits on the first
            firstMayFinish.countDown();
            Outcome<String> firstCall = first.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
            assertThat(firstCall).isInstanceOf(Outcome.Executed.class);
            duplicate.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        } finally {
            firstMayFinish.countDown();
            pool.shutdownNow();
        }
        assertThat(duplicateFailure.get())
                .as("the waiting duplicate's failure")
                .isInstanceOf(ConcurrencyFailureException.class)
                .satisfies(e -> assertThat(sqlState(e)).isEqualTo("40001"));
        assertThat(duplicateRan).as("it failed before its work").isFalse();
        // what the caller does: retry the whole transaction, whose new snapshot sees the first's row
        assertReplays(repeatableRead().execute(status -> idem.run(scope, key, fingerprint, tx -> write(tx, key))), key);
        assertThat(audits(key)).isEqualTo(1);
    }

    @Test
    void underRepeatableReadADuplicateWhoseSnapshotPredatesTheFirstsCommitRunsIsUndoneAndFailsToSerialize() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = IdempotencyKey.of(UUID.randomUUID().toString());
        AtomicBoolean duplicateRan = new AtomicBoolean();
        assertThatThrownBy(() -> repeatableRead().executeWithoutResult(status -> {
                    dsl.fetchCount(dsl.selectOne()); // the caller's first statement takes the transaction's snapshot
                    // the first call commits on a connection of its own after that snapshot: invisible to it
                    TransactionTemplate other = repeatableRead();
                    other.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
                    Outcome<String> firstCall =
                            other.execute(s -> idem.run(scope, key, fingerprint, tx -> write(tx, key)));
                    assertThat(firstCall).isInstanceOf(Outcome.Executed.class);
                    idem.run(scope, key, fingerprint, tx -> {
                        duplicateRan.set(true); // the key's lock is free and its row out of sight: it runs
                        return write(tx, key);
                    });
                }))
                .isInstanceOf(ConcurrencyFailureException.class)
                .satisfies(e -> assertThat(sqlState(e)).isEqualTo("40001"));
        assertThat(duplicateRan).isTrue();
        assertThat(audits(key)).as("the duplicate's write is undone").isEqualTo(1);
        assertReplays(repeatableRead().execute(status -> idem.run(scope, key, fingerprint, tx -> write(tx, key))), key);
        assertThat(audits(key)).isEqualTo(1);
    }

    private static void assertReplays(Outcome<String> outcome, IdempotencyKey key) {
        assertThat(outcome)
                .as("the retried transaction's call")
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("done-" + key.value()));
    }

    /**
     * Every key of {@link #GROUPS} groups of {@link #KEYS_PER_GROUP} called by {@link #CALLERS_PER_KEY}
     * threads at once, through {@code PaymentService.pay} (@Transactional, READ COMMITTED: run joins
     * it) for {@code amountCents} (not positive: the work rejects); the answers by key.
     */
    private Map<String, Answers> callConcurrently(long amountCents) throws Exception {
        Map<String, Answers> answers = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(GROUPS * CALLERS_PER_KEY);
        List<Future<?>> running = new ArrayList<>();
        try {
            for (int g = 0; g < GROUPS; g++) {
                // the callers of a group meet at the barrier before each of the group's keys, so every
                // key is called by all of them at once
                CyclicBarrier together = new CyclicBarrier(CALLERS_PER_KEY);
                List<String> keys = new ArrayList<>();
                for (int k = 0; k < KEYS_PER_GROUP; k++) {
                    String key = UUID.randomUUID().toString();
                    keys.add(key);
                    answers.put(key, new Answers());
                }
                for (int c = 0; c < CALLERS_PER_KEY; c++) {
                    running.add(pool.submit(() -> {
                        for (String key : keys) {
                            together.await(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
                            Answers of = answers.get(key);
                            try {
                                of.outcomes()
                                        .add(payments.pay(
                                                scope,
                                                IdempotencyKey.of(key),
                                                fingerprint,
                                                new PaymentRequest(amountCents, key)));
                            } catch (RuntimeException e) {
                                of.failures().add(e);
                            }
                        }
                        return null;
                    }));
                }
            }
            for (Future<?> f : running) {
                f.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        return answers;
    }

    private static void assertNoFailures(Map<String, Answers> answers) {
        List<String> failures = new ArrayList<>();
        answers.values().forEach(a -> a.failures().forEach(e -> failures.add(stackTrace(e))));
        assertThat(failures)
                .as("exceptions out of run (%d calls)", GROUPS * KEYS_PER_GROUP * CALLERS_PER_KEY)
                .isEmpty();
    }

    private TransactionTemplate repeatableRead() {
        TransactionTemplate t = new TransactionTemplate(transactionManager);
        t.setIsolationLevel(TransactionDefinition.ISOLATION_REPEATABLE_READ);
        return t;
    }

    private static String write(DSLContext tx, IdempotencyKey key) {
        tx.execute("insert into audit (note) values (?)", "audit-" + key.value());
        return "done-" + key.value();
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(HANG_GUARD_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException("latch not released within the hang guard");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Until a session of this test's schema waits on an advisory lock in the library's await statement. */
    private void awaitWaitingOnTheKey() throws Exception {
        long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement("select count(*) from pg_stat_activity"
                        + " where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'"
                        + " and query like '%idemtx:await%' and query like ?")) {
            ps.setString(1, "%" + transactions.schema() + "%");
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getInt(1) > 0) {
                        return;
                    }
                }
                if (System.nanoTime() > guard) {
                    throw new IllegalStateException("the duplicate never waited on the key");
                }
                Thread.sleep(10);
            }
        }
    }

    private static int audits(IdempotencyKey key) {
        return Committed.count("select count(*) from {schema}.audit where note = ?", "audit-" + key.value());
    }

    private Map<String, Integer> paymentsByReference() throws SQLException {
        Map<String, Integer> rows = new HashMap<>();
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement("select reference, count(*) from " + transactions.schema()
                        + ".payment where payer = ? group by reference")) {
            ps.setString(1, scope.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.put(rs.getString(1), rs.getInt(2));
                }
            }
        }
        return rows;
    }

    private static String sqlState(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && s.getSQLState() != null) {
                return s.getSQLState();
            }
        }
        return null;
    }

    private static String stackTrace(Throwable e) {
        StringWriter out = new StringWriter();
        e.printStackTrace(new PrintWriter(out));
        return out.toString();
    }
}
