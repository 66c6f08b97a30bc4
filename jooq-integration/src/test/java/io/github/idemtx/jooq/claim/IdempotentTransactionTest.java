package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.ResultTooLargeException;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.WorkFailedException;
import io.github.idemtx.db.testing.Backends;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionalWork;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.SqlHook;
import java.io.IOException;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

@DatabaseTest
class IdempotentTransactionTest {

    static final class InsufficientFunds extends RuntimeException {
        InsufficientFunds(String message) {
            super(message);
        }
    }

    private final IdempotencyPolicy policy = IdempotencyPolicy.builder()
            .deterministicFailure(InsufficientFunds.class)
            .build();
    private final IdempotentTransaction<String> idem = Db.builder(Db.dsl(), ResultCodec.utf8())
            .policy(policy)
            .schema(Db.SCHEMA)
            .build();
    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("POST /transfers {\"amount\":\"10.00\"}");

    @Test
    void replaysStoredResultForSameKeyAndFingerprintWithoutRunningTheWorkAgain() {
        AtomicInteger runs = new AtomicInteger();
        Instant before = Instant.now().minusSeconds(5);

        Outcome<String> first = idem.run(scope, key, fingerprint, tx -> {
            runs.incrementAndGet();
            return "transfer-" + Db.writeEffect(tx, scope, key, "first");
        });
        Outcome<String> second = idem.run(scope, key, fingerprint, tx -> {
            runs.incrementAndGet();
            return "transfer-" + Db.writeEffect(tx, scope, key, "second");
        });

        assertThat(first).isInstanceOf(Outcome.Executed.class);
        String value = ((Outcome.Executed<String>) first).value();
        assertThat(second).isInstanceOfSatisfying(Outcome.Replayed.class, r -> {
            assertThat(r.value()).isEqualTo(value);
            assertThat(r.completedAt()).isAfter(before).isBefore(Instant.now().plusSeconds(5));
        });
        // WORK_FIRST runs the replay's work before it learns the key was taken; nothing of it commits
        assertThat(runs).hasValue(Db.workFirst() ? 2 : 1);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
    }

    @Test
    void aReplayGetsTheRecordedAnswerEvenWhenTheWorkWouldNowThrow() {
        idem.run(scope, key, fingerprint, tx -> "transfer-" + Db.writeEffect(tx, scope, key, "first"));

        // the world changed since (an account closed, say): the work would fail today
        Outcome<String> retry = idem.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "second");
            throw new IllegalStateException("account closed");
        });

        assertThat(retry).isInstanceOf(Outcome.Replayed.class);
        assertThat(((Outcome.Replayed<String>) retry).value()).startsWith("transfer-");
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void aMismatchIsReportedEvenWhenTheOtherRequestsWorkThrows() {
        idem.run(scope, key, fingerprint, tx -> "ok-" + Db.writeEffect(tx, scope, key, "first"));

        Outcome<String> other = idem.run(scope, key, Db.fingerprint("another request"), tx -> {
            throw new IllegalArgumentException("no such account");
        });

        assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void reportsFingerprintMismatchAndRunsNothingWhenTheKeyIsReusedForAnotherRequest() {
        idem.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "first");
            return "ok";
        });
        AtomicInteger runs = new AtomicInteger();

        Outcome<String> other = idem.run(scope, key, Db.fingerprint("POST /transfers {\"amount\":\"99.00\"}"), tx -> {
            runs.incrementAndGet();
            Db.writeEffect(tx, scope, key, "second");
            return "other";
        });

        assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(runs).hasValue(Db.workFirst() ? 1 : 0); // WORK_FIRST: run, then rolled back
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void rollsBackTheClaimAndTheWorkTogetherWhenTheWorkThrowsAndLetsTheKeyRunAgain() {
        IllegalStateException boom = new IllegalStateException("boom");

        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "doomed");
                    throw boom;
                }))
                .isSameAs(boom);

        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();

        Outcome<String> retry = idem.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "retry");
            return "second time lucky";
        });
        assertThat(retry).isEqualTo(new Outcome.Executed<>("second time lucky"));
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void wrapsACheckedExceptionFromTheWorkOnceAndReleasesTheKey() {
        IOException io = new IOException("disk on fire");

        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "doomed");
                    throw io;
                }))
                .isInstanceOf(WorkFailedException.class)
                .hasCause(io)
                .satisfies(e -> {
                    assertThat(((WorkFailedException) e).scope()).isEqualTo(scope);
                    assertThat(((WorkFailedException) e).key()).isEqualTo(key);
                });
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();
    }

    @Test
    void recordsADeterministicFailureAndReplaysItEvenAfterTheWorldChanged() {
        AtomicInteger balance = new AtomicInteger(5);
        TransactionalWork<String> transfer = tx -> {
            Db.writeEffect(tx, scope, key, "debit attempt");
            if (balance.get() < 10) {
                throw new InsufficientFunds("balance " + balance.get() + " is below 10");
            }
            return "moved 10";
        };

        Outcome<String> first = idem.run(scope, key, fingerprint, transfer);
        balance.set(100); // a deposit arrives meanwhile
        Outcome<String> replay = idem.run(scope, key, fingerprint, transfer);

        Failure expected = Failure.of("InsufficientFunds", "balance 5 is below 10");
        assertThat(first).isInstanceOfSatisfying(Outcome.Rejected.class, r -> {
            assertThat(r.failure()).isEqualTo(expected);
            assertThat(r.replayed()).isFalse();
        });
        assertThat(replay).isInstanceOfSatisfying(Outcome.Rejected.class, r -> {
            assertThat(r.failure()).isEqualTo(expected);
            assertThat(r.replayed()).isTrue();
            assertThat(r.recordedAt()).isEqualTo(((Outcome.Rejected<?>) first).recordedAt());
        });
        assertThat(Db.effects(scope, key))
                .as("the work's writes were rolled back")
                .isZero();
        assertThat(Db.claims(scope, key))
                .as("the claim and the failure were kept")
                .isEqualTo(1);
    }

    @Test
    void recordsARejectionThrownByTheWorkWithoutAnyPolicyEntry() {
        IdempotentTransaction<String> plain =
                Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();

        Outcome<String> first = plain.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "x");
            throw new Rejection("currency_mismatch", "BRL account cannot pay USD");
        });
        Outcome<String> again = plain.run(scope, key, fingerprint, tx -> "would succeed now");

        assertThat(first)
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class,
                        r -> assertThat(r.failure())
                                .isEqualTo(Failure.of("currency_mismatch", "BRL account cannot pay USD")));
        assertThat(again)
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isTrue());
        assertThat(Db.effects(scope, key)).isZero();
    }

    @Test
    void aDeterministicFailureReplayedWithAnotherFingerprintIsAMismatch() {
        idem.run(scope, key, fingerprint, tx -> {
            throw new InsufficientFunds("no");
        });
        assertThat(idem.run(scope, key, Db.fingerprint("something else"), tx -> "x"))
                .isInstanceOf(Outcome.FingerprintMismatch.class);
    }

    @Test
    void keysAreUniquePerScopeNotGlobally() {
        Scope other = Db.freshScope();

        Outcome<String> mine = idem.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "mine");
            return "secret of " + scope;
        });
        Outcome<String> theirs = idem.run(other, key, fingerprint, tx -> {
            Db.writeEffect(tx, other, key, "theirs");
            return "secret of " + other;
        });

        assertThat(mine).isEqualTo(new Outcome.Executed<>("secret of " + scope));
        assertThat(theirs)
                .as("the same key in another scope is another intent")
                .isEqualTo(new Outcome.Executed<>("secret of " + other));
        assertThat(idem.run(other, key, fingerprint, tx -> "x"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("secret of " + other));
    }

    @Test
    void recordsANullResultAndReplaysItAsNull() {
        Outcome<String> first = idem.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "void work");
            return null;
        });
        Outcome<String> replay = idem.run(scope, key, fingerprint, tx -> "not null");

        assertThat(first).isEqualTo(new Outcome.Executed<String>(null));
        assertThat(replay)
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isNull());
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void rollsEverythingBackWhenTheEncodedResultIsOverTheCapAndSaysSo() {
        IdempotentTransaction<String> small = Db.builder(Db.dsl(), ResultCodec.utf8())
                .policy(IdempotencyPolicy.builder().maxResultBytes(10).build())
                .schema(Db.SCHEMA)
                .build();

        assertThatThrownBy(() -> small.run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "big");
                    return "01234567890";
                }))
                .isInstanceOfSatisfying(ResultTooLargeException.class, e -> {
                    assertThat(e.size()).isEqualTo(11);
                    assertThat(e.limit()).isEqualTo(10);
                    assertThat(e.key()).isEqualTo(key);
                })
                .hasMessageContaining("11 bytes")
                .hasMessageContaining("limit of 10 bytes")
                .hasMessageContaining("nothing was committed");
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();

        assertThat(small.run(scope, key, fingerprint, tx -> "0123456789"))
                .isEqualTo(new Outcome.Executed<>("0123456789"));
    }

    @Test
    void rollsEverythingBackWhenTheCodecFailsToEncode() {
        ResultCodec<String> broken = new ResultCodec<>() {
            @Override
            public byte[] encode(String value) throws IOException {
                throw new IOException("cannot encode " + value);
            }

            @Override
            public String decode(byte[] bytes) {
                return new String(bytes);
            }
        };
        IdempotentTransaction<String> withBrokenCodec =
                Db.builder(Db.dsl(), broken).schema(Db.SCHEMA).build();

        assertThatThrownBy(() -> withBrokenCodec.run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "x");
                    return "v";
                }))
                .isInstanceOf(IdempotencyException.class)
                .hasMessageContaining("could not encode")
                .hasRootCauseInstanceOf(IOException.class);
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();
    }

    @Test
    void reportsAStoredResultTheCodecCannotDecodeAsAnIdempotencyException() {
        idem.run(scope, key, fingerprint, tx -> "stored as text");
        IdempotentTransaction<Integer> strict = Db.builder(Db.dsl(), new ResultCodec<Integer>() {
                    @Override
                    public byte[] encode(Integer value) {
                        return value.toString().getBytes();
                    }

                    @Override
                    public Integer decode(byte[] bytes) {
                        return Integer.parseInt(new String(bytes));
                    }
                })
                .schema(Db.SCHEMA)
                .build();

        assertThatThrownBy(() -> strict.run(scope, key, fingerprint, tx -> 1))
                .isInstanceOf(IdempotencyException.class)
                .hasMessageContaining("could not be decoded")
                .hasCauseInstanceOf(NumberFormatException.class);
    }

    @Test
    void takesOverAnExpiredClaimAndRunsAgain() {
        idem.run(scope, key, fingerprint, tx -> {
            Db.writeEffect(tx, scope, key, "first");
            return "first";
        });
        Db.expire(scope, key);

        Outcome<String> after = idem.run(scope, key, Db.fingerprint("a new request, long after"), tx -> {
            Db.writeEffect(tx, scope, key, "second");
            return "second";
        });

        assertThat(after).isEqualTo(new Outcome.Executed<>("second"));
        assertThat(Db.effects(scope, key)).isEqualTo(2);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(idem.run(scope, key, Db.fingerprint("a new request, long after"), tx -> "third"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("second"));
    }

    @Test
    void nestedTransactionsInsideTheWorkAreSavepointsThatNeverCommitEarly() {
        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    tx.transaction(nested -> Db.writeEffect(nested.dsl(), scope, key, "inside nested"));
                    throw new IllegalStateException("after the nested transaction");
                }))
                .hasMessage("after the nested transaction");

        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();

        Outcome<String> ok = idem.run(scope, key, fingerprint, tx -> {
            try {
                tx.transaction(nested -> {
                    Db.writeEffect(nested.dsl(), scope, key, "rolled back to its savepoint");
                    throw new IllegalArgumentException("inner");
                });
            } catch (IllegalArgumentException expected) {
                // the nested part is undone, the rest goes on
            }
            Db.writeEffect(tx, scope, key, "kept");
            return "ok";
        });
        assertThat(ok).isEqualTo(new Outcome.Executed<>("ok"));
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void theDuplicateWaitBoundNeverReachesTheWorkNorThePooledConnection() {
        String before = Db.lockTimeout(Db.dsl());

        Outcome<String> seenInsideWork = idem.run(scope, key, fingerprint, Db::lockTimeout);

        assertThat(seenInsideWork).isEqualTo(new Outcome.Executed<>(before));
        for (int i = 0; i < 60; i++) { // every connection of the pool, by the pigeonhole principle
            assertThat(Db.lockTimeout(Db.dsl())).isEqualTo(before);
        }
    }

    @Test
    void purgeDeletesExpiredClaimsOnlyAndReportsHowMany() {
        IdempotencyKey live = Db.freshKey();
        IdempotencyKey old = Db.freshKey();
        idem.run(scope, live, fingerprint, tx -> "live");
        idem.run(scope, old, fingerprint, tx -> "old");
        Db.expire(scope, old);

        int purged = 0;
        int batch;
        do {
            batch = idem.purgeExpired(1000);
            purged += batch;
        } while (batch == 1000);

        assertThat(purged).isGreaterThanOrEqualTo(1);
        assertThat(Db.claims(scope, old)).isZero();
        assertThat(Db.claims(scope, live)).isEqualTo(1);
        assertThatThrownBy(() -> idem.purgeExpired(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit");
    }

    @Test
    void purgeDeletesNoMoreThanItsLimit() {
        for (int i = 0; i < 12; i++) {
            IdempotencyKey k = Db.freshKey();
            idem.run(scope, k, fingerprint, tx -> "to purge");
            Db.expire(scope, k);
        }

        assertThat(idem.purgeExpired(5)).isEqualTo(5);
        assertThat(Db.claims(scope)).isEqualTo(7);
    }

    @Test
    void commitsItsOwnTransactionOnAPoolWhoseConnectionsHaveAutoCommitOff() throws Exception {
        try (com.zaxxer.hikari.HikariDataSource manual =
                Db.DATABASE.newPool(2, config -> config.setAutoCommit(false))) {
            IdempotentTransaction<String> onManualPool = Db.builder(
                            org.jooq.impl.DSL.using(manual, org.jooq.SQLDialect.POSTGRES), ResultCodec.utf8())
                    .schema(Db.SCHEMA)
                    .build();

            Outcome<String> first =
                    onManualPool.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x"));

            assertThat(first).isInstanceOf(Outcome.Executed.class);
            assertThat(Db.effects(scope, key))
                    .as("visible to other connections: committed")
                    .isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
            assertThat(onManualPool.run(scope, key, fingerprint, tx -> "again")).isInstanceOf(Outcome.Replayed.class);
            try (java.sql.Connection c = manual.getConnection()) {
                assertThat(c.getAutoCommit())
                        .as("the pool's setting is left as it was")
                        .isFalse();
            }
        }
    }

    @Test
    void aClaimExpiresATtlAfterItCompletedNotAfterItWasMade() throws Exception {
        IdempotentTransaction<String> shortLived = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                .policy(IdempotencyPolicy.builder()
                        .ttl(java.time.Duration.ofSeconds(1))
                        .build())
                .schema(Db.SCHEMA)
                .build();
        java.util.concurrent.CountDownLatch claimed = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.ExecutorService holder = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.Future<Outcome<String>> slow =
                    holder.submit(() -> shortLived.run(scope, key, fingerprint, tx -> {
                        claimed.countDown();
                        Db.awaitWaitersOnClaim(1);
                        Thread.sleep(1500); // longer than the TTL
                        return "slow-" + Db.writeEffect(tx, scope, key, "slow");
                    }));
            assertThat(claimed.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();

            Outcome<String> duplicate =
                    shortLived.run(scope, key, fingerprint, tx -> "dup-" + Db.writeEffect(tx, scope, key, "dup"));

            assertThat(slow.get(30, java.util.concurrent.TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            assertThat(duplicate)
                    .as("the duplicate waited and replays: the claim has just completed")
                    .isInstanceOf(Outcome.Replayed.class);
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        } finally {
            holder.shutdownNow();
        }
    }

    @Test
    void keepsTheWorksExceptionOnTopWhenTheConnectionDiesUnderIt() {
        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, tx -> {
                    Db.writeEffect(tx, scope, key, "lost");
                    tx.execute("select pg_terminate_backend(pg_backend_pid())");
                    return "never";
                }))
                .isInstanceOf(org.jooq.exception.DataAccessException.class)
                .hasMessageContaining("terminat");
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(Db.claims(scope, key)).isZero();
        assertThat(idem.run(scope, key, fingerprint, tx -> "after")).isEqualTo(new Outcome.Executed<>("after"));
    }

    @Test
    void reportsAnUnknownCommitOutcomeWhenTheConnectionDiesAtTheCommitAndTheRetryTakesEffectOnce() {
        org.jooq.DSLContext killingAtCommit = SqlHook.around(Db.dsl(), new SqlHook() {
            @Override
            public void before(Sql sql) throws java.sql.SQLException {
                if (Faults.isCompletionAndCommit(sql.sql())) {
                    try (Backends backends = new Backends(Db.DATABASE.connect())) {
                        backends.kill(sql.connection());
                    }
                }
            }
        });
        IdempotentTransaction<String> dying = Db.builder(killingAtCommit, ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .build();

        assertThatThrownBy(
                        () -> dying.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x")))
                .isInstanceOfSatisfying(io.github.idemtx.core.CommitOutcomeUnknownException.class, e -> {
                    assertThat(e.key()).isEqualTo(key);
                    assertThat(e.getMessage()).contains("retry with the same key");
                });

        Outcome<String> retry =
                idem.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "retry"));
        assertThat(retry).isInstanceOfAny(Outcome.Executed.class, Outcome.Replayed.class);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void reportsAnUnknownCommitOutcomeWhenTheConnectionDiesBeforeTheCommitOfATakeOver() {
        idem.run(scope, key, fingerprint, tx -> "old");
        Db.expire(scope, key);
        // the take-over records with an upsert and commits on its own: kill the backend in between
        org.jooq.DSLContext killingBeforeCommit = SqlHook.around(Db.dsl(), new SqlHook() {
            @Override
            public void after(Sql sql) throws java.sql.SQLException {
                if (Faults.isUpsert(sql.sql())) {
                    try (Backends backends = new Backends(Db.DATABASE.connect())) {
                        backends.kill(sql.connection());
                    }
                }
            }
        });
        IdempotentTransaction<String> dying = Db.builder(killingBeforeCommit, ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .build();

        assertThatThrownBy(
                        () -> dying.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x")))
                .isInstanceOf(io.github.idemtx.core.CommitOutcomeUnknownException.class);

        Outcome<String> retry =
                idem.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "retry"));
        assertThat(retry).isInstanceOf(Outcome.Executed.class);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }
}
