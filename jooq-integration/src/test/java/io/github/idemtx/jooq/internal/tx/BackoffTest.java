package io.github.idemtx.jooq.internal.tx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BackoffTest {

    private static final long MS = 1_000_000L;

    @Test
    void theCapDoublesFromTheInitialBackoffUpToTheMaximum() {
        assertThat(Backoff.capNanos(1, 5 * MS, 500 * MS)).isEqualTo(5 * MS);
        assertThat(Backoff.capNanos(2, 5 * MS, 500 * MS)).isEqualTo(10 * MS);
        assertThat(Backoff.capNanos(3, 5 * MS, 500 * MS)).isEqualTo(20 * MS);
        assertThat(Backoff.capNanos(7, 5 * MS, 500 * MS)).isEqualTo(320 * MS);
        assertThat(Backoff.capNanos(8, 5 * MS, 500 * MS)).isEqualTo(500 * MS);
        assertThat(Backoff.capNanos(100, 5 * MS, 500 * MS)).isEqualTo(500 * MS);
        // exactly half of an odd maximum doubles to just under it, not to it
        assertThat(Backoff.capNanos(2, 5, 11)).isEqualTo(10);
        assertThat(Backoff.capNanos(3, 5, 11)).isEqualTo(11);
    }

    @Test
    void neverOverflowsNorGoesNegative() {
        assertThat(Backoff.capNanos(Integer.MAX_VALUE, 1, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
        assertThat(Backoff.capNanos(3, Long.MAX_VALUE, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
        assertThat(Backoff.capNanos(5, 0, 500 * MS))
                .as("no initial backoff: never a pause")
                .isZero();
        assertThat(Backoff.capNanos(5, 10 * MS, 0)).isZero();
        assertThat(Backoff.capNanos(1, 900 * MS, 500 * MS))
                .as("an initial above the maximum is capped")
                .isEqualTo(500 * MS);
    }

    @Test
    void theDelayIsUniformBetweenZeroAndTheCap() {
        assertThat(Backoff.delayNanos(3, 5 * MS, 500 * MS, 0.0)).isZero();
        assertThat(Backoff.delayNanos(3, 5 * MS, 500 * MS, 0.5)).isEqualTo(10 * MS);
        assertThat(Backoff.delayNanos(3, 5 * MS, 500 * MS, Math.nextDown(1.0))).isEqualTo(20 * MS);
        assertThat(Backoff.delayNanos(1, Long.MAX_VALUE, Long.MAX_VALUE, Math.nextDown(1.0)))
                .as("no overflow at the top")
                .isGreaterThan(Long.MAX_VALUE / 2);
    }

    @Test
    void refusesAttemptsBelowOneAndUnitsOutsideTheInterval() {
        assertThatThrownBy(() -> Backoff.capNanos(0, MS, MS))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("attempt");
        assertThatThrownBy(() -> Backoff.delayNanos(1, MS, MS, 1.0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unit");
        assertThatThrownBy(() -> Backoff.delayNanos(1, MS, MS, Double.NaN))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
