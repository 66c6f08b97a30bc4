package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DigestsTest {

    @Test
    void theLockIdIsTheFirstEightBytesOfSha256OverScopeZeroByteKey() {
        // expected values from Python: int.from_bytes(hashlib.sha256(b"tenant-a\x00key-1").digest()[:8], "big", signed=True)
        assertThat(io.github.idemtx.jooq.internal.store.Digests.lockId("tenant-a", "key-1")).isEqualTo(6701101447010193175L);
        assertThat(io.github.idemtx.jooq.internal.store.Digests.lockId("t\u00e9nant", "cl\u00e9")).isEqualTo(-1780617457605839941L);
    }

    @Test
    void theZeroByteKeepsScopeAndKeyApart() {
        assertThat(io.github.idemtx.jooq.internal.store.Digests.lockId("ab", "c")).isNotEqualTo(io.github.idemtx.jooq.internal.store.Digests.lockId("a", "bc"));
    }
}
