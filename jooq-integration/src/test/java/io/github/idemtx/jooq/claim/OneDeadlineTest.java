package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.internal.store.StatementKind;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code duplicateWait} bounds everything one call spends waiting on other holders, across the
 * holders of a chain, the retries a strict isolation level forces after each wait, and attempts:
 * behind a chain of holders longer than the bound, the call answers {@code InProgress} close to the
 * bound, never {@code RetriesExhaustedException} for waiting alone.
 */
@DatabaseTest
class OneDeadlineTest {

    private static final Duration WAIT = Duration.ofMillis(1000);
    private static final long HOLD_MS = 250;
    private static final int HOLDERS = 12; // 3 s of holders, three times the bound

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"TRANSACTION_READ_COMMITTED", "TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void theWaitIsBoundOncePerCallBehindAChainOfHolders(String isolation) throws Exception {
        assumeFalse(
                Db.DATABASE.throughPgBouncer() && !isolation.endsWith("READ_COMMITTED"),
                "a session's isolation level does not belong behind a transaction-mode pooler");
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        Fingerprint fingerprint = Db.fingerprint("chain");
        long lockId = io.github.idemtx.jooq.internal.store.Digests.lockId(scope.value(), key.value());

        List<Connection> holders = new ArrayList<>();
        ExecutorService threads = Executors.newCachedThreadPool();
        try (HikariDataSource pool = Db.DATABASE.newPool(2, c -> c.setTransactionIsolation(isolation))) {
            IdempotentTransaction<String> waiter = Db.claimFirst(
                            DSL.using(pool, SQLDialect.POSTGRES), ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .policy(IdempotencyPolicy.builder().duplicateWait(WAIT).build())
                    .build();
            holders.add(holdLock(lockId));

            long start = System.nanoTime();
            Future<Outcome<String>> call = threads.submit(() -> waiter.run(scope, key, fingerprint, tx -> "ran"));
            for (int i = 1; i < HOLDERS && !call.isDone(); i++) {
                if (!Db.DATABASE.awaitLockWaitersUnless(Faults.running(StatementKind.AWAIT), 1, call::isDone)) {
                    break; // the call has returned
                }
                // the next holder queues behind the waiter, so it takes the key the moment the waiter wakes
                Connection next = Db.DATABASE.connect();
                next.setAutoCommit(false);
                holders.add(next);
                Future<?> queued = threads.submit(() -> lock(next, lockId));
                Db.DATABASE.awaitLockWaiters("query LIKE '%chain-holder%'", 1);
                Thread.sleep(HOLD_MS);
                holders.get(i - 1).rollback(); // this holder failed transiently: the key is free, the next takes it
                queued.get(30, TimeUnit.SECONDS);
            }
            Outcome<String> outcome = call.get(30, TimeUnit.SECONDS);
            long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

            assertThat(outcome).as("past the bound, with holders still coming").isInstanceOf(Outcome.InProgress.class);
            assertThat(elapsedMs)
                    .as("one bound for the call, not one per attempt (holders went on for %d ms)", HOLDERS * HOLD_MS)
                    .isGreaterThanOrEqualTo(WAIT.toMillis() - 50)
                    .isLessThan(WAIT.toMillis() + 900);
        } finally {
            for (Connection c : holders) {
                c.rollback();
                c.close();
            }
            threads.shutdownNow();
        }
        assertThat(Db.claims(scope, key)).isZero();
    }

    private static Connection holdLock(long lockId) throws SQLException {
        Connection c = Db.DATABASE.connect();
        c.setAutoCommit(false);
        lock(c, lockId);
        return c;
    }

    private static Void lock(Connection c, long lockId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("select pg_advisory_xact_lock(?) /* chain-holder */")) {
            ps.setLong(1, lockId);
            ps.execute();
        }
        return null;
    }
}
