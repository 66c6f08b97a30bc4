package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.SlowToRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

@DatabaseTest
class ConcurrencyTest {

    private final IdempotentTransaction<String> idem =
            Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("the one request");

    @Test
    void aStormOf32CallersWithOneKeyProducesExactlyOneEffectAndNoErrors() throws Exception {
        IdempotencyKey key = Db.freshKey();
        AtomicInteger runs = new AtomicInteger();

        List<Concurrently.Result<Outcome<String>>> results = Concurrently.times(
                32,
                () -> idem.run(scope, key, fingerprint, tx -> {
                    long id = Db.writeEffect(
                            tx, scope, key, Thread.currentThread().getName());
                    runs.incrementAndGet();
                    Thread.sleep(50); // keep the claim held while the others pile up on it
                    return "effect-" + id;
                }));

        assertThat(results).extracting(Concurrently.Result::error).containsOnlyNulls();
        List<Outcome<String>> outcomes =
                results.stream().map(Concurrently.Result::value).toList();
        assertThat(outcomes)
                .allMatch(o -> o instanceof Outcome.Executed
                        || o instanceof Outcome.Replayed
                        || o instanceof Outcome.InProgress);
        List<String> executed = outcomes.stream()
                .filter(o -> o instanceof Outcome.Executed)
                .map(o -> ((Outcome.Executed<String>) o).value())
                .toList();
        assertThat(executed).hasSize(1);
        assertThat(outcomes)
                .filteredOn(o -> o instanceof Outcome.Replayed)
                .allSatisfy(
                        o -> assertThat(((Outcome.Replayed<String>) o).value()).isEqualTo(executed.get(0)));
        if (Db.workFirst()) {
            // each caller ran the work speculatively; one insert won, every other attempt rolled back
            assertThat(runs.get()).isBetween(1, 32 * 5);
        } else {
            assertThat(runs)
                    .as("the duplicates waited on the holder's lock instead of running")
                    .hasValue(1);
        }
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void manyKeysSentByManyThreadsInRandomOrderTakeEffectExactlyOnceEach() throws Exception {
        List<IdempotencyKey> keys = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            keys.add(Db.freshKey());
        }
        List<Callable<List<Outcome<String>>>> clients = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
            clients.add(() -> {
                List<IdempotencyKey> mine = new ArrayList<>(keys);
                Collections.shuffle(mine, ThreadLocalRandom.current());
                List<Outcome<String>> seen = new ArrayList<>();
                for (IdempotencyKey key : mine) {
                    seen.add(idem.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x")));
                }
                return seen;
            });
        }

        List<Concurrently.Result<List<Outcome<String>>>> results = Concurrently.run(clients);

        assertThat(results).extracting(Concurrently.Result::error).containsOnlyNulls();
        Map<Class<?>, Long> byKind = results.stream()
                .flatMap(r -> r.value().stream())
                .collect(Collectors.groupingBy(Object::getClass, Collectors.counting()));
        assertThat(byKind.get(Outcome.Executed.class)).isEqualTo(150L);
        assertThat(byKind.keySet()).containsOnly(Outcome.Executed.class, Outcome.Replayed.class);
        for (IdempotencyKey key : keys) {
            assertThat(Db.effects(scope, key)).as("effects of %s", key).isEqualTo(1);
        }
        assertThat(Db.effects(scope)).isEqualTo(150);
        assertThat(Db.claims(scope)).isEqualTo(150);
    }

    @Test
    void aDuplicateGetsInProgressPastTheWaitBoundAndReplaysOnceTheHolderCommits() throws Exception {
        Duration retryAfter = Duration.ofSeconds(3);
        IdempotentTransaction<String> impatient = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(200))
                        .retryAfter(retryAfter)
                        .build())
                .schema(Db.SCHEMA)
                .build();
        IdempotencyKey key = Db.freshKey();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Future<Outcome<String>> first = holder.submit(() -> impatient.run(scope, key, fingerprint, tx -> {
                Db.writeEffect(tx, scope, key, "holder");
                claimed.countDown();
                release.await();
                return "holder's result";
            }));
            assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();

            Outcome<String> duplicate = impatient.run(scope, key, fingerprint, tx -> {
                Db.writeEffect(tx, scope, key, "duplicate");
                return "duplicate's result";
            });
            assertThat(duplicate).isEqualTo(new Outcome.InProgress<String>(retryAfter));

            release.countDown();
            assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(new Outcome.Executed<>("holder's result"));
            assertThat(impatient.run(scope, key, fingerprint, tx -> "again"))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("holder's result"));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            release.countDown();
            holder.shutdownNow();
        }
    }

    @Test
    void aDuplicateWaitingOnAHolderThatFailsRunsTheWorkItself() throws Exception {
        // CLAIM_FIRST's wait on the holder; in WORK_FIRST the duplicate does not wait (WorkFirstTest)
        IdempotentTransaction<String> idem =
                Db.claimFirst(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        IdempotencyKey key = Db.freshKey();
        CountDownLatch claimed = new CountDownLatch(1);
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Future<Outcome<String>> failing = holder.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                Db.writeEffect(tx, scope, key, "holder");
                claimed.countDown();
                Thread.sleep(300);
                throw new IllegalStateException("holder crashed");
            }));
            assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();

            Outcome<String> duplicate = idem.run(scope, key, fingerprint, tx -> {
                Db.writeEffect(tx, scope, key, "duplicate");
                return "duplicate ran";
            });

            assertThat(duplicate).isEqualTo(new Outcome.Executed<>("duplicate ran"));
            assertThat(failing).failsWithin(Duration.ofSeconds(30));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            holder.shutdownNow();
        }
    }

    @Test
    void anExpiredClaimIsTakenOverByExactlyOneOfManyConcurrentCallers() throws Exception {
        IdempotencyKey key = Db.freshKey();
        idem.run(scope, key, fingerprint, tx -> "original-" + Db.writeEffect(tx, scope, key, "original"));
        Db.expire(scope, key);
        Fingerprint later = Db.fingerprint("a request long after the TTL");

        List<Concurrently.Result<Outcome<String>>> results = Concurrently.times(
                24,
                () -> idem.run(scope, key, later, tx -> {
                    long id = Db.writeEffect(tx, scope, key, "takeover");
                    Thread.sleep(20);
                    return "takeover-" + id;
                }));

        assertThat(results).extracting(Concurrently.Result::error).containsOnlyNulls();
        Map<Class<?>, List<Outcome<String>>> byKind =
                results.stream().map(Concurrently.Result::value).collect(Collectors.groupingBy(Object::getClass));
        assertThat(byKind.get(Outcome.Executed.class)).hasSize(1);
        String winner =
                ((Outcome.Executed<String>) byKind.get(Outcome.Executed.class).get(0)).value();
        assertThat(byKind.getOrDefault(Outcome.Replayed.class, List.of()))
                .allSatisfy(
                        o -> assertThat(((Outcome.Replayed<String>) o).value()).isEqualTo(winner));
        assertThat(byKind.keySet()).containsOnly(Outcome.Executed.class, Outcome.Replayed.class);
        assertThat(Db.effects(scope, key))
                .as("the original and exactly one takeover")
                .isEqualTo(2);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void purgingWhileCallsRunNeverLetsAKeyRunTwiceWithinItsTtl() throws Exception {
        List<IdempotencyKey> keys = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            IdempotencyKey key = Db.freshKey();
            keys.add(key);
            idem.run(scope, key, fingerprint, tx -> "first-" + Db.writeEffect(tx, scope, key, "first"));
            if (i % 2 == 0) {
                Db.expire(scope, key); // half are expired: purge may take them, or a caller may take them over
            }
        }
        List<Callable<Integer>> tasks = new ArrayList<>();
        tasks.add(() -> {
            int purged = 0;
            for (int i = 0; i < 50; i++) {
                purged += idem.purgeExpired(5);
            }
            return purged;
        });
        for (int t = 0; t < 8; t++) {
            tasks.add(() -> {
                for (IdempotencyKey key : keys) {
                    idem.run(scope, key, fingerprint, tx -> "again-" + Db.writeEffect(tx, scope, key, "again"));
                }
                return 0;
            });
        }

        List<Concurrently.Result<Integer>> results = Concurrently.run(tasks);

        assertThat(results).extracting(Concurrently.Result::error).containsOnlyNulls();
        for (int i = 0; i < keys.size(); i++) {
            int expected = i % 2 == 0 ? 2 : 1; // an expired key runs once more, a live one never
            assertThat(Db.effects(scope, keys.get(i)))
                    .as("effects of key %d", i)
                    .isEqualTo(expected);
        }
    }

    @Test
    void aRejectionWhoseKeyWasTakenMeanwhileByAWaitingDuplicateGetsTheDuplicatesOutcome() throws Exception {
        IdempotentTransaction<String> idem = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                .policy(SlowToRecord.policy().build())
                .schema(Db.SCHEMA)
                .build();
        IdempotencyKey key = Db.freshKey();
        CountDownLatch claimed = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            // A claims, then rejects once B waits on its claim; B takes the key when A rolls back
            Future<Outcome<String>> a = threads.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                claimed.countDown();
                Db.awaitWaitersOnClaim(1);
                throw new SlowToRecord("A saw no money");
            }));
            assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
            Future<Outcome<String>> b = threads.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                Thread.sleep(400); // A now waits on B's claim to record its failure
                return "B-" + Db.writeEffect(tx, scope, key, "B");
            }));

            Outcome<String> outcomeOfB = b.get(30, TimeUnit.SECONDS);
            Outcome<String> outcomeOfA = a.get(30, TimeUnit.SECONDS);

            assertThat(outcomeOfB).isInstanceOf(Outcome.Executed.class);
            String value = ((Outcome.Executed<String>) outcomeOfB).value();
            assertThat(outcomeOfA)
                    .as("one key, one answer")
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(value));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aRejectionThatCannotBeRecordedWithinTheWaitBoundReportsInProgress() throws Exception {
        IdempotentTransaction<String> impatient = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                .policy(SlowToRecord.policy()
                        .duplicateWait(Duration.ofMillis(100))
                        .build())
                .schema(Db.SCHEMA)
                .build();
        IdempotencyKey key = Db.freshKey();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch releaseB = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome<String>> a = threads.submit(() -> impatient.run(scope, key, fingerprint, tx -> {
                claimed.countDown();
                Db.awaitWaitersOnClaim(1);
                throw new SlowToRecord("A saw no money");
            }));
            assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
            // B waits with the default bound (5 s), so it is still waiting when A rolls back
            IdempotentTransaction<String> waiting = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .build();
            Future<Outcome<String>> b = threads.submit(() -> waiting.run(scope, key, fingerprint, tx -> {
                releaseB.await();
                return "B-" + Db.writeEffect(tx, scope, key, "B");
            }));

            assertThat(a.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.InProgress.class);
            releaseB.countDown();
            assertThat(b.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
        } finally {
            releaseB.countDown();
            threads.shutdownNow();
        }
    }
}
