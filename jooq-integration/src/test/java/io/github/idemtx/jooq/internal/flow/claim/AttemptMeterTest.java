package io.github.idemtx.jooq.internal.flow.claim;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.internal.flow.Timings;
import io.github.idemtx.jooq.internal.store.ClaimStatements.Claim;
import io.github.idemtx.jooq.internal.store.ClaimStatements.RecordedFirst;
import org.junit.jupiter.api.Test;

/** What an attempt teaches the adaptive order, step by step: each attempt counts once, a joined one never. */
class AttemptMeterTest {

    private static final double ONE_TAKEN = ClaimOrder.Adaptive.SHARE_WEIGHT;

    private final ClaimOrder.Adaptive order = (ClaimOrder.Adaptive) ClaimOrder.of(ClaimMode.ADAPTIVE);

    @Test
    void aClaimFirstAttemptCountsItsKeyFreeOrTaken() {
        AttemptMeter taken = AttemptMeter.claimFirst(Timings.NONE, order, false);
        taken.claimed(new Claim.TimedOut());
        assertThat(order.share()).isEqualTo(ONE_TAKEN);

        AttemptMeter free = AttemptMeter.claimFirst(Timings.NONE, order, false);
        free.claimed(new Claim.Held(false));
        assertThat(order.share())
                .as("a free key is counted when its work is recorded")
                .isEqualTo(ONE_TAKEN);
        free.workEnded();
        free.executed();
        assertThat(order.share()).isEqualTo(ONE_TAKEN * (1 - ClaimOrder.Adaptive.SHARE_WEIGHT));
    }

    @Test
    void aJoinedAttemptTeachesNothing() {
        AttemptMeter taken = AttemptMeter.claimFirst(Timings.NONE, order, true);
        taken.claimed(new Claim.TimedOut());
        AttemptMeter free = AttemptMeter.claimFirst(Timings.NONE, order, true);
        free.claimed(new Claim.Held(false));
        free.workEnded();
        free.executed();
        assertThat(order.share()).isZero();
    }

    @Test
    void aWorkFirstAttemptThatFindsItsKeyTakenCountsItOnceThoughItGoesOnClaimingFirst() {
        AttemptMeter meter = AttemptMeter.workFirst(Timings.NONE, order);
        meter.workEnded();
        meter.inserted(RecordedFirst.TAKEN);
        meter.reread();
        AttemptMeter goingOn = meter.goingOnClaimingFirst();
        goingOn.claimed(new Claim.TimedOut());
        assertThat(order.share()).isEqualTo(ONE_TAKEN);
    }

    @Test
    void aWorkFirstAttemptCountsItsCommitAsAFreeKeyAndAFailedInsertNotAtAll() {
        AttemptMeter.workFirst(Timings.NONE, order).foundHeld();
        assertThat(order.share()).isEqualTo(ONE_TAKEN);

        AttemptMeter failed = AttemptMeter.workFirst(Timings.NONE, order);
        failed.workEnded();
        failed.inserted(null);
        assertThat(order.share()).isEqualTo(ONE_TAKEN);

        AttemptMeter committed = AttemptMeter.workFirst(Timings.NONE, order);
        committed.workEnded();
        committed.inserted(RecordedFirst.COMMITTED);
        assertThat(order.share()).isEqualTo(ONE_TAKEN * (1 - ClaimOrder.Adaptive.SHARE_WEIGHT));

        AttemptMeter timedOut = AttemptMeter.workFirst(Timings.NONE, order);
        timedOut.workEnded();
        timedOut.inserted(RecordedFirst.TIMED_OUT);
        assertThat(order.share()).isGreaterThan(ONE_TAKEN);
    }
}
