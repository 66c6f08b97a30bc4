package io.github.idemtx.jooq.outbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimContext;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.util.UUID;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;

/** A message exists exactly when its claim and the business write commit, under an id derived from the claim. */
@DatabaseTest
class OutboxTest {

    private final IdempotentTransaction<String> transfers = OutboxDb.transactions();
    private final Outbox outbox = OutboxDb.outbox();
    private final Scope scope = OutboxDb.freshScope();
    private final IdempotencyKey key = OutboxDb.freshKey();
    private final Fingerprint fingerprint = OutboxDb.fingerprint("transfer 10");

    private String transfer(org.jooq.DSLContext tx) {
        OutboxDb.writeEffect(tx, scope, key);
        outbox.add(
                tx,
                OutboxMessage.builder("transfer-applied", "ledger.events", "10".getBytes(UTF_8))
                        .orderingKey("account-1")
                        .header("content-type", "text/plain")
                        .build());
        return "done";
    }

    @Test
    void aCommittedCallCommitsItsMessageUnderTheIdOfItsClaim() {
        Outcome<String> outcome = transfers.run(scope, key, fingerprint, this::transfer);

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        UUID id = Outbox.messageId(scope, key, "transfer-applied");
        OutboxEntry entry = outbox.find(id).orElseThrow();
        assertThat(entry.status()).isEqualTo(OutboxStatus.PENDING);
        assertThat(entry.scope()).isEqualTo(scope);
        assertThat(entry.key()).isEqualTo(key);
        assertThat(entry.destination()).isEqualTo("ledger.events");
        assertThat(entry.orderingKey()).isEqualTo("account-1");
        assertThat(new String(entry.payload(), UTF_8)).isEqualTo("10");
        assertThat(entry.headers()).containsEntry("content-type", "text/plain");
        assertThat(entry.attempts()).isZero();
        assertThat(entry.lastError()).isNull();
    }

    @Test
    void aRolledBackCallLeavesNoMessage() {
        assertThatThrownBy(() -> transfers.run(scope, key, fingerprint, tx -> {
                    transfer(tx);
                    throw new IllegalStateException("the bank is closed");
                }))
                .hasMessage("the bank is closed");

        assertThat(OutboxDb.messages(scope)).isZero();
        assertThat(OutboxDb.effects(scope)).isZero();
    }

    @Test
    void aRecordedRejectionLeavesNoMessage() {
        Outcome<String> outcome = transfers.run(scope, key, fingerprint, tx -> {
            transfer(tx);
            throw new Rejection("insufficient-funds", "not enough money");
        });

        assertThat(outcome).isInstanceOf(Outcome.Rejected.class);
        assertThat(OutboxDb.messages(scope)).isZero();
    }

    @Test
    void aReplayedRetryAddsNoSecondMessage() {
        transfers.run(scope, key, fingerprint, this::transfer);
        Outcome<String> replay = transfers.run(scope, key, fingerprint, this::transfer);

        assertThat(replay).isInstanceOf(Outcome.Replayed.class);
        assertThat(OutboxDb.messages(scope)).isEqualTo(1);
        assertThat(OutboxDb.effects(scope)).isEqualTo(1);
    }

    @Test
    void theIdIsTheSameForTheSameClaimAndNameAndDiffersOtherwise() {
        UUID id = Outbox.messageId(scope, key, "a");

        assertThat(Outbox.messageId(Scope.of(scope.value()), IdempotencyKey.of(key.value()), "a"))
                .isEqualTo(id);
        assertThat(Outbox.messageId(scope, key, "b")).isNotEqualTo(id);
        assertThat(Outbox.messageId(OutboxDb.freshScope(), key, "a")).isNotEqualTo(id);
        assertThat(id.version()).isEqualTo(8);
        assertThat(id.variant()).isEqualTo(2);
        // pinned: a message id must not change between versions of the library
        assertThat(Outbox.messageId(Scope.of("s"), IdempotencyKey.of("k"), "n"))
                .isEqualTo(Outbox.messageId(Scope.of("s"), IdempotencyKey.of("k"), "n"))
                .hasToString(PINNED_ID);
    }

    /** {@code Outbox.messageId(Scope.of("s"), IdempotencyKey.of("k"), "n")} as the first version derived it. */
    private static final String PINNED_ID = "33ba0a35-7ae6-87e5-ac2d-3b3230cfa9f2";

    @Test
    void addOutsideAWorkIsRefusedBeforeAnyWrite() {
        assertThatThrownBy(() -> outbox.add(OutboxDb.DSL_CONTEXT, "x", "d", new byte[0]))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("IdempotentTransaction's work");
        assertThat(ClaimContext.of(OutboxDb.DSL_CONTEXT)).isEmpty();
    }

    @Test
    void theWorkSeesItsClaimAndNestedTransactionsToo() {
        transfers.run(scope, key, fingerprint, tx -> {
            assertThat(ClaimContext.of(tx).orElseThrow().scope()).isEqualTo(scope);
            tx.transaction(nested -> assertThat(
                            ClaimContext.of(nested.dsl()).orElseThrow().key())
                    .isEqualTo(key));
            return "ok";
        });
        assertThat(ClaimContext.of(OutboxDb.DSL_CONTEXT))
                .as("never leaks to the caller's context")
                .isEmpty();
    }

    @Test
    void aSecondMessageOfTheSameNameFailsTheWorkAndNothingCommits() {
        assertThatThrownBy(() -> transfers.run(scope, key, fingerprint, tx -> {
                    outbox.add(tx, "twice", "d", new byte[0]);
                    outbox.add(tx, "twice", "d", new byte[0]);
                    return "never";
                }))
                .isInstanceOf(DataAccessException.class)
                .hasMessageContaining("named 'twice' already");
        assertThat(OutboxDb.messages(scope)).isZero();
    }

    @Test
    void transactionsAddingToOneOrderingKeyGetTheirIdsInCommitOrder() throws Exception {
        IdempotencyKey second = OutboxDb.freshKey();
        java.util.concurrent.CountDownLatch added = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch commit = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.ExecutorService two = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            var first = two.submit(() -> transfers.run(scope, key, fingerprint, tx -> {
                outbox.add(
                        tx,
                        OutboxMessage.builder("m", "d", new byte[0])
                                .orderingKey("k1")
                                .build());
                added.countDown();
                commit.await();
                return "first";
            }));
            added.await();
            var later = two.submit(() -> transfers.run(scope, second, fingerprint, tx -> {
                outbox.add(
                        tx,
                        OutboxMessage.builder("m", "d", new byte[0])
                                .orderingKey("k1")
                                .build());
                return "second";
            }));
            // the second add waits on the ordering key's lock until the first transaction ends
            OutboxDb.DATABASE.awaitLockWaiters(
                    "query LIKE '" + io.github.idemtx.jooq.internal.store.StatementKind.OUTBOX_ADD.tag() + "%'", 1);
            assertThat(later.isDone()).isFalse();
            commit.countDown();
            assertThat(first.get(1, java.util.concurrent.TimeUnit.MINUTES)).isInstanceOf(Outcome.Executed.class);
            assertThat(later.get(1, java.util.concurrent.TimeUnit.MINUTES)).isInstanceOf(Outcome.Executed.class);
        } finally {
            commit.countDown();
            two.shutdownNow();
        }
        assertThat(OutboxDb.count(
                        "SELECT count(*)::int FROM " + OutboxDb.SCHEMA + ".idempotency_outbox a JOIN " + OutboxDb.SCHEMA
                                + ".idempotency_outbox b ON a.id < b.id WHERE a.message_id = ? AND b.message_id = ?",
                        Outbox.messageId(scope, key, "m"),
                        Outbox.messageId(scope, second, "m")))
                .as("the first to commit has the lower id")
                .isEqualTo(1);
    }

    @Test
    void messagesAreCheckedWhenBuilt() {
        assertThatThrownBy(() -> OutboxMessage.of(" ", "d", new byte[0]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name");
        assertThatThrownBy(() -> OutboxMessage.builder("n", "d", new byte[0]).header("a:b", "v"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> OutboxMessage.builder("n", "d", new byte[0]).header("a", "v\nw"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> OutboxMessage.builder("n", "d\n", new byte[0]))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
