package io.github.idemtx.jooq.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.CuttingProxy;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ambiguous commit, made on purpose: a proxy between pgjdbc and PostgreSQL forwards the COMMIT
 * that the completion carries and cuts the connection before the answer reaches the client. The
 * client sees a connection error; the retry with the same key replays the committed result. And
 * the mirror case: the proxy cuts before the COMMIT reaches the server; the retry executes, once.
 * {@code ExternalEffectAmbiguousCommitTest} does both at each COMMIT of an external effect.
 */
@DatabaseTest
class AmbiguousCommitTest {

    private static final int ITERATIONS = 50;

    private static CuttingProxy proxy;
    private static HikariDataSource pool;
    private static IdempotentTransaction<String> idem;

    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("cut me");

    @BeforeAll
    static void startProxy() throws Exception {
        proxy = CuttingProxy.toTestDatabase();
        pool = proxy.newPool("through-cutting-proxy");
        idem = Db.pinnedBuilder(DSL.using(pool, SQLDialect.POSTGRES), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .build();
    }

    @AfterAll
    static void stopProxy() throws Exception {
        if (proxy != null) {
            proxy.close(); // and its pool
        }
    }

    private Outcome<String> call(IdempotencyKey key, AtomicInteger runs) {
        return idem.run(scope, key, fingerprint, tx -> {
            runs.incrementAndGet();
            return "effect-" + Db.writeEffect(tx, scope, key, "through the proxy");
        });
    }

    /** Runs the call with the proxy armed; returns the connection error's SQLSTATE. */
    private String cutCall(CuttingProxy.Cut cut, IdempotencyKey key, AtomicInteger runs, int iteration) {
        int cutsBefore = proxy.cuts();
        proxy.arm(cut);
        RuntimeException failure = null;
        Outcome<String> outcome = null;
        try {
            outcome = call(key, runs);
        } catch (RuntimeException e) {
            failure = e;
        }
        assertThat(proxy.armed())
                .as("iteration %d: the proxy saw the COMMIT", iteration)
                .isFalse();
        assertThat(proxy.cuts()).isEqualTo(cutsBefore + 1);
        assertThat(outcome)
                .as("iteration %d: the first call has no answer", iteration)
                .isNull();
        assertThat(failure)
                .as("iteration %d: the COMMIT's outcome is reported unknown", iteration)
                .isInstanceOfSatisfying(
                        CommitOutcomeUnknownException.class,
                        e -> assertThat(e.key()).isEqualTo(key))
                .matches(Faults::isConnectionError, "is a connection error");
        return Faults.connectionErrorState(failure);
    }

    @Test
    void aCommitWhoseAnswerIsLostIsReplayedByTheRetry() {
        Map<String, Integer> states = new TreeMap<>();
        for (int i = 0; i < ITERATIONS; i++) {
            IdempotencyKey key = Db.freshKey();
            AtomicInteger runs = new AtomicInteger();

            states.merge(cutCall(CuttingProxy.Cut.AFTER_COMMIT, key, runs, i), 1, Integer::sum);

            assertThat(Db.claims(scope, key))
                    .as("iteration %d: the server committed", i)
                    .isEqualTo(1);
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            String committed = "effect-" + effectId(key);

            Outcome<String> retry = call(key, runs);

            assertThat(retry)
                    .as("iteration %d", i)
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(committed));
            assertThat(runs).hasValue(Db.workFirst() ? 2 : 1); // WORK_FIRST: the replay ran the work, rolled back
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
        }
        System.out.printf(
                "ambiguous commit: %d cuts after COMMIT, client errors %s, %d replays, one effect each%n",
                ITERATIONS, states, ITERATIONS);
    }

    @Test
    void aCommitThatNeverReachedTheServerIsExecutedOnceByTheRetry() {
        Map<String, Integer> states = new TreeMap<>();
        for (int i = 0; i < ITERATIONS; i++) {
            IdempotencyKey key = Db.freshKey();
            AtomicInteger runs = new AtomicInteger();

            states.merge(cutCall(CuttingProxy.Cut.BEFORE_COMMIT, key, runs, i), 1, Integer::sum);

            assertThat(Db.claims(scope, key))
                    .as("iteration %d: nothing committed", i)
                    .isZero();
            assertThat(Db.effects(scope, key)).isZero();

            Outcome<String> retry = call(key, runs);

            assertThat(retry).as("iteration %d", i).isInstanceOf(Outcome.Executed.class);
            assertThat(runs).hasValue(2);
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
            String executed = ((Outcome.Executed<String>) retry).value();
            assertThat(call(key, runs))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(executed));
        }
        System.out.printf(
                "mirror case: %d cuts before COMMIT, client errors %s, %d executions on retry, one effect each%n",
                ITERATIONS, states, ITERATIONS);
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
