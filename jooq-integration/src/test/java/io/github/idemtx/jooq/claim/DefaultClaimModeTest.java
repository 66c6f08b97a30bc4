package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionalWork;
import io.github.idemtx.jooq.support.Db;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The promises of the default claim order, on an instance built with no claim mode set, as a user
 * builds it: on a HikariCP pool with auto-commit on and with it off, a retry of a completed key never
 * runs the work, and a duplicate of a call still running whose work would lock the rows the first
 * call holds is answered {@code InProgress} within {@code duplicateWait}, without running its work and
 * without waiting for those locks. The executions that run this module in another mode leave this
 * class out: it states its mode by stating none.
 */
@DatabaseTest
class DefaultClaimModeTest {

    private static final String ACCOUNT = Db.SCHEMA + ".default_mode_account";
    private static final AtomicInteger NEXT_ACCOUNT = new AtomicInteger((int) (System.nanoTime() & 0xFFFFF));

    private static HikariDataSource autoCommitOn;
    private static HikariDataSource autoCommitOff;

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("transfer 10 from A to B");

    @BeforeAll
    static void pools() {
        autoCommitOn = Db.DATABASE.newPool(8, c -> c.setAutoCommit(true));
        autoCommitOff = Db.DATABASE.newPool(8, c -> c.setAutoCommit(false));
        Db.DSL_CONTEXT.execute("CREATE TABLE IF NOT EXISTS " + ACCOUNT + " (id int PRIMARY KEY, balance int NOT NULL)");
    }

    @AfterAll
    static void close() {
        autoCommitOn.close();
        autoCommitOff.close();
    }

    private static DSLContext dsl(boolean autoCommit) {
        return DSL.using(autoCommit ? autoCommitOn : autoCommitOff, SQLDialect.POSTGRES);
    }

    /** As a user builds it: no claim mode set (the layout is the test run's, not a mode). */
    private static IdempotentTransaction<String> byDefault(boolean autoCommit, IdempotencyPolicy policy) {
        return Db.layout(IdempotentTransaction.builder(dsl(autoCommit), ResultCodec.utf8())
                        .schema(Db.SCHEMA)
                        .policy(policy))
                .build();
    }

    @Test
    void theDefaultIsClaimFirstInTheBuilderAndInCreate() {
        assertThat(IdempotentTransaction.DEFAULT_CLAIM_MODE).isEqualTo(ClaimMode.CLAIM_FIRST);
        assertThat(IdempotentTransaction.create(Db.dsl(), IdempotencyPolicy.defaults(), ResultCodec.utf8())
                        .claimMode())
                .isEqualTo(ClaimMode.CLAIM_FIRST);
        assertThat(IdempotentTransaction.builder(Db.dsl(), ResultCodec.utf8())
                        .build()
                        .claimMode())
                .isEqualTo(ClaimMode.CLAIM_FIRST);
    }

    @Test
    @SuppressWarnings("removal") // the deprecated name is what this test is about
    void theDeprecatedReadFirstIsClaimFirst() {
        assertThat(IdempotentTransaction.builder(Db.dsl(), ResultCodec.utf8())
                        .claimMode(ClaimMode.READ_FIRST)
                        .build()
                        .claimMode())
                .isEqualTo(ClaimMode.CLAIM_FIRST);
    }

    @ParameterizedTest(name = "auto-commit {0}")
    @ValueSource(booleans = {true, false})
    void aRetryOfACompletedKeyNeverRunsTheWork(boolean autoCommit) {
        IdempotentTransaction<String> transfers = byDefault(autoCommit, IdempotencyPolicy.defaults());
        AtomicInteger runs = new AtomicInteger();
        TransactionalWork<String> work = tx -> {
            runs.incrementAndGet();
            return "transfer-" + Db.writeEffect(tx, scope, key, "transfer");
        };

        Outcome<String> first = transfers.run(scope, key, fingerprint, work);
        assertThat(first).isInstanceOf(Outcome.Executed.class);
        String answer = ((Outcome.Executed<String>) first).value();

        // more retries than the adaptive order needs to switch (it ran the work 10-73 times in 600)
        for (int retry = 0; retry < 300; retry++) {
            assertThat(transfers.run(scope, key, fingerprint, work))
                    .as("retry %d", retry)
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(answer));
        }
        assertThat(runs).as("the work's invocations").hasValue(1);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(transfers.run(scope, key, Db.fingerprint("another request"), work))
                .isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(runs).as("a mismatch runs nothing either").hasValue(1);
    }

    @ParameterizedTest(name = "auto-commit {0}")
    @ValueSource(booleans = {true, false})
    void aDuplicateOfACallInFlightIsAnsweredInProgressWithoutWaitingForTheRowsItsWorkWouldLock(boolean autoCommit)
            throws Exception {
        int account = NEXT_ACCOUNT.incrementAndGet();
        Db.DSL_CONTEXT.execute("INSERT INTO " + ACCOUNT + " (id, balance) VALUES (?, 100)", account);
        Duration duplicateWait = Duration.ofMillis(300);
        Duration retryAfter = Duration.ofSeconds(3);
        IdempotentTransaction<String> transfers = byDefault(
                autoCommit,
                IdempotencyPolicy.builder()
                        .duplicateWait(duplicateWait)
                        .retryAfter(retryAfter)
                        .build());
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch answered = new CountDownLatch(1);
        TransactionalWork<String> transfer = tx -> {
            runs.incrementAndGet();
            tx.execute("UPDATE " + ACCOUNT + " SET balance = balance - 10 WHERE id = ?", account);
            holding.countDown();
            // the first call holds the account's row lock until the duplicate has its answer: a
            // duplicate that waited on that lock would never get one (and time out below)
            answered.await(60, TimeUnit.SECONDS);
            return "transfer-" + account;
        };
        ExecutorService calls = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome<String>> first = calls.submit(() -> transfers.run(scope, key, fingerprint, transfer));
            assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();

            Future<Outcome<String>> duplicate = calls.submit(() -> transfers.run(scope, key, fingerprint, transfer));
            Outcome<String> answer;
            try {
                answer = duplicate.get(30, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("the duplicate waited on the first call's row lock instead of answering"
                        + " InProgress within duplicateWait (" + duplicateWait + ")");
            } finally {
                answered.countDown();
            }

            assertThat(answer).isEqualTo(new Outcome.InProgress<String>(retryAfter));
            assertThat(first.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            assertThat(runs).as("the duplicate's work never ran").hasValue(1);
            assertThat(transfers.run(scope, key, fingerprint, transfer))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("transfer-" + account));
            assertThat(runs).hasValue(1);
            assertThat(Db.DSL_CONTEXT
                            .resultQuery("SELECT balance FROM " + ACCOUNT + " WHERE id = ?", account)
                            .fetchSingle()
                            .get(0, Integer.class))
                    .as("one transfer")
                    .isEqualTo(90);
        } finally {
            answered.countDown();
            calls.shutdownNow();
        }
    }
}
