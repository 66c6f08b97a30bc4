package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DigestsTest {

    @Test
    void theLockIdIsTheFirstEightBytesOfSha256OverScopeZeroByteKey() {
        // expected values from Python: int.from_bytes(hashlib.sha256(b"tenant-a\x00key-1").digest()[:8], "big",
        // signed=True)
        assertThat(Digests.lockId("tenant-a", "key-1")).isEqualTo(6701101447010193175L);
        assertThat(Digests.lockId("t\u00e9nant", "cl\u00e9")).isEqualTo(-1780617457605839941L);
    }

    @Test
    void theZeroByteKeepsScopeAndKeyApart() {
        assertThat(Digests.lockId("ab", "c")).isNotEqualTo(Digests.lockId("a", "bc"));
    }

    @Test
    void theDownstreamKeyIsTheEffectAndTheBase64urlSha256OfScopeKeyAndStartInMicroseconds() {
        // expected value from Python: "payout:" + base64.urlsafe_b64encode(hashlib.sha256(
        //   b"tenant-a\x00key-1\x00" + b"1700000000123456").digest()).rstrip(b"=").decode()
        java.time.Instant at = java.time.Instant.ofEpochSecond(1_700_000_000L, 123_456_789L);
        assertThat(Digests.downstreamKey("payout", "tenant-a", "key-1", at))
                .isEqualTo("payout:nQo6UVW1pAcBoMXkHg_t6ROGb5tNq94kgcOP23DoqIU")
                .isEqualTo(Digests.downstreamKey("payout", "tenant-a", "key-1", at.plusNanos(999 - 789)))
                .isNotEqualTo(Digests.downstreamKey("payout", "tenant-a", "key-1", at.plusNanos(1_000)));
    }
}
