package io.github.idemtx.jooq.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Backends;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.SqlHook;
import java.util.EnumMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The backend serving a {@code run} is terminated ({@code pg_terminate_backend}) at each point of
 * the call: before the claim, after the claim, after the work's writes, and while the completion
 * and its COMMIT are in flight. A retry with the same key then replays or executes, and the effect
 * exists exactly once. Every call gets a session of its own (no pool), so a killed backend never
 * serves a later call.
 */
@DatabaseTest
class BackendTerminationTest {

    private static final int ITERATIONS = 80;
    private static final int ITERATIONS_IN_FLIGHT = 200;

    enum Point {
        BEFORE_CLAIM,
        AFTER_CLAIM,
        AFTER_WORK,
        COMMIT_IN_FLIGHT
    }

    /** Where a kill during the completion landed, as the client and the database tell afterwards. */
    enum Landed {
        BEFORE_COMMIT,
        AFTER_COMMIT_ANSWER_LOST,
        AFTER_THE_ANSWER
    }

    private static Backends killer;
    private static ExecutorService killerThread;
    private static final Trap TRAP = new Trap();
    private static IdempotentTransaction<String> idem;
    /** The retries: the shared pool, as a client's next attempt would come through a healthy connection. */
    private static final IdempotentTransaction<String> RETRY =
            Db.pinnedBuilder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();

    private static long completionNanos;

    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("kill me");

    /** Kills the backend of the call at the point it is armed for, once. */
    static final class Trap implements SqlHook {
        final AtomicReference<Point> armed = new AtomicReference<>();
        volatile long delayNanos;
        volatile Future<Boolean> asyncKill;
        volatile long completionStarted;
        volatile long completionEnded;
        /** The statement now running began the attempt: kill after it (AFTER_CLAIM). */
        private final ThreadLocal<Boolean> killAfter = new ThreadLocal<>();

        @Override
        public void before(Sql statement) {
            String sql = statement.sql();
            boolean begins = Faults.beginsAttempt(statement);
            if (begins && armed.get() == Point.AFTER_CLAIM) {
                killAfter.set(Boolean.TRUE);
            }
            if (begins && armed.compareAndSet(Point.BEFORE_CLAIM, null)) {
                killer.kill(Backends.pid(statement.connection()));
            } else if (Faults.isCompletionAndCommit(sql)) {
                completionStarted = System.nanoTime();
                if (armed.compareAndSet(Point.AFTER_WORK, null)) {
                    // the work has returned, its writes are done; the completion is not sent yet
                    killer.kill(Backends.pid(statement.connection()));
                } else if (armed.compareAndSet(Point.COMMIT_IN_FLIGHT, null)) {
                    int pid = Backends.pid(statement.connection());
                    long at = System.nanoTime() + delayNanos;
                    asyncKill = killerThread.submit(() -> {
                        while (System.nanoTime() < at) {
                            Thread.onSpinWait();
                        }
                        return killer.signal(pid);
                    });
                }
            }
        }

        @Override
        public void after(Sql statement) {
            String sql = statement.sql();
            if (Boolean.TRUE.equals(killAfter.get()) && armed.compareAndSet(Point.AFTER_CLAIM, null)) {
                killAfter.remove();
                killer.kill(Backends.pid(statement.connection()));
            } else if (Faults.isCompletionAndCommit(sql)) {
                completionEnded = System.nanoTime();
            }
        }
    }

    @BeforeAll
    static void setUp() throws java.sql.SQLException {
        killer = new Backends(Db.DATABASE.connect());
        killerThread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "backend-killer");
            t.setDaemon(true);
            return t;
        });
        DSLContext dsl =
                SqlHook.around(DSL.using(Faults.unpooled(Faults.applicationName("kill")), SQLDialect.POSTGRES), TRAP);
        idem = Db.pinnedBuilder(dsl, ResultCodec.utf8()).schema(Db.SCHEMA).build();

        // how long the completion and its COMMIT take here, to spread the in-flight kills over it
        Scope warmUp = Db.freshScope();
        long[] samples = new long[30];
        for (int i = 0; i < samples.length; i++) {
            IdempotencyKey key = Db.freshKey();
            idem.run(
                    warmUp,
                    key,
                    Db.fingerprint("warm-up"),
                    tx -> "effect-" + Db.writeEffect(tx, warmUp, key, "warm-up"));
            samples[i] = TRAP.completionEnded - TRAP.completionStarted;
        }
        java.util.Arrays.sort(samples);
        completionNanos = samples[samples.length / 2];
    }

    @AfterAll
    static void tearDown() throws Exception {
        killerThread.shutdownNow();
        killer.close();
    }

    private Outcome<String> call(IdempotencyKey key, AtomicInteger runs) {
        return call(idem, key, runs);
    }

    private Outcome<String> retry(IdempotencyKey key, AtomicInteger runs) {
        return call(RETRY, key, runs);
    }

    private Outcome<String> call(IdempotentTransaction<String> idem, IdempotencyKey key, AtomicInteger runs) {
        return idem.run(scope, key, fingerprint, tx -> {
            runs.incrementAndGet();
            return "effect-" + Db.writeEffect(tx, scope, key, "x");
        });
    }

    private void killedAt(Point point, int expectedRuns) {
        Map<String, Integer> states = new TreeMap<>();
        for (int i = 0; i < ITERATIONS; i++) {
            IdempotencyKey key = Db.freshKey();
            AtomicInteger runs = new AtomicInteger();
            TRAP.armed.set(point);

            Throwable failure = null;
            try {
                call(key, runs);
            } catch (RuntimeException e) {
                failure = e;
            }

            assertThat(TRAP.armed.get()).as("the trap fired").isNull();
            assertThat(failure)
                    .as("iteration %d: the killed call fails with a connection error", i)
                    .isNotNull()
                    .matches(Faults::isConnectionError, "is a connection error");
            states.merge(Faults.connectionErrorState(failure), 1, Integer::sum);
            assertThat(Db.claims(scope, key)).as("nothing committed").isZero();
            assertThat(Db.effects(scope, key)).isZero();

            Outcome<String> retry = retry(key, runs);

            assertThat(retry).isInstanceOf(Outcome.Executed.class);
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
            assertThat(runs).hasValue(expectedRuns);
            assertThat(retry(key, runs)).as("and it replays from then on").isInstanceOf(Outcome.Replayed.class);
        }
        System.out.printf(
                "%s: %d kills, each a connection error (%s), each retry executed once%n", point, ITERATIONS, states);
    }

    @Test
    void aBackendKilledBeforeTheClaimLeavesNothingAndTheRetryExecutesOnce() {
        // CLAIM_FIRST: before the claim, so the work never began; WORK_FIRST: before the work's first
        // statement (the attempt's first), which the work had already begun to send
        killedAt(Point.BEFORE_CLAIM, Db.workFirst() ? 2 : 1);
    }

    @Test
    void aBackendKilledAfterTheClaimLeavesNothingAndTheRetryExecutesOnce() {
        killedAt(Point.AFTER_CLAIM, 2); // the work started; its first statement met the dead connection
    }

    @Test
    void aBackendKilledAfterTheWorksWritesLeavesNothingAndTheRetryExecutesOnce() {
        killedAt(Point.AFTER_WORK, 2);
    }

    @Test
    void aBackendKilledWhileTheCommitIsInFlightLeavesAllOrNothingAndTheRetryReplaysOrExecutes() throws Exception {
        Map<Landed, Integer> landed = new EnumMap<>(Landed.class);
        // kills are spread from the start of the completion to a little past its usual end (the kill's
        // own round trip lands it somewhat later than asked); the window then follows where they land,
        // narrowing when they come after the answer and widening when they come before the commit, so
        // that both sides of the commit point keep being hit whatever the machine's speed
        long initialSpread = Math.max(2 * completionNanos, TimeUnit.MICROSECONDS.toNanos(500));
        long spread = initialSpread;
        for (int i = 0; i < ITERATIONS_IN_FLIGHT; i++) {
            IdempotencyKey key = Db.freshKey();
            AtomicInteger runs = new AtomicInteger();
            TRAP.delayNanos = ThreadLocalRandom.current().nextLong(spread);
            TRAP.armed.set(Point.COMMIT_IN_FLIGHT);

            Outcome<String> first = null;
            Throwable failure = null;
            try {
                first = call(key, runs);
            } catch (RuntimeException e) {
                failure = e;
            }
            TRAP.asyncKill.get(30, TimeUnit.SECONDS);

            int claims = Db.claims(scope, key);
            int effects = Db.effects(scope, key);
            assertThat(effects)
                    .as("iteration %d: the claim and the effect commit together or not at all", i)
                    .isEqualTo(claims);
            Landed where;
            if (failure == null) {
                assertThat(first).isInstanceOf(Outcome.Executed.class);
                assertThat(claims).isEqualTo(1);
                where = Landed.AFTER_THE_ANSWER;
            } else {
                assertThat(failure).as("iteration %d", i).matches(Faults::isConnectionError, "is a connection error");
                where = claims == 0 ? Landed.BEFORE_COMMIT : Landed.AFTER_COMMIT_ANSWER_LOST;
            }
            landed.merge(where, 1, Integer::sum);
            if (where == Landed.AFTER_THE_ANSWER) {
                spread = Math.max(TimeUnit.MICROSECONDS.toNanos(100), spread * 9 / 10);
            } else if (where == Landed.BEFORE_COMMIT) {
                spread = Math.min(TimeUnit.MILLISECONDS.toNanos(100), spread * 11 / 10);
            }

            Outcome<String> retry = retry(key, runs);

            if (claims == 0) {
                assertThat(retry)
                        .as("iteration %d: nothing committed, so the retry runs", i)
                        .isInstanceOf(Outcome.Executed.class);
                assertThat(runs).hasValue(2);
            } else {
                String committed = "effect-" + effectId(key);
                assertThat(retry)
                        .as("iteration %d: committed, so the retry replays", i)
                        .isInstanceOfSatisfying(
                                Outcome.Replayed.class,
                                r -> assertThat(r.value()).isEqualTo(committed));
                assertThat(runs).hasValue(Db.workFirst() ? 2 : 1); // WORK_FIRST: the retry ran, rolled back, replayed
                if (first != null) {
                    assertThat(first).isEqualTo(new Outcome.Executed<>(committed));
                }
            }
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
        }
        System.out.printf(
                "COMMIT_IN_FLIGHT: %d kills at random delays after the completion started (window %d us at first,"
                        + " %d us at last; the completion took ~%d us unhindered): %s%n",
                ITERATIONS_IN_FLIGHT, initialSpread / 1000, spread / 1000, completionNanos / 1000, landed);
        assertThat(landed.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(ITERATIONS_IN_FLIGHT);
    }

    private long effectId(IdempotencyKey key) {
        return Db.dsl()
                .resultQuery(
                        "SELECT id FROM " + Db.SCHEMA + ".effect WHERE scope = ? AND idem_key = ?",
                        scope.value(),
                        key.value())
                .fetchSingle()
                .get(0, Long.class);
    }
}
