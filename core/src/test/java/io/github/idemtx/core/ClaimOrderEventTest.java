package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ClaimOrderEventTest {

    @Test
    void carriesTheOrderAndTheSharesThatDecidedIt() {
        ClaimOrderEvent toClaimFirst = ClaimOrderEvent.toClaimFirst(0.3, 0.15);
        assertThat(toClaimFirst.claimFirst()).isTrue();
        assertThat(toClaimFirst.takenShare()).isEqualTo(0.3);
        assertThat(toClaimFirst.breakEven()).isEqualTo(0.15);
        assertThat(toClaimFirst).hasToString("ClaimOrderEvent[claim first, takenShare=0.3000, breakEven=0.1500]");

        ClaimOrderEvent back = ClaimOrderEvent.toWorkFirst(0, 1);
        assertThat(back.claimFirst()).isFalse();
        assertThat(back.takenShare()).isZero();
        assertThat(back.breakEven()).isEqualTo(1);
        assertThat(back).hasToString("ClaimOrderEvent[work first, takenShare=0.0000, breakEven=1.0000]");
    }

    @Test
    @SuppressWarnings("removal") // the deprecated names are what this test is about
    void theNamesBefore1Point0StillSayTheSame() {
        ClaimOrderEvent old = ClaimOrderEvent.toReadFirst(0.3, 0.15);
        assertThat(old.claimFirst()).isTrue();
        assertThat(old.readFirst()).isTrue();
        assertThat(old.takenShare()).isEqualTo(0.3);
        assertThat(old.breakEven()).isEqualTo(0.15);
        assertThat(ClaimOrderEvent.toWorkFirst(0.1, 0.2).readFirst()).isFalse();
    }

    @Test
    void refusesSharesOutsideZeroToOneNamingWhich() {
        assertThatThrownBy(() -> ClaimOrderEvent.toClaimFirst(-0.01, 0.1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("takenShare is a share from 0 to 1, was -0.01");
        assertThatThrownBy(() -> ClaimOrderEvent.toClaimFirst(0.1, 1.5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("breakEven is a share from 0 to 1, was 1.5");
        assertThatThrownBy(() -> ClaimOrderEvent.toWorkFirst(Double.NaN, 0.1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("takenShare");
    }
}
