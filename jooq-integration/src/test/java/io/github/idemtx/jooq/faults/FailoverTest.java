package io.github.idemtx.jooq.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.FailoverCluster;
import io.github.idemtx.db.testing.FailoverCluster.Replication;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Bank;
import io.github.idemtx.jooq.support.BankSetChecker;
import io.github.idemtx.jooq.support.Db;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;

/**
 * The primary dies under load and the standby takes over: a primary and a streaming standby of
 * the test's own ({@link FailoverCluster}), clients on pgjdbc's multi-host URL with
 * {@code targetServerType=primary}, each sending its transfer ({@link Bank#transfer}) with its key
 * until it gets a final answer. Halfway through, the primary is SIGKILLed and the standby promoted;
 * the clients keep retrying. Then, on the promoted server: which final answers are still recorded,
 * and what a client that never saw its answer gets when it sends the key once more after the
 * failover. {@link BankSetChecker} judges the history against the promoted server.
 *
 * <p>With synchronous replication none may be lost, none applied twice, every key keeps its one
 * answer. With asynchronous replication the same run is measured and printed, not asserted: an
 * acknowledged commit the standby had not received is gone after the promotion, and its key is free
 * again, so the retry executes a second time and answers something else. Only what a promoted
 * server guarantees either way is asserted there (money conserved, postings complete, nothing a
 * caller did not ask for).
 *
 * <p>Runs in the direct execution only: its servers are its own, no pooler is in front of them.
 */
@DisabledIfSystemProperty(
        named = "idemtx.test.pgbouncer",
        matches = "true",
        disabledReason =
                "a primary and a standby of its own, reached directly: the PgBouncer execution has nothing to add")
@DatabaseTest
class FailoverTest {

    private static final int CLIENTS = 8;
    private static final int INTENTS = 1200;
    private static final int ACCOUNTS = 20;
    private static final long OPENING_BALANCE = 1_000;
    /** How long a client keeps retrying one intent before it gives up (never reached when all is well). */
    private static final long GIVE_UP_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final Scope scope = Scope.of("tenant-failover");
    private final AtomicBoolean aborted = new AtomicBoolean();

    @Test
    void withSynchronousReplicationNoAcknowledgedAnswerIsLostNorAppliedTwice() throws Exception {
        Run run = failoverUnderLoad(Replication.SYNC);

        assertThat(run.lost()).as(run.summary()).isEmpty();
        assertThat(run.executedAgain()).as(run.summary()).isZero();
        assertThat(run.answeredOtherwise()).as(run.summary()).isZero();
        assertThat(run.beforeResend().violations())
                .as(run.beforeResend().summary())
                .isEmpty();
        assertThat(run.afterResend().violations())
                .as(run.afterResend().summary())
                .isEmpty();
    }

    @Test
    void withAsynchronousReplicationTheLostAnswersAreMeasured() throws Exception {
        Run run = failoverUnderLoad(Replication.ASYNC);

        // lost answers are what asynchronous replication allows: they are reported, not asserted; but
        // every violation the checker finds must be one of theirs, and the bank itself stays whole
        for (BankSetChecker.Report report : List.of(run.beforeResend(), run.afterResend())) {
            assertThat(report.violations())
                    .as(report.summary())
                    .allSatisfy(v -> assertThat(run.lost().stream()
                                    .anyMatch(k -> v.startsWith("key " + k + " ") || v.startsWith("key " + k + ":")))
                            .as("violation about a key whose answer was lost: %s", v)
                            .isTrue());
        }
    }

    /** What one run saw; {@code lost} are the keys whose first final answer the promoted server does not hold. */
    private record Run(
            String summary,
            Set<String> lost,
            int executedAgain,
            int answeredOtherwise,
            BankSetChecker.Report beforeResend,
            BankSetChecker.Report afterResend) {}

    private Run failoverUnderLoad(Replication replication) throws Exception {
        long started = System.nanoTime();
        FailoverCluster.assumeBinaries();
        try (FailoverCluster cluster = FailoverCluster.start(replication);
                HikariDataSource pool = pool(cluster)) {
            IdempotencySchema.migrate(pool, Db.SCHEMA);
            DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES);
            createBank(dsl);
            Map<Integer, Long> initial = new TreeMap<>();
            for (int i = 0; i < ACCOUNTS; i++) {
                dsl.execute(
                        "INSERT INTO " + Bank.ACCOUNT + " (scope, id, balance) VALUES (?, ?, ?)",
                        scope.value(),
                        i,
                        OPENING_BALANCE);
                initial.put(i, OPENING_BALANCE);
            }
            cluster.awaitStandbyCaughtUp(Duration.ofSeconds(30));
            IdempotentTransaction<String> idem = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .build();

            List<BankSetChecker.Intent> intents = new ArrayList<>();
            for (int i = 0; i < INTENTS; i++) {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                int from = random.nextInt(ACCOUNTS);
                int to = (from + 1 + random.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
                intents.add(new BankSetChecker.Intent(Db.freshKey(), from, to, 1 + random.nextInt(200)));
            }
            BankSetChecker checker = new BankSetChecker();
            Map<IdempotencyKey, BankSetChecker.Call> finals = new ConcurrentHashMap<>();
            AtomicInteger answered = new AtomicInteger();
            java.util.Queue<Long> answeredAt = new java.util.concurrent.ConcurrentLinkedQueue<>();
            AtomicReference<FailoverCluster.Failover> failover = new AtomicReference<>();
            long loadStarted = System.nanoTime();

            List<Callable<Void>> tasks = new ArrayList<>();
            for (BankSetChecker.Intent intent : intents) {
                tasks.add(() -> {
                    BankSetChecker.Call call = untilFinal(idem, intent, checker);
                    if (call != null) {
                        finals.put(intent.key(), call);
                        answered.incrementAndGet();
                        answeredAt.add(System.nanoTime());
                    }
                    return null;
                });
            }
            Thread killer = Thread.ofPlatform().name("failover").start(() -> {
                try {
                    while (answered.get() < INTENTS / 2) {
                        Thread.sleep(1);
                    }
                    failover.set(cluster.failover());
                } catch (InterruptedException | RuntimeException e) {
                    aborted.set(true); // no primary may be left: the clients stop instead of retrying for a minute each
                    throw new IllegalStateException("the failover failed", e);
                }
            });
            try {
                Concurrently.onThreads(CLIENTS, tasks);
            } finally {
                killer.join(TimeUnit.SECONDS.toMillis(90));
            }
            long loadMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - loadStarted);
            assertThat(failover.get())
                    .as("the primary was killed and the standby promoted (%s)", cluster.logTail(3000))
                    .isNotNull();
            assertThat(finals)
                    .as("every intent got a final answer (%s)", cluster.description())
                    .hasSize(INTENTS);

            Map<String, Object> faults = Map.of("failover", failover.get());
            Bank.Snapshot promoted = snapshot(dsl, initial);
            BankSetChecker.Report beforeResend = checker.check(promoted, faults);
            Set<String> lost = new java.util.TreeSet<>();
            Map<String, Integer> lostByKind = new TreeMap<>();
            for (BankSetChecker.Call call : finals.values()) {
                if (!promoted.claims().containsKey(call.intent().key().value())) {
                    lost.add(call.intent().key().value());
                    lostByKind.merge(call.kind().name(), 1, Integer::sum);
                }
            }

            // every client sends its key once more, as one that never saw its answer would
            Map<String, Integer> resent = new ConcurrentHashMap<>();
            AtomicInteger executedAgain = new AtomicInteger();
            AtomicInteger otherwise = new AtomicInteger();
            List<Callable<Void>> resends = new ArrayList<>();
            for (BankSetChecker.Call first : finals.values()) {
                resends.add(() -> {
                    BankSetChecker.Call again = untilFinal(idem, first.intent(), checker);
                    String how = again == null
                            ? "no answer"
                            : again.kind() == BankSetChecker.Kind.EXECUTED
                                    ? "executed again"
                                    : sameAnswer(first, again) ? "same answer" : "another answer";
                    resent.merge(how, 1, Integer::sum);
                    if (again != null && again.kind() == BankSetChecker.Kind.EXECUTED) {
                        executedAgain.incrementAndGet();
                    } else if (!"same answer".equals(how)) {
                        otherwise.incrementAndGet();
                    }
                    return null;
                });
            }
            Concurrently.onThreads(CLIENTS, resends);
            BankSetChecker.Report afterResend = checker.check(snapshot(dsl, initial), faults);

            Map<BankSetChecker.Kind, Long> firstAnswers = new TreeMap<>(finals.values().stream()
                    .collect(Collectors.groupingBy(BankSetChecker.Call::kind, Collectors.counting())));
            FailoverCluster.Failover f = failover.get();
            long[] times =
                    answeredAt.stream().mapToLong(Long::longValue).sorted().toArray();
            long gapNanos = 0;
            for (int i = 1; i < times.length; i++) {
                gapNanos = Math.max(gapNanos, times[i] - times[i - 1]);
            }
            String summary = String.format(
                    "FailoverTest[%s]: %d intents on %d clients in %d ms, the primary SIGKILLed after %d answers"
                            + " (standby %d bytes behind; kill %d ms, promotion %d ms; the longest wait between two final answers %d ms);"
                            + " first answers %s; %d calls in all%n  lost answers: %d %s; re-sent every key once: %s%n"
                            + "  before the re-send: %s%n  after the re-send: %s%n  (%d s in all, %s)",
                    replication,
                    INTENTS,
                    CLIENTS,
                    loadMillis,
                    INTENTS / 2,
                    f.standbyLagBytes(),
                    f.killMillis(),
                    f.promoteMillis(),
                    TimeUnit.NANOSECONDS.toMillis(gapNanos),
                    firstAnswers,
                    checker.history().size(),
                    lost.size(),
                    lostByKind,
                    new TreeMap<>(resent),
                    beforeResend.summary().replace("\n", "\n  "),
                    afterResend.summary().replace("\n", "\n  "),
                    TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
                    cluster.description());
            System.out.println(summary);
            return new Run(summary, lost, executedAgain.get(), otherwise.get(), beforeResend, afterResend);
        }
    }

    private static boolean sameAnswer(BankSetChecker.Call first, BankSetChecker.Call again) {
        boolean sameKind = first.kind() == again.kind()
                || (first.kind() == BankSetChecker.Kind.EXECUTED && again.kind() == BankSetChecker.Kind.REPLAYED);
        return sameKind && java.util.Objects.equals(first.value(), again.value());
    }

    /**
     * Sends the intent until it has a final answer (acknowledged or rejected), pausing briefly after
     * each failure; null if there was none within {@link #GIVE_UP_NANOS}.
     */
    private BankSetChecker.Call untilFinal(
            IdempotentTransaction<String> idem, BankSetChecker.Intent intent, BankSetChecker checker)
            throws InterruptedException {
        long deadline = System.nanoTime() + GIVE_UP_NANOS;
        while (true) {
            BankSetChecker.Call call;
            try {
                Outcome<String> outcome = idem.run(
                        scope,
                        intent.key(),
                        intent.fingerprint(),
                        tx -> Bank.transfer(tx, scope, intent.key(), intent.from(), intent.to(), intent.amount()));
                call = checker.record(intent, outcome);
            } catch (RuntimeException e) {
                call = checker.record(intent, poolWaitAsConnectionError(e));
            }
            if (call.acknowledged() || call.kind() == BankSetChecker.Kind.REJECTED) {
                return call;
            }
            if (System.nanoTime() > deadline || aborted.get()) {
                return null;
            }
            Thread.sleep(5 + ThreadLocalRandom.current().nextInt(20));
        }
    }

    /**
     * The pool's wait for a connection running out carries the SQLSTATE of the pool's last failed
     * connection attempt, or none when its last attempt succeeded just too late; without one the
     * checker would not count it as the connection failure it is (nothing was sent: the call left
     * no trace), so it gets 08001 here.
     */
    private static RuntimeException poolWaitAsConnectionError(RuntimeException e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof java.sql.SQLTransientConnectionException t && t.getSQLState() == null) {
                return new IllegalStateException(e.toString(), new java.sql.SQLException(t.getMessage(), "08001", t));
            }
        }
        return e;
    }

    private static HikariDataSource pool(FailoverCluster cluster) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(cluster.url());
        config.setUsername(cluster.user());
        config.setMaximumPoolSize(CLIENTS);
        config.setPoolName("failover-test");
        // short waits, so that calls fail fast while no primary answers and the pool refills once one does
        config.setConnectionTimeout(2_000);
        config.setValidationTimeout(1_000);
        config.addDataSourceProperty("connectTimeout", "2");
        config.addDataSourceProperty("socketTimeout", "30"); // a guard against a hang, never reached when all is well
        config.addDataSourceProperty("ApplicationName", "failover-test");
        return new HikariDataSource(config);
    }

    /** {@link Bank}'s tables, on the test's own servers. */
    private static void createBank(DSLContext dsl) {
        dsl.execute("CREATE TABLE " + Bank.ACCOUNT + " (scope text NOT NULL, id int NOT NULL, balance bigint NOT NULL,"
                + " PRIMARY KEY (scope, id))");
        dsl.execute("CREATE TABLE " + Bank.TRANSFER
                + " (id bigserial PRIMARY KEY, scope text NOT NULL, idem_key text NOT NULL,"
                + " from_account int NOT NULL, to_account int NOT NULL, amount bigint NOT NULL)");
        dsl.execute("CREATE TABLE " + Bank.POSTING
                + " (transfer_id bigint NOT NULL, account int NOT NULL, amount bigint NOT NULL)");
    }

    /** What the promoted server holds, read in one transaction; {@link Bank#snapshot} reads the shared database. */
    private Bank.Snapshot snapshot(DSLContext dsl, Map<Integer, Long> initial) {
        return dsl.transactionResult(cfg -> {
            DSLContext tx = cfg.dsl();
            tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
            Map<Integer, Long> balances = new TreeMap<>();
            tx.resultQuery("SELECT id, balance FROM " + Bank.ACCOUNT + " WHERE scope = ?", scope.value())
                    .forEach(r -> balances.put(r.get(0, Integer.class), r.get(1, Long.class)));
            List<Bank.TransferRow> transfers = new ArrayList<>();
            tx.resultQuery(
                            "SELECT id, idem_key, from_account, to_account, amount FROM " + Bank.TRANSFER
                                    + " WHERE scope = ?",
                            scope.value())
                    .forEach(r -> transfers.add(new Bank.TransferRow(
                            r.get(0, Long.class),
                            r.get(1, String.class),
                            r.get(2, Integer.class),
                            r.get(3, Integer.class),
                            r.get(4, Long.class))));
            List<Bank.PostingRow> postings = new ArrayList<>();
            tx.resultQuery("SELECT transfer_id, account, amount FROM " + Bank.POSTING)
                    .forEach(r -> postings.add(
                            new Bank.PostingRow(r.get(0, Long.class), r.get(1, Integer.class), r.get(2, Long.class))));
            Map<String, Bank.ClaimRow> claims = new HashMap<>();
            tx.resultQuery(
                            "SELECT idem_key, state, fingerprint FROM " + Db.SCHEMA
                                    + ".idempotency_claim WHERE scope = ?",
                            scope.value())
                    .forEach(r -> claims.put(
                            r.get(0, String.class),
                            new Bank.ClaimRow(r.get(0, String.class), r.get(1, Short.class), r.get(2, byte[].class))));
            return new Bank.Snapshot(Map.copyOf(initial), balances, transfers, postings, claims);
        });
    }
}
