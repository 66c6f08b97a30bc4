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

    @Test
    void aStatementReferenceIsThe3CharactersOfItsEffectAnd29OfItsClaimInBase32() {
        // expected from Python: b32(sha256(b"idemtx.statement\x00payout"))[:3]
        //   + b32(sha256(b"payout\x00tenant-a\x00k-1\x001767225600123456"))[:29]
        java.time.Instant at = java.time.Instant.parse("2026-01-01T00:00:00.123456Z");
        String reference = Digests.statementReference("payout", "tenant-a", "k-1", at);
        org.assertj.core.api.Assertions.assertThat(reference)
                .isEqualTo("SBUXBZA7MNJZMPRRWSSNQWX3XW2GDFNR")
                .hasSize(32)
                .matches("[A-Z2-7]{32}")
                .startsWith(Digests.statementPrefix("payout"));
        org.assertj.core.api.Assertions.assertThat(Digests.statementPrefix("payout"))
                .isEqualTo("SBU");
        org.assertj.core.api.Assertions.assertThat(Digests.statementReference("payout", "tenant-a", "k-2", at))
                .startsWith("SBU")
                .isNotEqualTo(reference);
        org.assertj.core.api.Assertions.assertThat(Digests.statementReference("refund", "tenant-a", "k-1", at))
                .doesNotStartWith("SBU");
        org.assertj.core.api.Assertions.assertThat(
                        Digests.statementReference("payout", "tenant-a", "k-1", at.plusNanos(1_000)))
                .isNotEqualTo(reference);
        org.assertj.core.api.Assertions.assertThat(
                        Digests.statementReference("payout", "tenant-a", "k-1", at.plusNanos(999)))
                .as("to the microsecond, as the column keeps it")
                .isEqualTo(reference);
    }
}
