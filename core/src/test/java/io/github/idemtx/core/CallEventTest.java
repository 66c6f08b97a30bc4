package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.CallEvent.Result;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class CallEventTest {

    private final Scope scope = Scope.of("tenant-secret");

    @Test
    void theBuilderSetsEveryMeasureAndLeavesTheRestAtTheirDefaults() {
        CallEvent bare = CallEvent.builder("transaction", Result.EXECUTED).build();
        assertThat(bare.operation()).isEqualTo("transaction");
        assertThat(bare.result()).isEqualTo(Result.EXECUTED);
        assertThat(bare.exception()).isNull();
        assertThat(bare.joined()).isFalse();
        assertThat(bare.attempts()).isEqualTo(1);
        assertThat(bare.scope()).isNull();
        assertThat(bare.total()).isZero();

        CallEvent full = CallEvent.builder("effect:charge", Result.FAILED)
                .exception("java.lang.IllegalStateException")
                .joined(true)
                .attempts(3)
                .scope(scope)
                .total(100)
                .claiming(10)
                .waiting(20)
                .work(30)
                .recording(40)
                .build();
        assertThat(full.exception()).isEqualTo("java.lang.IllegalStateException");
        assertThat(full.joined()).isTrue();
        assertThat(full.attempts()).isEqualTo(3);
        assertThat(full.scope()).isEqualTo(scope);
        assertThat(full.totalNanos()).isEqualTo(100);
        assertThat(full.claimingNanos()).isEqualTo(10);
        assertThat(full.waitingNanos()).isEqualTo(20);
        assertThat(full.workNanos()).isEqualTo(30);
        assertThat(full.recordingNanos()).isEqualTo(40);
        assertThat(full.total()).isEqualTo(Duration.ofNanos(100));
        assertThat(full.claiming()).isEqualTo(Duration.ofNanos(10));
        assertThat(full.waiting()).isEqualTo(Duration.ofNanos(20));
        assertThat(full.work()).isEqualTo(Duration.ofNanos(30));
        assertThat(full.recording()).isEqualTo(Duration.ofNanos(40));
    }

    @Test
    void operationAndResultAreRequired() {
        assertThatThrownBy(() -> CallEvent.builder(null, Result.EXECUTED))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("operation");
        assertThatThrownBy(() -> CallEvent.builder("transaction", null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("result");
    }

    @Test
    void toStringNamesWhatHappenedButNeverTheScope() {
        CallEvent event = CallEvent.builder("transaction", Result.FAILED)
                .exception("x.Boom")
                .scope(scope)
                .attempts(2)
                .total(5)
                .build();
        assertThat(event.toString())
                .contains(
                        "operation=transaction",
                        "result=FAILED",
                        "exception=x.Boom",
                        "attempts=2",
                        "total=PT0.000000005S")
                .doesNotContain("tenant-secret");
        assertThat(CallEvent.builder("transaction", Result.EXECUTED).build().toString())
                .doesNotContain("exception");
    }

    @Test
    void eachOutcomeHasItsResultAndTag() {
        Instant at = Instant.EPOCH;
        assertThat(Result.of(new Outcome.Executed<>("v"))).isEqualTo(Result.EXECUTED);
        assertThat(Result.of(new Outcome.Replayed<>("v", at))).isEqualTo(Result.REPLAYED);
        assertThat(Result.of(new Outcome.Rejected<>(Failure.of("code", "message"), at, false)))
                .isEqualTo(Result.REJECTED);
        assertThat(Result.of(new Outcome.FingerprintMismatch<>())).isEqualTo(Result.FINGERPRINT_MISMATCH);
        assertThat(Result.of(new Outcome.InProgress<>(Duration.ofSeconds(1)))).isEqualTo(Result.IN_PROGRESS);
        assertThat(Result.of(new RemoteOutcome.Unknown<>(Duration.ofSeconds(1), "timeout")))
                .isEqualTo(Result.UNKNOWN);
        assertThat(Result.of(new RemoteOutcome.NeedsReconciliation<>(at))).isEqualTo(Result.NEEDS_RECONCILIATION);
        assertThat(Result.FINGERPRINT_MISMATCH.tag()).isEqualTo("fingerprint_mismatch");
        assertThat(Result.EXECUTED.tag()).isEqualTo("executed");
    }

    @Test
    void aCallStartCarriesOperationAndScopeAndPrintsNoScope() {
        CallStart start = CallStart.of("effect:charge", scope);
        assertThat(start.operation()).isEqualTo("effect:charge");
        assertThat(start.scope()).isEqualTo(scope);
        assertThat(start.toString()).isEqualTo("CallStart[operation=effect:charge]");
        assertThat(CallStart.of("transaction", null).scope()).isNull();
        assertThatThrownBy(() -> CallStart.of(null, scope))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("operation");
    }

    @Test
    void aPurgeEventSaysWhatThePurgeDid() {
        PurgeEvent ok = PurgeEvent.of(7, 100, Duration.ofMillis(3), null);
        assertThat(ok.deleted()).isEqualTo(7);
        assertThat(ok.limit()).isEqualTo(100);
        assertThat(ok.took()).isEqualTo(Duration.ofMillis(3));
        assertThat(ok.exception()).isNull();
        assertThat(ok.toString()).isEqualTo("PurgeEvent[deleted=7, limit=100, took=PT0.003S]");
        assertThat(PurgeEvent.of(0, 5, Duration.ZERO, "x.Boom").toString()).endsWith(", exception=x.Boom]");
        assertThatThrownBy(() -> PurgeEvent.of(0, 1, null, null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("took");
    }
}
