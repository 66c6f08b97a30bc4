package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class OutcomeTest {

    private static final Instant AT = Instant.parse("2024-03-01T12:00:00Z");
    private static final Failure FAILURE = Failure.of("insufficient_funds", "balance 3 < 5");

    /** Compiles only while the switch covers every permitted case (no default branch). */
    private static String describe(Outcome<String> outcome) {
        return switch (outcome) {
            case Outcome.Executed<String> e -> "executed " + e.value();
            case Outcome.Replayed<String> r -> "replayed " + r.value() + " from " + r.completedAt();
            case Outcome.Rejected<String> f -> "rejected " + f.failure().code() + (f.replayed() ? " (replayed)" : "");
            case Outcome.FingerprintMismatch<String> m -> "mismatch";
            case Outcome.InProgress<String> p -> "in progress, retry after " + p.retryAfter();
        };
    }

    @Test
    void exhaustiveSwitchDispatchesEachCase() {
        assertThat(describe(new Outcome.Executed<>("t-1"))).isEqualTo("executed t-1");
        assertThat(describe(new Outcome.Replayed<>("t-1", AT))).isEqualTo("replayed t-1 from 2024-03-01T12:00:00Z");
        assertThat(describe(new Outcome.Rejected<>(FAILURE, AT, false))).isEqualTo("rejected insufficient_funds");
        assertThat(describe(new Outcome.Rejected<>(FAILURE, AT, true)))
                .isEqualTo("rejected insufficient_funds (replayed)");
        assertThat(describe(new Outcome.FingerprintMismatch<>())).isEqualTo("mismatch");
        assertThat(describe(new Outcome.InProgress<>(Duration.ofSeconds(2))))
                .isEqualTo("in progress, retry after PT2S");
    }

    @Test
    void executedAllowsNullValue() {
        assertThat(new Outcome.Executed<String>(null).value()).isNull();
    }

    @Test
    void replayedAllowsNullValue() {
        assertThat(new Outcome.Replayed<String>(null, AT).value()).isNull();
    }

    @Test
    void replayedRejectsNullCompletedAt() {
        assertThatNullPointerException()
                .isThrownBy(() -> new Outcome.Replayed<>("t-1", null))
                .withMessageContaining("completedAt");
    }

    @Test
    void rejectedRejectsNullFailure() {
        assertThatNullPointerException()
                .isThrownBy(() -> new Outcome.Rejected<String>(null, AT, false))
                .withMessageContaining("failure");
    }

    @Test
    void rejectedRejectsNullRecordedAt() {
        assertThatNullPointerException()
                .isThrownBy(() -> new Outcome.Rejected<String>(FAILURE, null, false))
                .withMessageContaining("recordedAt");
    }

    @Test
    void inProgressRejectsNullRetryAfter() {
        assertThatNullPointerException()
                .isThrownBy(() -> new Outcome.InProgress<String>(null))
                .withMessageContaining("retryAfter");
    }

    @Test
    void casesAreEqualByValue() {
        assertThat(new Outcome.Executed<>("a")).isEqualTo(new Outcome.Executed<>("a"));
        assertThat(new Outcome.Replayed<>("a", AT)).isEqualTo(new Outcome.Replayed<>("a", AT));
        assertThat(new Outcome.Rejected<>(FAILURE, AT, true)).isNotEqualTo(new Outcome.Rejected<>(FAILURE, AT, false));
        assertThat(new Outcome.FingerprintMismatch<>()).isEqualTo(new Outcome.FingerprintMismatch<>());
    }
}
