package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.RetriesExhaustedException;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.SqlHook;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;

@DatabaseTest
class RetryTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("retry me");
    private final IdempotencyPolicy fastRetries = IdempotencyPolicy.builder()
            .maxAttempts(4)
            .backoff(Duration.ofMillis(1), Duration.ofMillis(5))
            .build();

    /** Fails the statements {@code target} selects with {@code sqlState}, for the given occurrences (1-based). */
    static final class Injector implements SqlHook {
        private final Predicate<String> target;
        private final String sqlState;
        private final Predicate<Integer> failOccurrence;
        final AtomicInteger seen = new AtomicInteger();
        final AtomicInteger injected = new AtomicInteger();

        Injector(Predicate<String> target, String sqlState, Predicate<Integer> failOccurrence) {
            this.target = target;
            this.sqlState = sqlState;
            this.failOccurrence = failOccurrence;
        }

        @Override
        public void before(Sql sql) throws SQLException {
            if (target.test(sql.sql()) && failOccurrence.test(seen.incrementAndGet())) {
                injected.incrementAndGet();
                throw new SQLException("injected failure", sqlState);
            }
        }
    }

    private static DSLContext with(SqlHook... hooks) {
        return SqlHook.around(Db.dsl(), hooks);
    }

    private static boolean isWorkInsert(String sql) {
        return io.github.idemtx.jooq.internal.store.StatementKind.of(sql) == null && sql.contains(".effect");
    }

    @Test
    void retriesSerializationFailuresAndDeadlocksAtAnyStatementAndTakesEffectOnce() {
        Injector inWork = new Injector(RetryTest::isWorkInsert, "40001", n -> n == 1);
        Injector atCompletion = new Injector(Faults::isRecord, "40P01", n -> n == 1);
        Injector atClaim = new Injector(Faults::isClaim, "40001", n -> n == 3);
        IdempotentTransaction<String> idem = Db.builder(with(inWork, atCompletion, atClaim), ResultCodec.utf8())
                .policy(fastRetries)
                .schema(Db.SCHEMA)
                .build();
        AtomicInteger runs = new AtomicInteger();

        Outcome<String> outcome = idem.run(scope, key, fingerprint, tx -> {
            runs.incrementAndGet();
            return "effect-" + Db.writeEffect(tx, scope, key, "x");
        });

        // attempt 1 fails in the work, 2 at completion, 3 at the claim, 4 succeeds; WORK_FIRST sends no
        // claim before the work: attempt 3 succeeds
        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(inWork.injected.get() + atCompletion.injected.get() + atClaim.injected.get())
                .isEqualTo(Db.workFirst() ? 2 : 3);
        assertThat(runs).hasValue(3);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void givesUpWhenTheBudgetIsSpentWithAnErrorSayingHowManyAttemptsAndLeavesNothing() {
        Injector always = new Injector(RetryTest::isWorkInsert, "40001", n -> true);
        IdempotentTransaction<String> idem = Db.builder(with(always), ResultCodec.utf8())
                .policy(fastRetries.toBuilder().maxAttempts(3).build())
                .schema(Db.SCHEMA)
                .build();
        AtomicInteger runs = new AtomicInteger();

        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    runs.incrementAndGet();
                    return "effect-" + Db.writeEffect(tx, scope, key, "x");
                }))
                .isInstanceOfSatisfying(RetriesExhaustedException.class, e -> {
                    assertThat(e.attempts()).isEqualTo(3);
                    assertThat(e.scope()).isEqualTo(scope);
                    assertThat(e.key()).isEqualTo(key);
                })
                .hasMessageContaining("3 attempts")
                .hasMessageContaining("nothing was committed")
                .hasCauseInstanceOf(DataAccessException.class);
        assertThat(runs).hasValue(3);
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();

        IdempotentTransaction<String> healthy =
                Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        assertThat(healthy.run(scope, key, fingerprint, tx -> "now")).isEqualTo(new Outcome.Executed<>("now"));
    }

    @Test
    void retriesASerializationFailureTheWorkWrappedInItsOwnException() {
        Injector once = new Injector(RetryTest::isWorkInsert, "40001", n -> n == 1);
        IdempotentTransaction<String> idem = Db.builder(with(once), ResultCodec.utf8())
                .policy(fastRetries)
                .schema(Db.SCHEMA)
                .build();

        Outcome<String> outcome = idem.run(scope, key, fingerprint, tx -> {
            try {
                return "effect-" + Db.writeEffect(tx, scope, key, "x");
            } catch (DataAccessException e) {
                throw new IllegalStateException("repository failed", e);
            }
        });

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void doesNotRetryOtherDatabaseErrors() {
        Injector uniqueViolation = new Injector(RetryTest::isWorkInsert, "23505", n -> true);
        IdempotentTransaction<String> idem = Db.builder(with(uniqueViolation), ResultCodec.utf8())
                .policy(fastRetries)
                .schema(Db.SCHEMA)
                .build();

        assertThatThrownBy(
                        () -> idem.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x")))
                .isInstanceOf(DataAccessException.class);
        assertThat(uniqueViolation.injected).hasValue(1);
        assertThat(Db.claims(scope, key)).isZero();
    }

    @Test
    void aRealSerializationFailureUnderSerializableIsRetriedToExactlyOneEffect() throws Exception {
        // Every call reads the count of effects in its scope and writes one more: under SERIALIZABLE
        // concurrent calls conflict (40001), and the retries must still leave one effect per key.
        // Each attempt's transaction is made SERIALIZABLE just before the claim opens it (Faults.isolationAtBegin).
        // The first two originals to read the count wait for each other before they write: a write skew,
        // which SERIALIZABLE always breaks with a 40001, however the threads happen to be scheduled.
        AtomicInteger serializationFailures = new AtomicInteger();
        DSLContext serializable = with(Faults.isolationAtBegin("SERIALIZABLE"), new SqlHook() {
            @Override
            public void failed(Sql sql, SQLException error) {
                // not idempotency_await's: under SERIALIZABLE it gives up with 40001 whenever a duplicate waited
                if ("40001".equals(error.getSQLState()) && !Faults.isAwait(sql.sql())) {
                    serializationFailures.incrementAndGet();
                }
            }
        });
        IdempotentTransaction<String> idem = Db.builder(serializable, ResultCodec.utf8())
                .policy(IdempotencyPolicy.builder()
                        .maxAttempts(50)
                        .backoff(Duration.ofMillis(1), Duration.ofMillis(20))
                        .build())
                .schema(Db.SCHEMA)
                .build();
        java.util.List<IdempotencyKey> keys =
                java.util.stream.Stream.generate(Db::freshKey).limit(8).toList();

        java.util.concurrent.CountDownLatch bothRead = new java.util.concurrent.CountDownLatch(2);
        java.util.List<java.util.concurrent.Callable<Outcome<String>>> tasks = new java.util.ArrayList<>();
        for (IdempotencyKey k : keys) {
            for (int copy = 0; copy < 2; copy++) {
                boolean original = copy == 0; // two keys' originals pair up, never a key with its duplicate
                tasks.add(() -> idem.run(scope, k, fingerprint, tx -> {
                    int seen = tx.resultQuery(
                                    "select count(*)::int from " + Db.SCHEMA + ".effect where scope = ?", scope.value())
                            .fetchSingle()
                            .get(0, Integer.class);
                    if (original) {
                        bothRead.countDown();
                        try {
                            bothRead.await(30, java.util.concurrent.TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new IllegalStateException(e);
                        }
                    }
                    return "seen-" + seen + "-effect-" + Db.writeEffect(tx, scope, k, "serializable");
                }));
            }
        }
        java.util.List<Concurrently.Result<Outcome<String>>> results = Concurrently.run(tasks);
        assertThat(results).extracting(Concurrently.Result::error).containsOnlyNulls();
        assertThat(serializationFailures)
                .as("the scenario produced real serialization failures")
                .hasPositiveValue();
        for (IdempotencyKey k : keys) {
            assertThat(Db.effects(scope, k)).isEqualTo(1);
        }
    }
}
