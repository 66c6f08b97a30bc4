package io.github.idemtx.jooq.outbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimContext;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import java.time.Instant;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

/**
 * An external effect's local writes add outbox messages of their claim: the hold's with the claim's
 * commit, the answer's with its record, nothing when the record rolls back.
 */
@DatabaseTest
class EffectOutboxTest {

    private final Outbox outbox = OutboxDb.outbox();
    private final Scope scope = OutboxDb.freshScope();
    private final IdempotencyKey key = OutboxDb.freshKey();
    private final Fingerprint fingerprint = OutboxDb.fingerprint("pay 10");
    private volatile boolean refuse;
    private volatile boolean afterThrows;

    /** A bank whose hold and answer each announce themselves through the outbox. */
    private final class Announcing implements Remote.Holding<String, String> {
        @Override
        public void before(DSLContext tx, Intent<String> intent) {
            assertThat(ClaimContext.of(tx))
                    .hasValueSatisfying(c -> assertThat(c.key()).isEqualTo(key));
            outbox.add(
                    tx,
                    "held:" + intent.downstreamKey(),
                    "payouts",
                    intent.request().getBytes(UTF_8));
        }

        @Override
        public Reply<String> call(Intent<String> intent, Instant deadline) {
            return refuse ? Reply.refused(new Failure("declined", "no")) : Reply.applied("ch_1");
        }

        @Override
        public Lookup<String> lookup(Intent<String> intent) {
            return Lookup.unknown("not here");
        }

        @Override
        public void after(DSLContext tx, Intent<String> intent, String charge) {
            outbox.add(tx, "paid:" + intent.downstreamKey(), "payouts", charge.getBytes(UTF_8));
            if (afterThrows) {
                throw new IllegalStateException("the local writes failed");
            }
        }

        @Override
        public void refused(DSLContext tx, Intent<String> intent, Failure failure) {
            outbox.add(
                    tx,
                    "refused:" + intent.downstreamKey(),
                    "payouts",
                    failure.code().getBytes(UTF_8));
        }
    }

    private ExternalEffect<String, String> effect() {
        return ExternalEffect.builder(
                        OutboxDb.DSL_CONTEXT, "pay", ResultCodec.utf8(), ResultCodec.utf8(), new Announcing())
                .schema(OutboxDb.SCHEMA)
                .build();
    }

    private String downstreamKey() {
        java.time.OffsetDateTime created = OutboxDb.DSL_CONTEXT
                .resultQuery(
                        "SELECT created_at FROM " + OutboxDb.SCHEMA
                                + ".idempotency_claim WHERE scope = ? AND idem_key = ?",
                        scope.value(),
                        key.value())
                .fetchSingle(0, java.time.OffsetDateTime.class);
        return ExternalEffect.downstreamKey("pay", scope, key, created.toInstant());
    }

    @Test
    void theHoldsAndTheAnswersMessagesCommitWithTheClaimAndItsRecordUnderIdsOfTheClaim() {
        RemoteOutcome<String> outcome = effect().run(scope, key, fingerprint, "10");

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        String downstream = downstreamKey();
        assertThat(outbox.find(Outbox.messageId(scope, key, "held:" + downstream)))
                .isPresent();
        assertThat(outbox.find(Outbox.messageId(scope, key, "paid:" + downstream)))
                .hasValueSatisfying(
                        m -> assertThat(new String(m.payload(), UTF_8)).isEqualTo("ch_1"));
        assertThat(OutboxDb.messages(scope)).isEqualTo(2);
    }

    @Test
    void aRefusalsMessageCommitsWithItsRecord() {
        refuse = true;
        assertThat(effect().run(scope, key, fingerprint, "10")).isInstanceOf(Outcome.Rejected.class);

        assertThat(outbox.find(Outbox.messageId(scope, key, "refused:" + downstreamKey())))
                .hasValueSatisfying(
                        m -> assertThat(new String(m.payload(), UTF_8)).isEqualTo("declined"));
    }

    @Test
    void localWritesThatFailLeaveNoMessageOfTheAnswer() {
        afterThrows = true;
        RemoteOutcome<String> outcome = effect().run(scope, key, fingerprint, "10");

        assertThat(outcome).isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(outbox.find(Outbox.messageId(scope, key, "paid:" + downstreamKey())))
                .isEmpty();
        assertThat(OutboxDb.messages(scope))
                .as("the hold's, committed with the claim")
                .isEqualTo(1);
    }
}
