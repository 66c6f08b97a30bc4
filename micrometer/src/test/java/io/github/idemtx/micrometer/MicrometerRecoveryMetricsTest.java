package io.github.idemtx.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Recovery passes as counters by effect and outcome, and a pass timer; no database. */
class MicrometerRecoveryMetricsTest {

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final MicrometerRecoveryMetrics metrics = MicrometerRecoveryMetrics.of(meters);

    private double claims(String effect, String outcome) {
        return meters.get(MicrometerRecoveryMetrics.CLAIMS)
                .tags("effect", effect, "outcome", outcome)
                .counter()
                .count();
    }

    @Test
    void registeringAnEffectShowsEveryOutcomeAtZeroBeforeItsFirstPass() {
        metrics.register("charge");
        for (String outcome : MicrometerRecoveryMetrics.OUTCOMES) {
            assertThat(claims("charge", outcome)).as(outcome).isZero();
        }
        assertThat(meters.get(MicrometerRecoveryMetrics.PASS)
                        .tags("effect", "charge", "outcome", "ok")
                        .timer()
                        .count())
                .isZero();
    }

    @Test
    void eachPassAddsItsCountsByEffectAndOutcomeAndIsTimed() {
        metrics.passed("charge", Map.of("found", 2, "handed_back", 3), Duration.ofMillis(40));
        metrics.passed("charge", Map.of("found", 1, "reconciliation", 1), Duration.ofMillis(10));
        metrics.passed("refund", Map.of("unknown", 4), Duration.ofMillis(5));
        assertThat(claims("charge", "found")).isEqualTo(3);
        assertThat(claims("charge", "handed_back")).isEqualTo(3);
        assertThat(claims("charge", "reconciliation")).isEqualTo(1);
        assertThat(claims("refund", "unknown")).isEqualTo(4);
        assertThat(meters.find(MicrometerRecoveryMetrics.CLAIMS)
                        .tags("effect", "refund", "outcome", "found")
                        .counter())
                .as("an outcome that did not occur is not made up for an unregistered effect")
                .isNull();
        assertThat(meters.get(MicrometerRecoveryMetrics.PASS)
                        .tags("effect", "charge", "outcome", "ok", "exception", "none")
                        .timer()
                        .count())
                .isEqualTo(2);
    }

    @Test
    void aPassThatThrewIsTimedAsFailedWithItsExceptionsSimpleName() {
        metrics.failed("charge", Duration.ofMillis(3), new IllegalStateException("connection refused"));
        assertThat(meters.get(MicrometerRecoveryMetrics.PASS)
                        .tags("effect", "charge", "outcome", "failed", "exception", "IllegalStateException")
                        .timer()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void badInputIsRefusedNamingWhatWasWrongAndCountsNothing() {
        assertThatThrownBy(() -> metrics.passed("charge", Map.of("found", -1), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("found")
                .hasMessageContaining("-1");
        assertThat(meters.find(MicrometerRecoveryMetrics.CLAIMS).counter()).isNull();
        assertThatThrownBy(() -> metrics.passed(null, Map.of(), Duration.ZERO))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("effect");
        assertThatThrownBy(() -> MicrometerRecoveryMetrics.of(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("meters");
    }
}
