package io.github.idemtx.jooq.internal.flow.claim;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.ClaimOrderEvent;
import io.github.idemtx.jooq.ClaimMode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClaimOrderTest {

    private static final long MS = 1_000_000;

    @Test
    void fixedModesNeverChangeAndLearnNothing() {
        ClaimOrder claimFirst = ClaimOrder.of(ClaimMode.CLAIM_FIRST);
        ClaimOrder workFirst = ClaimOrder.of(ClaimMode.WORK_FIRST);
        for (int i = 0; i < 1000; i++) {
            claimFirst.fresh(MS, MS);
            workFirst.taken();
        }
        assertThat(claimFirst.workFirst()).isFalse();
        assertThat(claimFirst.times()).isFalse();
        assertThat(workFirst.workFirst()).isTrue();
        assertThat(workFirst.times()).isFalse();
    }

    @Test
    void adaptiveWorksFirstUntilItSeesAShareOfTakenKeysAboveTheBreakEven() {
        ClaimOrder.Adaptive order = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        assertThat(order.workFirst()).isTrue();
        int timed = 0;
        for (int i = 0; i < 8000; i++) {
            timed += order.times() ? 1 : 0;
        }
        assertThat(timed).as("about one in %d", ClaimOrder.Adaptive.TIMED_EVERY).isBetween(700, 1300);
        assertThat(order.breakEven()).as("nothing timed yet").isEqualTo(ClaimOrder.Adaptive.MOST_BREAK_EVEN);
        // a cheap work: 3 ms of work, 1 ms of claim: break-even 0.5 * 1/4 = 12.5%
        feed(order, 2000, 0.10, 3 * MS, MS);
        assertThat(order.breakEven()).isCloseTo(0.125, org.assertj.core.data.Offset.offset(0.001));
        assertThat(order.workFirst()).as("10%% of retries stay under 12.5%%").isTrue();
        feed(order, 2000, 0.30, 3 * MS, MS);
        assertThat(order.workFirst()).as("30%% of retries read first").isFalse();
        feed(order, 2000, 0.10, 3 * MS, MS);
        assertThat(order.workFirst())
                .as("10%% is above two thirds of the break-even: no flapping back")
                .isFalse();
        feed(order, 2000, 0.01, 3 * MS, MS);
        assertThat(order.workFirst()).as("1%% works first again").isTrue();
    }

    @Test
    void expensiveWorkReadsFirstAtASmallShareAndCheapWorkDoesNot() {
        ClaimOrder.Adaptive expensive = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        feed(expensive, 3000, 0.05, 40 * MS, MS);
        assertThat(expensive.breakEven()).isCloseTo(0.5 / 41, org.assertj.core.data.Offset.offset(0.0001));
        assertThat(expensive.workFirst()).isFalse();

        ClaimOrder.Adaptive cheap = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        feed(cheap, 3000, 0.05, MS, MS);
        assertThat(cheap.workFirst()).isTrue();
    }

    @Test
    void theBreakEvenStaysWithinItsBounds() {
        ClaimOrder.Adaptive huge = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        huge.fresh(1_000_000 * MS, 1);
        assertThat(huge.breakEven()).isEqualTo(ClaimOrder.Adaptive.LEAST_BREAK_EVEN);
        ClaimOrder.Adaptive none = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        none.fresh(0, 1_000 * MS);
        assertThat(none.breakEven()).isEqualTo(ClaimOrder.Adaptive.MOST_BREAK_EVEN);
        none.fresh(-1, -1); // not timed: the times stay
        assertThat(none.breakEven()).isEqualTo(ClaimOrder.Adaptive.MOST_BREAK_EVEN);
        ClaimOrder.Adaptive zero = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        zero.fresh(0, 0);
        assertThat(zero.breakEven()).isEqualTo(ClaimOrder.Adaptive.MOST_BREAK_EVEN);
    }

    @Test
    void aBurstOfDuplicatesSwitchesWithinAFewHundredCallsAndTheEndOfItSwitchesBack() {
        ClaimOrder.Adaptive order = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        feed(order, 1000, 0.0, 3 * MS, MS);
        int calls = 0;
        while (order.workFirst() && calls < 1000) {
            order.taken();
            calls++;
        }
        assertThat(calls).isBetween(10, 40);
        assertThat(order.share()).isGreaterThan(order.breakEven());
        calls = 0;
        while (!order.workFirst() && calls < 1000) {
            order.fresh(3 * MS, MS);
            calls++;
        }
        assertThat(calls).isBetween(50, 200);
        for (int i = 0; i < 2000; i++) {
            order.fresh(-1, -1);
        }
        assertThat(order.share()).as("a share that small is none").isZero();
    }

    @Test
    void eachChangeOfOrderIsToldOnceWithTheSharesThatDecidedIt() {
        List<ClaimOrderEvent> told = new ArrayList<>();
        ClaimOrder.Adaptive order = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE, told::add);
        feed(order, 1000, 0.0, 3 * MS, MS);
        assertThat(told).isEmpty();
        feed(order, 2000, 0.30, 3 * MS, MS);
        assertThat(told).singleElement().satisfies(e -> {
            assertThat(e.claimFirst()).isTrue();
            assertThat(e.breakEven()).isCloseTo(0.125, org.assertj.core.data.Offset.offset(0.001));
            assertThat(e.takenShare())
                    .as("past the break-even by the margin, and turned as soon as it was")
                    .isGreaterThan(e.breakEven() * ClaimOrder.Adaptive.SWITCH_OVER)
                    .isLessThan(e.breakEven() * ClaimOrder.Adaptive.SWITCH_OVER + 1.0 / 128);
        });
        feed(order, 2000, 0.01, 3 * MS, MS);
        assertThat(told).hasSize(2);
        assertThat(told.get(1).claimFirst()).isFalse();
        assertThat(told.get(1).takenShare()).isLessThan(told.get(1).breakEven() * ClaimOrder.Adaptive.BACK_UNDER);

        List<ClaimOrderEvent> fixed = new ArrayList<>();
        ClaimOrder workFirst = ClaimOrder.of(ClaimMode.WORK_FIRST, fixed::add);
        feed(workFirst, 1000, 0.9, 3 * MS, MS);
        assertThat(fixed).as("a fixed order never changes").isEmpty();
    }

    @Test
    void aTimedReadSetsTheBreakEvenAndTheWayBackFollowsTheBreakEvenItSwitchedAt() {
        List<ClaimOrderEvent> told = new ArrayList<>();
        ClaimOrder.Adaptive order = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE, told::add);
        feed(order, 1000, 0.0, 4 * MS, 2 * MS);
        assertThat(order.breakEven())
                .as("no read timed yet: from the insert, 0.5 * 2/6")
                .isCloseTo(0.5 / 3, org.assertj.core.data.Offset.offset(0.001));
        order.read(MS / 2);
        assertThat(order.breakEven())
                .as("a read of 0.5 ms against 4 ms of work")
                .isCloseTo(0.25 / 4.5, org.assertj.core.data.Offset.offset(0.001));
        feed(order, 1000, 0.15, 4 * MS, 2 * MS);
        assertThat(order.workFirst()).as("15%% is above 5.6%%").isFalse();
        assertThat(told)
                .singleElement()
                .satisfies(e ->
                        assertThat(e.breakEven()).isCloseTo(0.25 / 4.5, org.assertj.core.data.Offset.offset(0.001)));

        // the work gets cheap (another load): the break-even rises past twice the share
        feed(order, 3000, 0.15, MS / 10, 2 * MS);
        assertThat(order.breakEven()).as("0.5 * 0.5 / 0.6").isGreaterThan(0.4);
        assertThat(order.workFirst())
                .as("the way back follows the break-even it switched at, not today's")
                .isFalse();
        assertThat(told).hasSize(1);

        feed(order, 3000, 0.01, MS / 10, 2 * MS);
        assertThat(order.workFirst()).isTrue();
        assertThat(told).hasSize(2);
        assertThat(told.get(1).claimFirst()).isFalse();
        assertThat(told.get(1).breakEven()).isCloseTo(0.25 / 4.5, org.assertj.core.data.Offset.offset(0.001));
        assertThat(told.get(1).takenShare()).isLessThan(0.25 / 4.5 * ClaimOrder.Adaptive.BACK_UNDER);

        ClaimOrder fixed = ClaimOrder.of(ClaimMode.CLAIM_FIRST);
        fixed.read(MS); // learns nothing
        assertThat(fixed.workFirst()).isFalse();
    }

    @Test
    void aShareThatWandersNearTheBreakEvenMostlyKeepsTheCheaperOrder() {
        // break-even 12.5% (3 ms of work, 1 ms of claim); retries arrive at random, as they do
        assertThat(workFirstShare(0.10, 1)).as("10%%: working first is cheaper").isGreaterThan(0.9);
        assertThat(workFirstShare(0.15, 2)).as("15%%: reading first is cheaper").isLessThan(0.1);
        assertThat(workFirstShare(0.05, 3)).isGreaterThan(0.99);
    }

    /** The share of 100,000 calls that worked first, retries arriving at random at {@code share}. */
    private static double workFirstShare(double share, long seed) {
        ClaimOrder.Adaptive order = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);
        feed(order, 1000, 0.0, 3 * MS, MS);
        java.util.Random random = new java.util.Random(seed);
        int workFirst = 0;
        int calls = 100_000;
        for (int i = 0; i < calls; i++) {
            workFirst += order.workFirst() ? 1 : 0;
            if (random.nextDouble() < share) {
                order.taken();
            } else {
                order.fresh(3 * MS, MS);
            }
        }
        return (double) workFirst / calls;
    }

    /** {@code calls} calls of which a deterministic {@code share} found their key taken. */
    private static void feed(ClaimOrder order, int calls, double share, long work, long trip) {
        double owed = 0;
        for (int i = 0; i < calls; i++) {
            owed += share;
            if (owed >= 1) {
                owed -= 1;
                order.taken();
            } else {
                order.fresh(work, trip);
            }
        }
    }
}
