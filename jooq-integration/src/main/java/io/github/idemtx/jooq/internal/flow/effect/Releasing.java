package io.github.idemtx.jooq.internal.flow.effect;

import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.LOG;

import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow.Settled;
import io.github.idemtx.jooq.internal.store.ClaimRow;
import io.github.idemtx.jooq.internal.store.EffectSettlements;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import io.github.idemtx.jooq.internal.store.EffectTransition;
import io.github.idemtx.jooq.internal.store.EffectTransition.ReleaseToOperator;
import io.github.idemtx.jooq.internal.store.EffectTransition.ReleaseUnknown;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * How a hold ends without a recorded answer: released as unknown (for a retry or the recoverer to
 * look up) or to an operator, and what a holder that lost its fence learns from the claim's row.
 */
final class Releasing<R, T> {

    private final EffectContext<R, T> context;
    private final ShortTransactions transactions;
    private final EffectStatements holds;
    private final EffectSettlements settlements;

    Releasing(EffectContext<R, T> context, ShortTransactions transactions, EffectStatements holds) {
        this.context = context;
        this.transactions = transactions;
        this.holds = holds;
        this.settlements = holds.settlements();
    }

    /**
     * The outcome is unknown: the lease ends now; a holder that counts (the recoverer) counts the
     * attempt, whatever it was (a lookup, a resend), and may hand the claim to reconciliation.
     */
    Settlement<T> unknown(HeldClaim<R> hold, String reason) {
        return release(hold, Lifecycle.releaseUnknown(hold, context.lookupSchedule), reason);
    }

    /** The attempt counted as an unanswered lookup whoever holds the claim (its record failed). */
    Settlement<T> counted(HeldClaim<R> hold, String reason) {
        return release(hold, Lifecycle.countedRelease(hold, context.lookupSchedule), reason);
    }

    /** Only an operator can settle it: handed to reconciliation at once. */
    Settlement<T> toOperator(HeldClaim<R> hold, String reason) {
        return release(hold, new ReleaseToOperator(hold.fenced()), reason);
    }

    private Settlement<T> release(HeldClaim<R> hold, EffectTransition release, String reason) {
        if (hold.sent()) {
            // sent to a remote that takes no key: only its record or a statement may settle it now;
            // releasing it would let it be sent again
            return new Settlement<>(context.awaitingStatement("sent, " + reason), Settled.AWAITING_STATEMENT);
        }
        Intent<R> intent = hold.intent();
        boolean released;
        try {
            released = transactions.run(intent.scope(), intent.key(), c -> switch (release) {
                case ReleaseUnknown unknown -> settlements.apply(c, unknown);
                case ReleaseToOperator operator -> settlements.apply(c, operator);
                default -> throw new IllegalArgumentException("not a release: " + release);
            });
        } catch (RuntimeException e) {
            // the lease runs out by itself; a retry or the recoverer takes it over then
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: releasing a claim of " + context.effect + " failed; its lease runs out",
                    e);
            return new Settlement<>(new RemoteOutcome.Unknown<>(context.lease, reason), Settled.FAILED);
        }
        if (!released) {
            return lostFence(intent);
        }
        return release instanceof ReleaseToOperator
                ? new Settlement<>(new RemoteOutcome.NeedsReconciliation<>(Instant.now()), Settled.RECONCILIATION)
                : new Settlement<>(new RemoteOutcome.Unknown<>(context.policy.retryAfter(), reason), Settled.UNKNOWN);
    }

    /** Another holder took the claim over: this one learns what the claim says now. */
    Settlement<T> lostFence(Intent<R> intent) {
        ClaimRow row;
        try {
            row = readAfterLoss(intent);
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: " + context.effect + " " + context.describe(intent)
                            + ": reading the claim after another holder took it over failed",
                    e);
            return unreadAfterLoss(e);
        }
        return new Settlement<>(context.answerAfterLoss(intent, row), Settled.LOST_FENCE);
    }

    /** The claim's row, read after this holder lost it. */
    @Nullable
    ClaimRow readAfterLoss(Intent<R> intent) {
        return transactions.run(
                intent.scope(),
                intent.key(),
                ShortTransactions.readOnly(c -> holds.read(c, intent.scope(), intent.key())));
    }

    /**
     * A holder that lost its claim and could not read what the claim says now: Unknown, as when its
     * own record failed, and a retry reads the claim's answer; the caller gets no exception after a
     * definite answer of the remote.
     */
    Settlement<T> unreadAfterLoss(RuntimeException e) {
        return new Settlement<>(
                new RemoteOutcome.Unknown<>(
                        context.policy.retryAfter(), "another holder took the claim over, and reading it failed: " + e),
                Settled.LOST_FENCE);
    }
}
