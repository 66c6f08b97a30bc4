package io.github.idemtx.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.IdempotencyKey;
import java.time.Instant;
import java.time.LocalDate;
import org.junit.jupiter.api.Test;

/** The day a key begins with: UTC, strict, and named in full in no message. */
class KeyDayTest {

    @Test
    void theDayIsTheUtcDayOfTheInstant() {
        Instant lateInUtc = Instant.parse("2026-12-03T23:59:59.999Z");
        assertThat(KeyDay.format(KeyDay.utc(lateInUtc))).isEqualTo("20261203");
        assertThat(ClaimPartitions.prefix(lateInUtc.plusMillis(1))).isEqualTo("20261204");
    }

    @Test
    void aKeyGivesTheDayItBeginsWith() {
        assertThat(KeyDay.of(IdempotencyKey.of("20261203-abc"))).isEqualTo(LocalDate.of(2026, 12, 3));
        assertThat(KeyDay.of(IdempotencyKey.of("20240229"))).isEqualTo(LocalDate.of(2024, 2, 29));
    }

    @Test
    void aKeyWithoutAValidDayIsRefused() {
        for (String key : new String[] {"2026120", "20260230-x", "2026-12-03", "abcdefgh-1"}) {
            assertThatThrownBy(() -> KeyDay.of(IdempotencyKey.of(key)))
                    .as(key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("does not begin with the day of its intent");
        }
    }

    @Test
    void aLongKeyIsCutInTheMessage() {
        String key = "x".repeat(100);
        assertThatThrownBy(() -> KeyDay.of(IdempotencyKey.of(key)))
                .hasMessageContaining("'" + "x".repeat(40) + "...'")
                .hasMessageNotContaining("x".repeat(41));
    }
}
