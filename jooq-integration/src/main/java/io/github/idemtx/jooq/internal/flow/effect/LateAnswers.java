package io.github.idemtx.jooq.internal.flow.effect;

import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.LOG;
import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.verdict;

import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow.Settled;
import io.github.idemtx.jooq.internal.store.ClaimRow;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.EffectTransition.Answer;
import org.jspecify.annotations.Nullable;

/**
 * A definite answer that came too late to record: the claim is settled (or gone). The same answer
 * recorded is no news; any other is a contradiction an operator must look at, so it is logged as an
 * error with everything needed to find it at the remote.
 */
final class LateAnswers<R, T> {

    /** Which try of the record found the claim settled. */
    enum Try {
        ONCE,
        /** Sent again after the connection was lost with the first COMMIT in flight, which most likely settled it. */
        AGAIN_AFTER_LOST_COMMIT
    }

    private final EffectContext<R, T> context;
    private final Releasing<R, T> releasing;

    LateAnswers(EffectContext<R, T> context, Releasing<R, T> releasing) {
        this.context = context;
        this.releasing = releasing;
    }

    Settlement<T> unrecorded(HeldClaim<R> hold, Answer answer, Try attempt) {
        Intent<R> intent = hold.intent();
        ClaimState state = answer.state();
        ClaimRow row;
        try {
            row = releasing.readAfterLoss(intent);
        } catch (RuntimeException e) {
            if (attempt == Try.AGAIN_AFTER_LOST_COMMIT) {
                // most likely settled by this holder's own first COMMIT, whose answer the connection lost
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + context.effect + " " + context.describe(intent) + ": the connection was lost"
                                + " with the record's COMMIT in flight, the record sent again found the claim settled"
                                + " (most likely by that COMMIT), and reading it failed; a retry replays it",
                        e);
                return new Settlement<>(
                        new RemoteOutcome.Unknown<>(
                                context.policy.retryAfter(),
                                "the record's COMMIT was lost in flight and reading the claim after it failed: " + e),
                        Settled.UNKNOWN);
            }
            LOG.log(
                    System.Logger.Level.ERROR,
                    "idemtx: " + context.effect + " " + context.describe(intent) + ": the remote " + verdict(state)
                            + " it after this holder's lease was taken over, and the claim, which is settled,"
                            + " could not be read to compare; if it records otherwise, reconcile it with the"
                            + " remote by its downstream key",
                    e);
            return releasing.unreadAfterLoss(e);
        }
        byte @Nullable [] stored = answer.stored();
        if (Lifecycle.lateAnswerAgrees(row, hold.claimedAt(), answer)) {
            LOG.log(
                    System.Logger.Level.DEBUG,
                    () -> "idemtx: " + context.effect + " " + context.describe(intent)
                            + ": a late answer, the same as the one recorded");
        } else {
            // the row of this holder's claim, null when it is gone or was claimed anew
            ClaimRow same = row != null && hold.claimedAt().equals(row.createdAt()) ? row : null;
            LOG.log(
                    System.Logger.Level.ERROR,
                    "idemtx: " + context.effect + " " + context.describe(intent) + ": the remote " + verdict(state)
                            + " it (" + (state == ClaimState.SUCCEEDED ? "result" : "failure") + " of "
                            + (stored == null ? 0 : stored.length) + " bytes)"
                            + " after this holder's lease was taken over, but the claim "
                            + (same == null ? "is gone or was claimed anew" : "records " + recorded(same))
                            + ": not recorded; reconcile it with the remote by its downstream key");
        }
        return new Settlement<>(context.answerAfterLoss(intent, row), Settled.LOST_FENCE);
    }

    private static String recorded(ClaimRow row) {
        return row.state() == ClaimState.SUCCEEDED
                ? "another result"
                : row.state() == ClaimState.FAILED ? "a refusal" : "state " + row.state();
    }
}
