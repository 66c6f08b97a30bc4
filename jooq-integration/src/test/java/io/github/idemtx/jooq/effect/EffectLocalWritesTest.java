package io.github.idemtx.jooq.effect;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.support.Db;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;
import org.postgresql.core.BaseConnection;

/**
 * An effect's local writes ({@code after}) run before the fenced record, which rides with the
 * COMMIT: what happens when they fail on their first run only, and when they end their own
 * transaction past the guard (their writes are then committed without the answer, and must not be
 * written again).
 */
@DatabaseTest
class EffectLocalWritesTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("local writes");
    private final AtomicInteger calls = new AtomicInteger();
    private final AtomicInteger afters = new AtomicInteger();

    private ExternalEffect<String, String> effect(String name, Remote<String, String> remote) {
        return ExternalEffect.builder(Db.dsl(), name, ResultCodec.utf8(), ResultCodec.utf8(), remote)
                .schema(Db.SCHEMA)
                .build();
    }

    private abstract class Charges implements Remote<String, String> {
        @Override
        public Reply<String> call(Intent<String> intent, Instant deadline) {
            return Reply.applied("charge-" + calls.incrementAndGet());
        }

        @Override
        public Lookup<String> lookup(Intent<String> intent) {
            return Lookup.unknown("not looked up here");
        }
    }

    @Test
    void localWritesThatFailOnlyOnTheirFirstRunAreRunAgainAfterTheRecordAndCommitOnce() {
        ExternalEffect<String, String> charges = effect("after-fails-once", new Charges() {
            @Override
            public void after(DSLContext tx, Intent<String> intent, String charge) {
                Db.writeEffect(tx, scope, key, charge);
                if (afters.incrementAndGet() == 1) {
                    throw new IllegalStateException("the first run fails after writing");
                }
            }
        });

        RemoteOutcome<String> first = charges.run(scope, key, fingerprint, "10 EUR");

        assertThat(first)
                .isInstanceOfSatisfying(
                        Outcome.Executed.class, e -> assertThat(e.value()).isEqualTo("charge-1"));
        assertThat(afters).as("run first, then again after the record").hasValue(2);
        assertThat(Db.effects(scope, key))
                .as("the first run's write was rolled back")
                .isEqualTo(1);
        assertThat(charges.run(scope, key, fingerprint, "10 EUR"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
        assertThat(calls).hasValue(1);
    }

    @Test
    void localWritesThatCommitPastTheGuardAreNotRunAgainAndTheAnswerIsRecorded() {
        ExternalEffect<String, String> charges = effect("after-commits", new Charges() {
            @Override
            public void after(DSLContext tx, Intent<String> intent, String charge) {
                afters.incrementAndGet();
                Db.writeEffect(tx, scope, key, charge);
                tx.connection(c -> c.unwrap(BaseConnection.class).commit());
            }
        });

        RemoteOutcome<String> first = charges.run(scope, key, fingerprint, "10 EUR");

        assertThat(first)
                .isInstanceOfSatisfying(
                        Outcome.Executed.class, e -> assertThat(e.value()).isEqualTo("charge-1"));
        assertThat(afters).as("not run again: its writes are committed").hasValue(1);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        assertThat(charges.run(scope, key, fingerprint, "10 EUR"))
                .as("the answer is recorded")
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
        assertThat(afters).hasValue(1);
        assertThat(calls).hasValue(1);
    }
}
