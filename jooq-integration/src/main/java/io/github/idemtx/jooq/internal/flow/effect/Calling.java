package io.github.idemtx.jooq.internal.flow.effect;

import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.LOG;

import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.Remote.Lookup;
import io.github.idemtx.jooq.Remote.Reply;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow.Settled;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import io.github.idemtx.jooq.internal.store.EffectTransition.Commit;
import io.github.idemtx.jooq.internal.store.EffectTransition.MarkSent;
import io.github.idemtx.jooq.internal.store.EffectTransition.Renew;
import io.github.idemtx.jooq.internal.store.StatementSettlements;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Phase 2 with a claim held: the remote called with the downstream key inside the lease, or, for a
 * claim taken over, looked up first; the answer handed to {@link Recording}, or the hold released.
 */
final class Calling<R, T> {

    private final EffectContext<R, T> context;
    private final ShortTransactions transactions;
    private final EffectStatements holds;
    private final Releasing<R, T> releasing;
    private final Recording<R, T> recording;
    private final StatementSettlements sent;

    Calling(EffectContext<R, T> context, ShortTransactions transactions, EffectStatements holds) {
        this.context = context;
        this.transactions = transactions;
        this.holds = holds;
        this.sent = holds.statements();
        this.releasing = new Releasing<>(context, transactions, holds);
        this.recording = new Recording<>(context, transactions, holds.settlements(), releasing);
    }

    /**
     * Calls the remote with the claim held and records its answer, or releases the lease; an applied
     * reply settles as {@code applied} ({@link Settled#FOUND} for a first call, {@link Settled#RESENT}
     * for one sent again after a lookup found nothing).
     */
    Settlement<T> call(HeldClaim<R> hold, Settled applied) {
        Intent<R> intent = hold.intent();
        // the call must end before the lease does, or a takeover could overlap it: what is left of the
        // lease, and if that is little (a slow before(), a lookup), the lease renewed first, fenced
        long budget = Lifecycle.callBudget(hold.leaseStart(), System.nanoTime(), context.lease);
        if (Lifecycle.renewFirst(budget, context.lease)) {
            long renewedAt = System.nanoTime();
            Long msLeft = transactions.run(
                    intent.scope(),
                    intent.key(),
                    c -> holds.apply(c, new Renew(hold.fenced(), context.lease, Commit.LATER)));
            if (msLeft == null) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + context.effect + " " + context.describe(intent) + ": this holder sent"
                                + " nothing: its lease (fence " + intent.fence()
                                + ") passed before the call and another holder took the claim over");
                return releasing.lostFence(intent);
            }
            budget = Lifecycle.budgetAfterRenewal(msLeft, renewedAt, System.nanoTime(), context.lease);
        }
        HeldClaim<R> sending = hold;
        if (context.statement != null) {
            // a remote without keys: marked sent, committed, before the send, so that a claim found in
            // flight was never sent, and a sent one is settled by its answer or a statement only
            Integer sends;
            try {
                sends = transactions.run(
                        intent.scope(),
                        intent.key(),
                        c -> sent.apply(c, new MarkSent(hold.fenced(), intent.downstreamKey())));
            } catch (RuntimeException e) {
                return releasing.unknown(hold, "marking it sent failed, so it was not sent: " + e);
            }
            if (sends == null) {
                return releasing.lostFence(intent);
            }
            sending = hold.markedSent();
        }
        Reply<T> reply;
        try {
            reply = context.remote.call(intent, Instant.now().plusNanos(Math.max(0, budget)));
            if (reply == null) {
                throw new IllegalStateException(context.remote.getClass().getName() + ".call returned null");
            }
        } catch (Exception e) {
            return releasing.unknown(sending, "the remote call failed: " + e);
        }
        return switch (reply) {
            case Reply.Applied<T> a -> recording.applied(sending, a.result(), applied);
            case Reply.Refused<T> refused -> recording.refused(sending, refused.failure());
        };
    }

    /** A takeover's path: the request looked up before anything is sent again. */
    Settlement<T> lookUpThenSettle(HeldClaim<R> hold) {
        if (context.statement != null) {
            // no lookup: in flight, it was never sent (it is marked sent first)
            return switch (Lifecycle.unsentByStatement(hold.undecodable())) {
                case TO_OPERATOR -> releasing.toOperator(hold, "it cannot be sent again: " + hold.undecodable());
                default -> call(hold, Settled.RESENT);
            };
        }
        Lookup<T> lookup = boundedLookup(hold.intent());
        return switch (Lifecycle.afterLookup(lookup, context.absent, hold.undecodable())) {
            case RECORD_APPLIED -> recording.applied(hold, ((Lookup.Found<T>) lookup).result(), Settled.FOUND);
            case RECORD_REFUSED -> recording.refused(hold, ((Lookup.Refused<T>) lookup).failure());
            case RELEASE_UNKNOWN ->
                releasing.unknown(
                        hold,
                        lookup instanceof Lookup.Unknown<T> unknown
                                ? "the lookup did not answer: " + unknown.reason()
                                : "the remote has no record of it, but does not promise read-after-write");
            // nothing applied it, and nothing can send it: only an operator can settle it
            case TO_OPERATOR ->
                releasing.toOperator(
                        hold, "the remote has no record of it and it cannot be sent again: " + hold.undecodable());
            case SEND_AGAIN -> call(hold, Settled.RESENT);
        };
    }

    /**
     * The remote's lookup, given four fifths of the lease: one that hangs (a remote that never
     * answers, a socket without a timeout) is interrupted and counts as unknown, so it cannot hold a
     * recoverer, and every claim queued behind it, past the schedule. Its late answer is dropped:
     * unknown is always safe, the next lookup asks again.
     */
    private Lookup<T> boundedLookup(Intent<R> intent) {
        FutureTask<Lookup<T>> task = new FutureTask<>(() -> {
            Lookup<T> answer = context.remote.lookup(intent);
            return answer != null
                    ? answer
                    : Lookup.unknown(context.remote.getClass().getName() + ".lookup returned null");
        });
        Thread lookup =
                Thread.ofVirtual().name("idemtx-lookup-" + context.effect).start(task);
        Duration bound = Lifecycle.lookupBound(context.lease);
        try {
            return task.get(bound.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            lookup.interrupt();
            task.cancel(true);
            return Lookup.unknown("the lookup did not answer within " + bound + " (four fifths of the lease)");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof Error error) {
                throw error; // not an answer: it reaches the recoverer as it did from the lookup itself
            }
            return Lookup.unknown("the lookup failed: " + cause);
        } catch (InterruptedException e) {
            lookup.interrupt();
            task.cancel(true);
            Thread.currentThread().interrupt();
            return Lookup.unknown("interrupted while waiting for the lookup");
        }
    }
}
