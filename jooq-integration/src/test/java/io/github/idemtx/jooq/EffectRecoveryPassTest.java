package io.github.idemtx.jooq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.jooq.EffectRecovery.Ending;
import io.github.idemtx.jooq.EffectRecovery.Pass;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A recovery pass's counts, by how each claim ended; no database. */
class EffectRecoveryPassTest {

    @Test
    void countsAreCopiedInTheOrderOfTheWaysAndAbsentWaysCountZero() {
        Map<Ending, Integer> given = new HashMap<>(Map.of(Ending.HANDED_BACK, 2, Ending.FOUND, 3));
        Pass pass = new Pass(given);
        given.put(Ending.FAILED, 1);
        assertThat(pass.counts()).containsExactly(Map.entry(Ending.FOUND, 3), Map.entry(Ending.HANDED_BACK, 2));
        assertThat(pass.total()).isEqualTo(5);
        assertThat(pass.count(Ending.FAILED)).isZero();
        assertThat(pass.counts().toString()).as("as logs printed them").isEqualTo("{found=3, handed_back=2}");
        assertThatThrownBy(() -> pass.counts().put(Ending.FAILED, 1)).isInstanceOf(UnsupportedOperationException.class);
        assertThat(new Pass(Map.of()).total()).isZero();
    }

    @Test
    void nullsAreRefused() {
        Map<Ending, Integer> nullCount = new HashMap<>();
        nullCount.put(Ending.FOUND, null);
        assertThatThrownBy(() -> new Pass(nullCount)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new Pass(Map.of()).count(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void everyWayTheEngineSettlesAClaimHasAnEndingOfTheSameNameAndTheMetersTag() {
        assertThat(Arrays.stream(EffectFlow.Settled.values()).map(Ending::of).map(Ending::name))
                .containsExactly(Arrays.stream(EffectFlow.Settled.values())
                        .map(Enum::name)
                        .toArray(String[]::new));
        assertThat(Ending.values()).hasSameSizeAs(EffectFlow.Settled.values());
        assertThat(Ending.LOST_FENCE.tag()).isEqualTo("lost_fence");
        assertThat(Ending.HANDED_BACK.tag()).isEqualTo("handed_back");
    }

    @Test
    @SuppressWarnings("removal")
    void theDeprecatedRecoveryCountsByTheMetersTags() {
        assertThat(ExternalEffect.Recovery.of(new EffectRecovery.Pass(java.util.Map.of(
                                EffectRecovery.Ending.LOST_FENCE, 2, EffectRecovery.Ending.HANDED_BACK, 1)))
                        .counts())
                .isEqualTo(java.util.Map.of("lost_fence", 2, "handed_back", 1));
    }
}
