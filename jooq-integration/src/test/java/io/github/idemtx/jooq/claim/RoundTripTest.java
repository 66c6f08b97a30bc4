package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.internal.store.StatementKind;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.SqlHook;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

/** What the library sends besides the work's own statements, in each {@link ClaimMode}. */
@DatabaseTest
class RoundTripTest {

    private final List<String> statements = new CopyOnWriteArrayList<>();
    private final DSLContext recorded = SqlHook.around(Db.dsl(), new SqlHook() {
        @Override
        public void before(Sql sql) {
            statements.add(sql.sql());
        }
    });
    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("count me");

    private IdempotentTransaction<String> idem(ClaimMode mode) {
        return IdempotentTransaction.builder(recorded, ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .claimMode(mode)
                .build();
    }

    @Test
    void readFirstAFirstExecutionAddsOneClaimStatementAndOneCompletionSentWithCommit() {
        idem(ClaimMode.CLAIM_FIRST).run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x"));

        assertThat(statements).hasSize(3);
        assertThat(statements.get(0)).matches(Faults::isClaim, "the claim").contains("pg_try_advisory_xact_lock");
        assertThat(statements.get(1)).contains(".effect");
        assertThat(statements.get(2))
                .matches(Faults::isCompletionAndCommit, "the record sent with COMMIT")
                .contains("insert into")
                .contains("idempotency_claim")
                .endsWith("; commit");
    }

    @Test
    void readFirstAReplayIsOneStatement() {
        IdempotentTransaction<String> idem = idem(ClaimMode.CLAIM_FIRST);
        idem.run(scope, key, fingerprint, tx -> "stored");
        statements.clear();

        Outcome<String> replay = idem.run(scope, key, fingerprint, tx -> "never");

        assertThat(replay).isInstanceOf(Outcome.Replayed.class);
        assertThat(statements).singleElement().asString().matches(Faults::isClaim, "the claim");
    }

    @Test
    void workFirstAFirstExecutionAddsOnlyTheCompletionSentWithCommit() {
        idem(ClaimMode.WORK_FIRST).run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x"));

        assertThat(statements).hasSize(2);
        assertThat(statements.get(0)).contains(".effect");
        assertThat(statements.get(1))
                .matches(Faults::isCompletionAndCommit, "the record sent with COMMIT")
                .contains("insert into")
                .contains("idempotency_claim")
                .contains("pg_try_advisory_xact_lock(?)")
                .doesNotContain("set_config") // no session or transaction setting to save and put back
                .endsWith("; commit");
    }

    @Test
    void workFirstAReplayRunsTheWorkThenRollsBackAndReadsTheKeyInOneRoundTrip() {
        IdempotentTransaction<String> idem = idem(ClaimMode.WORK_FIRST);
        idem.run(scope, key, fingerprint, tx -> "stored-" + Db.writeEffect(tx, scope, key, "x"));
        statements.clear();

        Outcome<String> replay =
                idem.run(scope, key, fingerprint, tx -> "again-" + Db.writeEffect(tx, scope, key, "y"));

        assertThat(replay).isInstanceOf(Outcome.Replayed.class);
        assertThat(((Outcome.Replayed<String>) replay).value()).startsWith("stored-");
        assertThat(statements).hasSize(3);
        assertThat(statements.get(0)).contains(".effect");
        assertThat(statements.get(1)).matches(Faults::isCompletionAndCommit, "the insert that finds the key taken");
        assertThat(statements.get(2))
                .matches(
                        sql -> StatementKind.of(sql) == StatementKind.REREAD,
                        "the rollback and the read of the stored answer, together")
                .startsWith(StatementKind.REREAD.tag() + "rollback; select");
        assertThat(Db.effects(scope, key))
                .as("the replay's own write was rolled back")
                .isEqualTo(1);
    }

    @Test
    void anEffectIsItsClaimWithCommitThenTheLocalWritesThenTheFencedRecordWithCommit() {
        ExternalEffect<String, String> effect = ExternalEffect.builder(
                        recorded, "round-trips", ResultCodec.utf8(), ResultCodec.utf8(), new Remote<String, String>() {
                            @Override
                            public Reply<String> call(Intent<String> intent, java.time.Instant deadline) {
                                return Reply.applied("charged " + intent.request());
                            }

                            @Override
                            public Lookup<String> lookup(Intent<String> intent) {
                                return Lookup.unknown("never looked up here");
                            }

                            @Override
                            public void after(DSLContext tx, Intent<String> intent, String charge) {
                                Db.writeEffect(tx, scope, key, charge);
                            }
                        })
                .schema(Db.SCHEMA)
                .build();

        io.github.idemtx.core.RemoteOutcome<String> first = effect.run(scope, key, fingerprint, "10 EUR");

        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(statements).hasSize(3);
        assertThat(statements.get(0))
                .matches(sql -> StatementKind.of(sql) == StatementKind.EFFECT_CLAIM, "the claim in flight")
                .endsWith("; commit");
        assertThat(statements.get(1)).as("the local writes, before the record").contains(".effect");
        assertThat(statements.get(2))
                .matches(sql -> StatementKind.of(sql) == StatementKind.EFFECT_RECORD, "the fenced record")
                .endsWith("; commit");
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }
}
