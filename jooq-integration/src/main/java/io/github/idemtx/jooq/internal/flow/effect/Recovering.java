package io.github.idemtx.jooq.internal.flow.effect;

import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.LOG;

import io.github.idemtx.jooq.internal.flow.effect.EffectFlow.DecodedRequest;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow.Settled;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import io.github.idemtx.jooq.internal.store.EffectTransition.Commit;
import io.github.idemtx.jooq.internal.store.EffectTransition.FencedClaim;
import io.github.idemtx.jooq.internal.store.EffectTransition.Renew;
import io.github.idemtx.jooq.internal.store.EffectTransition.TakeOverBatch;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * The recoverer: takes over a batch of stuck claims (in flight, lease passed, lookup due) and settles
 * each by a lookup first, its attempts counted, so each claim is due again only on the lookup
 * schedule and reaches reconciliation after it.
 */
final class Recovering<R, T> {

    private final EffectContext<R, T> context;
    private final ShortTransactions transactions;
    private final EffectStatements holds;
    private final Calling<R, T> calling;

    Recovering(
            EffectContext<R, T> context,
            ShortTransactions transactions,
            EffectStatements holds,
            Calling<R, T> calling) {
        this.context = context;
        this.transactions = transactions;
        this.holds = holds;
        this.calling = calling;
    }

    /** See {@link EffectFlow#recover}. */
    List<Settled> recover(int limit, BooleanSupplier stop) {
        TakeOverBatch batch = new TakeOverBatch(context.effect, limit, context.lease);
        List<EffectStatements.Stuck> taken = transactions.run(null, null, c -> holds.apply(c, batch));
        List<Settled> settled = new ArrayList<>(taken.size());
        for (EffectStatements.Stuck s : taken) {
            FencedClaim claim = new FencedClaim(s.scope(), s.key(), s.fence(), s.createdAt());
            settled.add(stop.getAsBoolean() ? handBack(claim) : settle(s, claim));
        }
        return settled;
    }

    private Settled settle(EffectStatements.Stuck s, FencedClaim claim) {
        try {
            // the batch's leases started together: renew this one before settling it, or a
            // takeover by someone else may have happened while the others were settled
            long renewed = System.nanoTime();
            Long left = transactions.run(
                    s.scope(), s.key(), c -> holds.apply(c, new Renew(claim, context.lease, Commit.LATER)));
            if (left == null) {
                return Settled.LOST_FENCE;
            }
            // the lookup needs only the downstream key: a request that no longer decodes does not stop it
            DecodedRequest<R> request = context.decodeRequest(s.scope(), s.key(), s.request());
            if (request.problem() != null) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + context.effect + " " + context.describe(s.scope(), s.key(), s.createdAt())
                                + ": " + request.problem()
                                + "; it is looked up by its downstream key, never sent again");
            }
            HeldClaim<R> hold = HeldClaim.recovering(
                    context.intent(s.scope(), s.key(), request.request(), s.fence(), s.createdAt()),
                    s.createdAt(),
                    renewed,
                    s.lookups(),
                    request.problem());
            return calling.lookUpThenSettle(hold).how();
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: recovering a claim of " + context.effect + " failed; a later pass tries again",
                    e);
            return Settled.FAILED;
        }
    }

    /** A claim the pass took but will not settle: its lease ends now, nothing counted, for the next pass. */
    private Settled handBack(FencedClaim claim) {
        try {
            boolean released = transactions.run(
                    claim.scope(), claim.key(), c -> holds.settlements().apply(c, Lifecycle.handBack(claim)));
            return released ? Settled.HANDED_BACK : Settled.LOST_FENCE;
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: handing back a claim of " + context.effect + " failed; its lease runs out",
                    e);
            return Settled.FAILED;
        }
    }
}
