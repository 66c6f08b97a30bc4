package io.github.idemtx.jooq.tx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.SlowToRecord;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

@DatabaseTest
class JoinedTransactionTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("joined");

    private static IdempotentTransaction<String> idem(DSLContext dsl) {
        return Db.builder(dsl, ResultCodec.utf8()).schema(Db.SCHEMA).build();
    }

    @Test
    void joinsAnOpenJooqTransactionAndIsUndoneWhenItRollsBack() {
        assertThatThrownBy(() -> Db.dsl().transaction(cfg -> {
                    Outcome<String> inside = idem(cfg.dsl())
                            .run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "inside"));
                    assertThat(inside).isInstanceOf(Outcome.Executed.class);
                    throw new IllegalStateException("the enclosing transaction fails later");
                }))
                .hasMessage("the enclosing transaction fails later");

        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();
    }

    @Test
    void commitsWithTheEnclosingTransactionAndReplaysAfterwards() {
        Db.dsl().transaction(cfg -> {
            Db.writeEffect(cfg.dsl(), scope, key, "the caller's own write");
            idem(cfg.dsl()).run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "inside"));
            // nothing is visible outside before the enclosing transaction commits
            assertThat(Db.claims(scope, key)).isZero();
        });

        assertThat(Db.effects(scope, key)).isEqualTo(2);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(idem(Db.dsl()).run(scope, key, fingerprint, tx -> "again")).isInstanceOf(Outcome.Replayed.class);
    }

    @Test
    void aFailingWorkLeavesTheEnclosingTransactionUsable() {
        Db.dsl().transaction(cfg -> {
            Db.writeEffect(cfg.dsl(), scope, key, "before");
            assertThatThrownBy(() -> idem(cfg.dsl()).run(scope, key, fingerprint, tx -> {
                        Db.writeEffect(tx, scope, key, "undone");
                        tx.execute("select 1/0"); // a real SQL error inside the work
                        return "never";
                    }))
                    .hasMessageContaining("division by zero");
            Db.writeEffect(cfg.dsl(), scope, key, "after");
        });

        assertThat(Db.effects(scope, key)).isEqualTo(2);
        assertThat(Db.claims(scope, key)).isZero();
    }

    @Test
    void recordsADeterministicFailureWithTheEnclosingTransaction() {
        Db.dsl().transaction(cfg -> {
            Outcome<String> rejected = idem(cfg.dsl()).run(scope, key, fingerprint, tx -> {
                Db.writeEffect(tx, scope, key, "undone");
                throw new Rejection("insufficient_funds", "no");
            });
            assertThat(rejected)
                    .isInstanceOfSatisfying(
                            Outcome.Rejected.class,
                            r -> assertThat(r.replayed()).isFalse());
        });

        assertThat(Db.effects(scope, key)).isZero();
        assertThat(idem(Db.dsl()).run(scope, key, fingerprint, tx -> "x"))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isTrue());
    }

    @Test
    void aReplayInsideAnOpenTransactionWritesNothing() {
        idem(Db.dsl()).run(scope, key, fingerprint, tx -> "stored");

        Db.dsl().transaction(cfg -> {
            Outcome<String> replay = idem(cfg.dsl()).run(scope, key, fingerprint, tx -> "not run");
            assertThat(replay).isInstanceOf(Outcome.Replayed.class);
            Object xid = cfg.dsl()
                    .resultQuery("select pg_current_xact_id_if_assigned()")
                    .fetchSingle()
                    .get(0);
            assertThat(xid)
                    .as("no transaction id was assigned, so nothing was written")
                    .isNull();
        });
    }

    @Test
    void inProgressInsideAnOpenTransactionLeavesItUsable() throws Exception {
        IdempotentTransaction<String> impatient = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(100))
                        .build())
                .schema(Db.SCHEMA)
                .build();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Future<Outcome<String>> first = holder.submit(() -> impatient.run(scope, key, fingerprint, tx -> {
                claimed.countDown();
                release.await();
                return "holder";
            }));
            assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();

            Db.dsl().transaction(cfg -> {
                Outcome<String> waiting = Db.claimFirst(cfg.dsl(), ResultCodec.utf8())
                        .policy(impatient.policy())
                        .schema(Db.SCHEMA)
                        .build()
                        .run(scope, key, fingerprint, tx -> "duplicate");
                assertThat(waiting).isInstanceOf(Outcome.InProgress.class);
                Db.writeEffect(cfg.dsl(), scope, key, "the enclosing transaction goes on");
            });

            release.countDown();
            assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(new Outcome.Executed<>("holder"));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            release.countDown();
            holder.shutdownNow();
        }
    }

    @Test
    void aRejectionThatCannotBeRecordedInsideAnOpenTransactionLeavesItUsable() throws Exception {
        IdempotencyPolicy impatient =
                SlowToRecord.policy().duplicateWait(Duration.ofMillis(100)).build();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch releaseB = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome<String>> a = threads.submit(() -> Db.dsl().transactionResult(cfg -> {
                Outcome<String> o = Db.builder(cfg.dsl(), ResultCodec.utf8())
                        .policy(impatient)
                        .schema(Db.SCHEMA)
                        .build()
                        .run(scope, key, fingerprint, tx -> {
                            claimed.countDown();
                            Db.awaitWaitersOnClaim(1);
                            throw new SlowToRecord("A saw no money");
                        });
                Db.writeEffect(cfg.dsl(), scope, key, "A's enclosing transaction goes on");
                return o;
            }));
            assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
            // B reads first: it waits on A's lock (the mechanism this test is about)
            Future<Outcome<String>> b = threads.submit(() -> Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .build()
                    .run(scope, key, fingerprint, tx -> {
                        releaseB.await();
                        return "B-" + Db.writeEffect(tx, scope, key, "B");
                    }));

            assertThat(a.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.InProgress.class);
            releaseB.countDown();
            assertThat(b.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            assertThat(Db.effects(scope, key))
                    .as("A's own write and B's effect")
                    .isEqualTo(2);
        } finally {
            releaseB.countDown();
            threads.shutdownNow();
        }
    }

    @Test
    void aJoinedClaimsTtlCountsFromTheCallersCommitSoItIsNeverBornExpired() {
        IdempotencyPolicy shortLived =
                IdempotencyPolicy.builder().ttl(Duration.ofSeconds(1)).build();
        Db.dsl().transaction(cfg -> {
            Outcome<String> first = Db.builder(cfg.dsl(), ResultCodec.utf8())
                    .policy(shortLived)
                    .schema(Db.SCHEMA)
                    .build()
                    .run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "inside"));
            assertThat(first).isInstanceOf(Outcome.Executed.class);
            Thread.sleep(1_500); // the caller's transaction outlives the TTL
        });

        Object[] row = Db.dsl()
                .resultQuery(
                        "SELECT state::int, expires_at > clock_timestamp(),"
                                + " expires_at - completed_at > interval '1.4 seconds' FROM " + Db.SCHEMA
                                + ".idempotency_claim WHERE scope = ? AND idem_key = ?",
                        scope.value(),
                        key.value())
                .fetchSingle()
                .intoArray();
        assertThat(row).as("completed, live, expiry counted from the commit").containsExactly(1, true, true);
        IdempotentTransaction<String> retry = Db.builder(Db.dsl(), ResultCodec.utf8())
                .policy(shortLived)
                .schema(Db.SCHEMA)
                .build();
        assertThat(retry.run(scope, key, fingerprint, tx -> "again-" + Db.writeEffect(tx, scope, key, "twice")))
                .as("a retry right after the commit replays")
                .isInstanceOf(Outcome.Replayed.class);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }
}
