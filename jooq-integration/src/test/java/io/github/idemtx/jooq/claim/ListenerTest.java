package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.CallEvent.Result;
import io.github.idemtx.core.CallStart;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.PurgeEvent;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** One event per call, with its outcome and where its time went; listeners never change an outcome. */
@DatabaseTest
class ListenerTest {

    static final class Recorder implements IdempotencyListener<String> {
        final List<CallEvent> calls = new CopyOnWriteArrayList<>();
        final List<String> started = new CopyOnWriteArrayList<>();
        final List<CallStart> starts = new CopyOnWriteArrayList<>();
        final List<PurgeEvent> purges = new CopyOnWriteArrayList<>();

        @Override
        public String callStarted(CallStart start) {
            starts.add(start);
            return "started:" + start.operation();
        }

        @Override
        public void callFinished(CallEvent event, String started) {
            calls.add(event);
            this.started.add(started);
        }

        @Override
        public void purged(PurgeEvent event) {
            purges.add(event);
        }
    }

    private final Recorder recorder = new Recorder();
    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("listened");

    private IdempotentTransaction<String> idem(IdempotencyListener... listeners) {
        IdempotentTransaction.Builder<String> b = Db.builder(Db.dsl(), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(300))
                        .build());
        for (IdempotencyListener l : listeners) {
            b.listener(l);
        }
        return b.build();
    }

    @Test
    void everyOutcomeIsOneEventWithItsResultAndWhereItsTimeWent() {
        IdempotentTransaction<String> idem = idem(recorder);
        IdempotencyKey key = Db.freshKey();
        idem.run(scope, key, fingerprint, tx -> "v-" + Db.writeEffect(tx, scope, key, "x"));
        idem.run(scope, key, fingerprint, tx -> "never");
        idem.run(scope, key, Db.fingerprint("other"), tx -> "never");
        idem.run(scope, Db.freshKey(), fingerprint, tx -> {
            throw new Rejection("nope", "refused");
        });
        assertThatThrownBy(() -> idem.run(scope, Db.freshKey(), fingerprint, tx -> {
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");
        assertThat(recorder.calls)
                .extracting(CallEvent::result)
                .containsExactly(
                        Result.EXECUTED, Result.REPLAYED, Result.FINGERPRINT_MISMATCH, Result.REJECTED, Result.FAILED);
        assertThat(recorder.calls.get(4).exception()).isEqualTo(IllegalStateException.class.getName());
        assertThat(recorder.started).containsOnly("started:transaction");
        assertThat(recorder.starts).extracting(CallStart::scope).containsOnly(scope);
        assertThat(recorder.starts.get(0).toString()).doesNotContain(scope.value());
        CallEvent executed = recorder.calls.get(0);
        assertThat(executed.operation()).isEqualTo("transaction");
        assertThat(executed.attempts()).isEqualTo(1);
        assertThat(executed.joined()).isFalse();
        if (Db.workFirst()) {
            assertThat(executed.claiming()).as("the record is the claim").isZero();
        } else {
            assertThat(executed.claiming()).isPositive();
        }
        assertThat(executed.work()).isPositive();
        assertThat(executed.recording()).isPositive();
        assertThat(executed.total())
                .isGreaterThanOrEqualTo(
                        executed.claiming().plus(executed.work()).plus(executed.recording()));
        assertThat(executed.scope()).isEqualTo(scope);
        assertThat(executed.toString()).doesNotContain(scope.value()).doesNotContain(key.value());
    }

    @Test
    void aWaitOnAHolderIsTimedAndAnInProgressCounted() throws Exception {
        // the wait on a holder's lock is CLAIM_FIRST's; WORK_FIRST's wait on a holder's row: WorkFirstTest
        IdempotentTransaction<String> idem = Db.claimFirst(Db.dsl(), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(300))
                        .build())
                .listener(recorder)
                .build();
        IdempotencyKey key = Db.freshKey();
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Future<Outcome<String>> first = holder.submit(() -> idem.run(scope, key, fingerprint, tx -> {
                holding.countDown();
                release.await(10, TimeUnit.SECONDS);
                return "first";
            }));
            holding.await(10, TimeUnit.SECONDS);
            assertThat(idem.run(scope, key, fingerprint, tx -> "never")).isInstanceOf(Outcome.InProgress.class);
            release.countDown();
            first.get(10, TimeUnit.SECONDS);
        } finally {
            holder.shutdownNow();
        }
        CallEvent inProgress = recorder.calls.stream()
                .filter(e -> e.result() == Result.IN_PROGRESS)
                .findFirst()
                .orElseThrow();
        assertThat(inProgress.waiting()).isGreaterThanOrEqualTo(Duration.ofMillis(250));
    }

    @Test
    void aJoinedCallSaysSo() {
        IdempotencyKey key = Db.freshKey();
        Db.dsl()
                .transaction(cfg -> Db.builder(cfg.dsl(), ResultCodec.utf8())
                        .schema(Db.SCHEMA)
                        .listener(recorder)
                        .build()
                        .run(scope, key, fingerprint, tx -> "joined"));
        assertThat(recorder.calls).singleElement().satisfies(e -> {
            assertThat(e.joined()).isTrue();
            assertThat(e.result()).isEqualTo(Result.EXECUTED);
        });
    }

    @Test
    void aListenerThatThrowsChangesNothingAndTheOthersAreStillTold() {
        IdempotencyListener<Void> broken = new IdempotencyListener<>() {
            @Override
            public Void callStarted(CallStart start) {
                throw new IllegalStateException("broken start");
            }

            @Override
            public void callFinished(CallEvent event, Void started) {
                throw new IllegalStateException("broken finish");
            }
        };
        IdempotentTransaction<String> idem = idem(broken, recorder);
        IdempotencyKey key = Db.freshKey();
        assertThat(idem.run(scope, key, fingerprint, tx -> "fine")).isEqualTo(new Outcome.Executed<>("fine"));
        assertThat(recorder.calls).extracting(CallEvent::result).containsExactly(Result.EXECUTED);
    }

    @Test
    void aPurgeIsAnEvent() {
        IdempotentTransaction<String> idem = idem(recorder);
        IdempotencyKey key = Db.freshKey();
        idem.run(scope, key, fingerprint, tx -> "old");
        Db.expire(scope, key);
        int deleted = idem.purgeExpired(100_000);
        assertThat(recorder.purges).singleElement().satisfies(p -> {
            assertThat(p.deleted()).isEqualTo(deleted).isPositive();
            assertThat(p.limit()).isEqualTo(100_000);
            assertThat(p.exception()).isNull();
        });
    }

    @Test
    void withoutListenersNothingIsMeasuredAndOutcomesAreTheSame() {
        IdempotentTransaction<String> idem = idem();
        assertThat(idem.run(scope, Db.freshKey(), fingerprint, tx -> "plain"))
                .isEqualTo(new Outcome.Executed<>("plain"));
    }
}
