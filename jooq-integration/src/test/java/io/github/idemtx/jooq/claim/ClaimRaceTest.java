package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.SqlHook;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

/**
 * The claim reads the key and takes its lock in one statement, and writes the row only at the end:
 * the unique index stays the backstop for anything that slips in between (a row committed after the
 * read, from a snapshot older than the lock, or by a writer that ignored the lock). Here another
 * session commits the key's row just before the call records its own; the call must not commit its
 * work, and its retry replays the row that got there first.
 */
@DatabaseTest
class ClaimRaceTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("race me");

    /** Before the first statement {@code target} selects, commits a live row for the key from another session. */
    private SqlHook slipsInBefore(Predicate<String> target, String theirResult) {
        AtomicBoolean done = new AtomicBoolean();
        return new SqlHook() {
            @Override
            public void before(Sql sql) {
                if (target.test(sql.sql()) && done.compareAndSet(false, true)) {
                    Db.dsl()
                            .execute(
                                    "INSERT INTO " + Db.SCHEMA + ".idempotency_claim AS c"
                                            + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                                            + " VALUES (?, ?, ?, 1, ?, now(), clock_timestamp(), clock_timestamp() + interval '1 hour')"
                                            + " ON CONFLICT (scope, idem_key) DO UPDATE SET result = excluded.result,"
                                            + " completed_at = excluded.completed_at, expires_at = excluded.expires_at",
                                    scope.value(),
                                    key.value(),
                                    fingerprint.bytes(),
                                    theirResult.getBytes(StandardCharsets.UTF_8));
                }
            }
        };
    }

    @Test
    void aRowCommittedBetweenTheClaimAndTheRecordWinsAndTheCallReplaysIt() {
        IdempotentTransaction<String> idem = Db.builder(
                        SqlHook.around(Db.dsl(), slipsInBefore(Faults::isCompletionAndCommit, "theirs")),
                        ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .build();
        AtomicInteger runs = new AtomicInteger();

        Outcome<String> outcome = idem.run(scope, key, fingerprint, tx -> {
            runs.incrementAndGet();
            return "mine-" + Db.writeEffect(tx, scope, key, "mine");
        });

        assertThat(outcome)
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("theirs"));
        assertThat(runs)
                .as("the work ran once, then its transaction rolled back")
                .hasValue(1);
        assertThat(Db.effects(scope, key)).as("nothing of the call committed").isZero();
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void anExpiredRowRenewedBetweenTheClaimAndTheTakeOverWinsAndTheCallReplaysIt() {
        IdempotentTransaction<String> plain =
                Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        plain.run(scope, key, fingerprint, tx -> "old");
        Db.expire(scope, key);
        IdempotentTransaction<String> idem = Db.builder(
                        SqlHook.around(Db.dsl(), slipsInBefore(Faults::isUpsert, "renewed")), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .build();

        Outcome<String> outcome =
                idem.run(scope, key, fingerprint, tx -> "taken-" + Db.writeEffect(tx, scope, key, "taken"));

        assertThat(outcome)
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("renewed"));
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void inAJoinedTransactionTheRaceReplaysTheOtherCallsRowAndLeavesTheCallersTransactionUsable() {
        DSLContext hooked = SqlHook.around(Db.dsl(), slipsInBefore(Faults::isUpsert, "theirs"));
        IdempotentTransaction<String> idem =
                Db.builder(hooked, ResultCodec.utf8()).schema(Db.SCHEMA).build();
        AtomicInteger runs = new AtomicInteger();

        Outcome<String> outcome = hooked.transactionResult(cfg -> {
            IdempotentTransaction<String> joined =
                    Db.builder(cfg.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
            Outcome<String> answer = joined.run(scope, key, fingerprint, tx -> {
                runs.incrementAndGet();
                return "mine-" + Db.writeEffect(tx, scope, key, "mine");
            });
            // the savepoint was rolled back: the enclosing transaction still works
            cfg.dsl().execute("select 1");
            return answer;
        });

        // READ COMMITTED: the re-read after the rollback to the savepoint sees the other call's row,
        // so the duplicate gets the contract's answer, not a serialization failure
        assertThat(outcome)
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("theirs"));
        assertThat(runs).hasValue(1);
        assertThat(Db.effects(scope, key))
                .as("the work's writes went with the savepoint")
                .isZero();
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(idem.run(scope, key, fingerprint, tx -> "later"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("theirs"));
    }

    @Test
    void underRepeatableReadADuplicateThatWaitedRetriesBeforeRunningItsWorkAndReplays() throws Exception {
        IdempotentTransaction<String> idem =
                Db.claimFirst(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        DSLContext repeatableRead = SqlHook.around(Db.dsl(), Faults.isolationAtBegin("REPEATABLE READ"));
        IdempotentTransaction<String> strict = Db.claimFirst(repeatableRead, ResultCodec.utf8())
                .policy(io.github.idemtx.core.IdempotencyPolicy.builder()
                        .backoff(Duration.ofMillis(1), Duration.ofMillis(5))
                        .build())
                .schema(Db.SCHEMA)
                .build();
        java.util.concurrent.CountDownLatch claimed = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.ExecutorService holder = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.Future<Outcome<String>> first =
                    holder.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                        claimed.countDown();
                        Db.awaitWaitersOnClaim(1);
                        return "first-" + Db.writeEffect(tx, scope, key, "first");
                    }));
            assertThat(claimed.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            AtomicInteger runs = new AtomicInteger();

            Outcome<String> duplicate = strict.run(scope, key, fingerprint, tx -> {
                runs.incrementAndGet();
                return "duplicate-" + Db.writeEffect(tx, scope, key, "duplicate");
            });

            String value = ((Outcome.Executed<String>) first.get(30, java.util.concurrent.TimeUnit.SECONDS)).value();
            assertThat(duplicate)
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(value));
            assertThat(runs)
                    .as("its snapshot could not see the first call's row: it retried instead of running")
                    .hasValue(0);
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            holder.shutdownNow();
        }
    }

    @Test
    void joinedUnderRepeatableReadTheWaitedDuplicateGetsTheCallersSerializationFailureInJooqsOwnType()
            throws Exception {
        IdempotentTransaction<String> idem =
                Db.claimFirst(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        java.util.concurrent.CountDownLatch claimed = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.ExecutorService holder = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.Future<Outcome<String>> first =
                    holder.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                        claimed.countDown();
                        Db.awaitWaitersOnClaim(1);
                        return "first";
                    }));
            assertThat(claimed.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();

            Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> Db.dsl()
                    .transaction(caller -> {
                        caller.dsl().execute("set transaction isolation level repeatable read");
                        caller.dsl().fetch("select 1"); // the caller's snapshot, taken before the holder commits
                        Db.claimFirst(caller.dsl(), ResultCodec.utf8())
                                .schema(Db.SCHEMA)
                                .build()
                                .run(scope, key, fingerprint, tx -> "duplicate");
                    }));

            assertThat(first.get(30, java.util.concurrent.TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            assertThat(thrown)
                    .isExactlyInstanceOf(org.jooq.exception.DataAccessException.class)
                    .hasMessageContaining("retry the transaction");
            assertThat(io.github.idemtx.jooq.internal.store.SqlStates.has(
                            thrown, io.github.idemtx.jooq.internal.store.SqlStates.SERIALIZATION_FAILURE))
                    .isTrue();
        } finally {
            holder.shutdownNow();
        }
    }

    @Test
    void aLiveClaimAnswersWithoutItsLockSoAReplayIsNotHeldUpByAnotherSessionHoldingIt() throws Exception {
        IdempotentTransaction<String> idem = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                .policy(io.github.idemtx.core.IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(200))
                        .build())
                .schema(Db.SCHEMA)
                .build();
        idem.run(scope, key, fingerprint, tx -> "stored");

        try (Connection side = Db.DATABASE.connect()) {
            side.setAutoCommit(false);
            try (PreparedStatement lock = side.prepareStatement("select pg_advisory_xact_lock(?)")) {
                lock.setLong(1, io.github.idemtx.jooq.internal.store.Digests.lockId(scope.value(), key.value()));
                lock.execute();
            }
            assertThat(idem.run(scope, key, fingerprint, tx -> "never"))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("stored"));

            // while a fresh key whose lock is held waits, and gets InProgress past the bound
            IdempotencyKey held = Db.freshKey();
            try (PreparedStatement lock = side.prepareStatement("select pg_advisory_xact_lock(?)")) {
                lock.setLong(1, io.github.idemtx.jooq.internal.store.Digests.lockId(scope.value(), held.value()));
                lock.execute();
            }
            assertThat(idem.run(scope, held, fingerprint, tx -> "blocked")).isInstanceOf(Outcome.InProgress.class);
            side.rollback();
            assertThat(idem.run(scope, held, fingerprint, tx -> "free")).isEqualTo(new Outcome.Executed<>("free"));
        }
    }
}
