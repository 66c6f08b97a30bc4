package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.RetriesExhaustedException;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.support.Bank;
import io.github.idemtx.jooq.support.BankSetChecker;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.RandomSqlFaults;
import io.github.idemtx.jooq.support.SqlHook;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Serialization failures and deadlocks, injected at random statements and produced for real by
 * conflicting transfers under REPEATABLE READ and SERIALIZABLE: every key takes effect at most
 * once, exactly once when acknowledged; no call makes more attempts than the policy allows; and a
 * call whose budget is spent ends in {@link RetriesExhaustedException}, having left no effect and
 * no claim.
 */
@DatabaseTest
class SerializationFaultsTest {

    /**
     * Counts, per thread, the attempts of the current call: each attempt starts with the claim
     * statement (in WORK_FIRST: with the statement that opens its transaction, see
     * {@link Faults#beginsAttempt}). A rejection is recorded after a second claim within the same attempt; the work
     * reports its rejections with {@link #rejecting()}, so that claim is not counted.
     */
    static final class Attempts implements SqlHook {
        private final ThreadLocal<int[]> count = ThreadLocal.withInitial(() -> new int[3]);

        @Override
        public void before(Sql sql) {
            if (Db.workFirst()) {
                if (Faults.beginsAttempt(sql)) {
                    int[] c = count.get();
                    if (c[2] == 1) {
                        c[2] = 0; // a new attempt after a wait that ended past the snapshot (the failure's re-claim):
                        // not counted
                    } else {
                        c[0]++;
                    }
                }
            } else if (Faults.isClaim(sql.sql())) {
                int[] c = count.get();
                if (c[1] == 1) {
                    c[1] = 0; // the claim that records the rejection
                } else if (c[2] == 1) {
                    c[2] = 0; // the claim again after a wait that ended past the snapshot: not an attempt
                } else {
                    c[0]++;
                }
            }
        }

        @Override
        public void failed(Sql sql, SQLException error) {
            if (Faults.isAwait(sql.sql()) && "40001".equals(error.getSQLState())) {
                count.get()[2] = 1;
            }
        }

        /** The work is about to throw a rejection. */
        void rejecting() {
            count.get()[1] = 1;
        }

        void reset() {
            int[] c = count.get();
            c[0] = 0;
            c[1] = 0;
            c[2] = 0;
        }

        int get() {
            return count.get()[0];
        }
    }

    /**
     * Counts the serialization failures and deadlocks PostgreSQL reported for the work's statements
     * and the record (not those of idempotency_await, which under strict isolation gives up with
     * 40001 whenever a duplicate had to wait, whether or not the transfers conflict).
     */
    static final class RealFailures implements SqlHook {
        final Map<String, AtomicInteger> byState = new ConcurrentHashMap<>();

        @Override
        public void failed(Sql sql, SQLException error) {
            if (error.getSQLState() != null && !Faults.isAwait(sql.sql())) {
                byState.computeIfAbsent(error.getSQLState(), s -> new AtomicInteger())
                        .incrementAndGet();
            }
        }

        int count(String state) {
            AtomicInteger n = byState.get(state);
            return n == null ? 0 : n.get();
        }
    }

    private static final IdempotentTransaction<String> HEALTHY =
            Db.pinnedBuilder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();

    @Test
    void failuresInjectedAtRandomStatementsTakeEffectOnceAndNeverExceedTheRetryBudget() throws Exception {
        int maxAttempts = 3;
        int keys = 300;
        Scope scope = Db.freshScope();
        Attempts attempts = new Attempts();
        RandomSqlFaults faults = new RandomSqlFaults(0.12);
        DSLContext dsl = SqlHook.around(Db.dsl(), attempts, faults);
        IdempotentTransaction<String> idem = Db.pinnedBuilder(dsl, ResultCodec.utf8())
                .policy(IdempotencyPolicy.builder()
                        .maxAttempts(maxAttempts)
                        .backoff(Duration.ofMillis(1), Duration.ofMillis(4))
                        .build())
                .schema(Db.SCHEMA)
                .build();
        Map<String, Integer> outcomes = new ConcurrentHashMap<>();
        AtomicInteger wrapped = new AtomicInteger();

        List<Callable<Void>> tasks = new ArrayList<>();
        for (int k = 0; k < keys; k++) {
            IdempotencyKey key = Db.freshKey();
            tasks.add(() -> {
                String acknowledged = null;
                for (int call = 0; call < 2; call++) { // the call, then the client's duplicate
                    AtomicInteger runs = new AtomicInteger();
                    attempts.reset();
                    Outcome<String> outcome;
                    try {
                        outcome = idem.run(scope, key, Db.fingerprint("inject"), tx -> {
                            runs.incrementAndGet();
                            try {
                                long id = Db.writeEffect(tx, scope, key, "x");
                                tx.resultQuery(
                                                "select count(*) from " + Db.SCHEMA + ".effect where scope = ?",
                                                scope.value())
                                        .fetch();
                                return "effect-" + id;
                            } catch (DataAccessException e) {
                                if (ThreadLocalRandom.current().nextInt(3) == 0) {
                                    wrapped.incrementAndGet();
                                    throw new IllegalStateException("the repository failed", e); // still retryable
                                }
                                throw e;
                            }
                        });
                    } catch (RetriesExhaustedException e) {
                        outcomes.merge("exhausted", 1, Integer::sum);
                        assertThat(e.attempts()).isEqualTo(maxAttempts);
                        assertThat(attempts.get()).as("attempts made").isEqualTo(maxAttempts);
                        assertThat(e)
                                .hasMessageContaining("gave up after " + maxAttempts + " attempts")
                                .hasMessageContaining("maxAttempts")
                                .hasMessageContaining("nothing was committed");
                        assertThat(e.key()).isEqualTo(key);
                        assertThat(SqlStates.isRetryable(e.getCause()))
                                .as("the cause is the last 40001/40P01")
                                .isTrue();
                        if (acknowledged == null) {
                            assertThat(Db.effects(scope, key))
                                    .as("an exhausted call leaves no effect")
                                    .isZero();
                            assertThat(Db.claims(scope, key)).as("and no claim").isZero();
                        }
                        continue;
                    }
                    assertThat(attempts.get()).as("attempts made").isBetween(1, maxAttempts);
                    assertThat(runs.get()).isLessThanOrEqualTo(attempts.get());
                    if (acknowledged == null) {
                        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
                        acknowledged = ((Outcome.Executed<String>) outcome).value();
                        outcomes.merge("executed", 1, Integer::sum);
                    } else {
                        String first = acknowledged;
                        assertThat(outcome)
                                .isInstanceOfSatisfying(
                                        Outcome.Replayed.class,
                                        r -> assertThat(r.value()).isEqualTo(first));
                        if (!Db.workFirst()) {
                            assertThat(runs).hasValue(0); // WORK_FIRST runs it, within the attempts, and rolls it back
                        }
                        outcomes.merge("replayed", 1, Integer::sum);
                    }
                    assertThat(Db.effects(scope, key)).isEqualTo(1);
                    assertThat(Db.claims(scope, key)).isEqualTo(1);
                }
                // no faults now: a key still free runs once, a completed one replays what it answered
                Outcome<String> last = HEALTHY.run(
                        scope, key, Db.fingerprint("inject"), tx -> "effect-" + Db.writeEffect(tx, scope, key, "late"));
                if (acknowledged == null) {
                    assertThat(last).isInstanceOf(Outcome.Executed.class);
                } else {
                    String first = acknowledged;
                    assertThat(last)
                            .isInstanceOfSatisfying(
                                    Outcome.Replayed.class,
                                    r -> assertThat(r.value()).isEqualTo(first));
                }
                assertThat(Db.effects(scope, key)).isEqualTo(1);
                return null;
            });
        }
        Concurrently.onThreads(4, tasks);

        assertThat(Db.effects(scope)).isEqualTo(keys);
        assertThat(Db.claims(scope)).isEqualTo(keys);
        System.out.printf(
                "injected at random: %d calls over %d keys with maxAttempts %d: %s; %d failures injected %s,"
                        + " %d of them wrapped by the work%n",
                2 * keys, keys, maxAttempts, new TreeMap<>(outcomes), faults.total(), faults.injected(), wrapped.get());
        assertThat(outcomes.get("exhausted")).as("the budget ran out sometimes").isPositive();
    }

    @ParameterizedTest
    @ValueSource(strings = {"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void conflictingTransfersUnderStrictIsolationConserveMoneyAndTakeEffectOncePerKey(String isolation)
            throws Exception {
        int maxAttempts = 3;
        Scope scope = Db.freshScope();
        Map<Integer, Long> initial = Bank.open(scope, 4, 200);
        Attempts attempts = new Attempts();
        RealFailures real = new RealFailures();
        Set<String> isolationsSeen = ConcurrentHashMap.newKeySet();
        boolean superuser = Db.dsl()
                .resultQuery("select rolsuper from pg_roles where rolname = current_user")
                .fetchSingle()
                .get(0, Boolean.class);
        try (HikariDataSource pool = Db.DATABASE.newPool(8, config -> {
            config.setPoolName("conflicts-" + isolation);
            config.setTransactionIsolation(isolation);
            if (superuser) {
                config.setConnectionInitSql("SET deadlock_timeout = '20ms'"); // find the real deadlocks sooner
            }
        })) {
            DSLContext dsl = SqlHook.around(DSL.using(pool, SQLDialect.POSTGRES), attempts, real);
            IdempotentTransaction<String> strict = Db.pinnedBuilder(dsl, ResultCodec.utf8())
                    .policy(IdempotencyPolicy.builder()
                            .maxAttempts(maxAttempts)
                            .backoff(Duration.ofMillis(1), Duration.ofMillis(5))
                            .build())
                    .schema(Db.SCHEMA)
                    .build();
            BankSetChecker checker = new BankSetChecker();

            List<BankSetChecker.Intent> intents = new ArrayList<>();
            for (int i = 0; i < 250; i++) {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                int from = random.nextInt(4);
                int to = (from + 1 + random.nextInt(3)) % 4;
                intents.add(new BankSetChecker.Intent(Db.freshKey(), from, to, 1 + random.nextInt(40)));
            }
            List<Callable<Void>> tasks = new ArrayList<>();
            for (BankSetChecker.Intent intent : intents) {
                int copies = ThreadLocalRandom.current().nextInt(10) < 3 ? 2 : 1; // concurrent duplicates
                for (int c = 0; c < copies; c++) {
                    tasks.add(() -> {
                        attempts.reset();
                        try {
                            checker.record(intent, strict.run(scope, intent.key(), intent.fingerprint(), tx -> {
                                isolationsSeen.add(tx.resultQuery("show transaction_isolation")
                                        .fetchSingle()
                                        .get(0, String.class));
                                try {
                                    return Bank.readModifyWrite(
                                            tx, scope, intent.key(), intent.from(), intent.to(), intent.amount());
                                } catch (io.github.idemtx.core.Rejection r) {
                                    attempts.rejecting();
                                    throw r;
                                }
                            }));
                            assertThat(attempts.get()).isBetween(1, maxAttempts);
                        } catch (RetriesExhaustedException e) {
                            checker.record(intent, e);
                            assertThat(attempts.get()).isEqualTo(maxAttempts);
                            assertThat(e.attempts()).isEqualTo(maxAttempts);
                        }
                        return null;
                    });
                }
            }
            java.util.Collections.shuffle(tasks);
            Concurrently.onThreads(8, tasks);

            BankSetChecker.Report first = checker.check(Bank.snapshot(scope, initial), Map.of());
            System.out.println(isolation + ", maxAttempts " + maxAttempts + ", real failures " + real.byState + ":\n"
                    + first.summary());
            assertThat(first.violations()).isEmpty();
            assertThat(isolationsSeen)
                    .containsExactly(isolation.equals("TRANSACTION_SERIALIZABLE") ? "serializable" : "repeatable read");
            assertThat(real.count("40001"))
                    .as("the transfers really conflicted")
                    .isPositive();

            // the keys whose budget ran out are free: with a patient policy every one of them takes effect now
            IdempotentTransaction<String> patient = Db.pinnedBuilder(dsl, ResultCodec.utf8())
                    .policy(IdempotencyPolicy.builder()
                            .maxAttempts(100)
                            .backoff(Duration.ofMillis(1), Duration.ofMillis(20))
                            .build())
                    .schema(Db.SCHEMA)
                    .build();
            Set<String> settled = ConcurrentHashMap.newKeySet();
            checker.history().stream()
                    .filter(c -> c.acknowledged() || c.kind() == BankSetChecker.Kind.REJECTED)
                    .forEach(c -> settled.add(c.intent().key().value()));
            List<Callable<Void>> retries = new ArrayList<>();
            for (BankSetChecker.Intent intent : intents) {
                if (!settled.contains(intent.key().value())) {
                    retries.add(() -> {
                        checker.record(
                                intent,
                                patient.run(
                                        scope,
                                        intent.key(),
                                        intent.fingerprint(),
                                        tx -> Bank.readModifyWrite(
                                                tx, scope, intent.key(), intent.from(), intent.to(), intent.amount())));
                        return null;
                    });
                }
            }
            Concurrently.onThreads(4, retries);
            BankSetChecker.Report last = checker.check(Bank.snapshot(scope, initial), Map.of());
            System.out.println("after retrying the " + retries.size() + " exhausted keys with a patient policy:\n"
                    + last.summary());
            assertThat(last.violations()).isEmpty();
            long unsettled = intents.stream()
                    .filter(i -> checker.history().stream()
                            .noneMatch(c -> c.intent().equals(i)
                                    && (c.acknowledged() || c.kind() == BankSetChecker.Kind.REJECTED)))
                    .count();
            assertThat(unsettled).as("every intent has a final answer").isZero();
        }
    }
}
