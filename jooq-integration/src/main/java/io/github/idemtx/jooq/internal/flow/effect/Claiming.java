package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow.Settled;
import io.github.idemtx.jooq.internal.store.ClaimRow;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import io.github.idemtx.jooq.internal.store.EffectTransition.Claim;
import io.github.idemtx.jooq.internal.store.EffectTransition.Commit;
import io.github.idemtx.jooq.internal.store.EffectTransition.FencedClaim;
import io.github.idemtx.jooq.internal.store.EffectTransition.RefuseBeforeCall;
import io.github.idemtx.jooq.internal.store.EffectTransition.Renew;
import io.github.idemtx.jooq.internal.store.EffectTransition.TakeOver;
import io.github.idemtx.jooq.internal.store.FailureEncoding;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A call of the effect: phase 1 commits the claim in flight with {@link Remote.Holding#before}'s
 * local writes; or the row that is there answers, is waited on, or is taken over; then {@link
 * Calling} sends or looks up.
 */
final class Claiming<R, T> {

    private final EffectContext<R, T> context;
    private final ShortTransactions transactions;
    private final EffectStatements holds;
    private final Calling<R, T> calling;

    Claiming(
            EffectContext<R, T> context,
            ShortTransactions transactions,
            EffectStatements holds,
            Calling<R, T> calling) {
        this.context = context;
        this.transactions = transactions;
        this.holds = holds;
        this.calling = calling;
    }

    /** What phase 1 found, carried out of its transaction. */
    private sealed interface Found<R> {
        /** The claim's INSERT waited on another claimer's uncommitted row for all the wait left. */
        record WaitedOut<R>() implements Found<R> {}

        /** {@link Remote.Holding#before} refused the request: nothing of phase 1 committed. */
        record Refused<R>(Failure failure) implements Found<R> {}

        /** A fresh claim, committed, with when its lease began (this JVM's clock). */
        record Fresh<R>(Intent<R> intent, Instant claimedAt, long leaseStart) implements Found<R> {}

        /** A live row of the key. */
        record Existing<R>(ClaimRow row) implements Found<R> {}

        /** No live row: it expired or was purged between the claim and the read. */
        record Gone<R>() implements Found<R> {}
    }

    RemoteOutcome<T> run(Scope scope, IdempotencyKey key, Fingerprint fingerprint, R request) {
        byte[] encodedRequest = context.requests.encode(scope, key, request);
        long deadline = System.nanoTime() + context.policy.duplicateWait().toNanos();
        long pause = 10;
        while (true) {
            // a claimer whose before() is running holds the row uncommitted: the wait on it is bounded too
            long claimStart = System.nanoTime(); // no later than the database's start of the lease
            Claim claim = new Claim(
                    scope,
                    key,
                    fingerprint.bytes(),
                    context.effect,
                    encodedRequest,
                    context.lease,
                    Lifecycle.claimWait(deadline, claimStart),
                    Lifecycle.claimCommit(context.remote));
            switch (claim(claim, request, claimStart)) {
                case Found.WaitedOut<R> waitedOut -> {
                    return context.inProgress();
                }
                case Found.Refused<R> refused -> {
                    RemoteOutcome<T> failed = refuseBeforeCall(scope, key, fingerprint, refused.failure());
                    if (failed != null) {
                        context.created(scope, key);
                        return failed;
                    }
                    continue; // a duplicate claimed the key meanwhile: answer from its row
                }
                case Found.Fresh<R> fresh -> {
                    context.created(scope, key);
                    HeldClaim<R> hold = HeldClaim.claimed(fresh.intent(), fresh.claimedAt(), fresh.leaseStart());
                    return calling.call(hold, Settled.FOUND).outcome();
                }
                case Found.Gone<R> gone -> {
                    continue; // the row expired or was purged between the claim and the read
                }
                case Found.Existing<R> existing -> {
                    ClaimRow row = existing.row();
                    switch (Lifecycle.atTheRow(row, fingerprint, context.effect)) {
                        case MISMATCH -> {
                            return new Outcome.FingerprintMismatch<>();
                        }
                        case ANSWER -> {
                            return context.answer(scope, key, row);
                        }
                        case TAKE_OVER -> {
                            RemoteOutcome<T> taken = takeOver(scope, key, request, row);
                            if (taken != null) {
                                return taken;
                            }
                            continue; // another caller or the recoverer took it over first
                        }
                        case WAIT -> {}
                    }
                }
            }
            long now = System.nanoTime();
            if (now - deadline >= 0) {
                return context.inProgress();
            }
            sleep(Lifecycle.sleepMs(pause, deadline, now));
            pause = Lifecycle.nextPause(pause);
        }
    }

    /** Takes over an in-flight row whose lease passed and settles it by a lookup first; null if another took it. */
    private @Nullable RemoteOutcome<T> takeOver(Scope scope, IdempotencyKey key, R request, ClaimRow row) {
        long takeoverStart = System.nanoTime();
        // an effect's row, as read() reads it, has its start (created_at is NOT NULL)
        Instant claimedAt = Objects.requireNonNull(row.createdAt(), "createdAt");
        FencedClaim read = new FencedClaim(scope, key, row.fence(), claimedAt);
        Long fence = transactions.run(scope, key, c -> holds.apply(c, new TakeOver(read, context.lease)));
        if (fence == null) {
            return null;
        }
        // a request stored before a deploy may no longer decode: the retry carries it (its fingerprint matched)
        R stored = context.decodeRequest(scope, key, row.request()).request();
        Intent<R> intent = context.intent(scope, key, stored != null ? stored : request, fence, claimedAt);
        return calling.lookUpThenSettle(HeldClaim.takenOver(intent, claimedAt, takeoverStart, row.lookups()))
                .outcome();
    }

    /**
     * Phase 1 in a transaction of its own: the claim committed in flight with {@link
     * Remote.Holding#before}'s local writes, or what is there instead.
     */
    private Found<R> claim(Claim claim, R request, long claimStart) {
        Scope scope = claim.scope();
        IdempotencyKey key = claim.key();
        try {
            return transactions.first(scope, key, c -> {
                EffectStatements.Claimed fresh;
                try {
                    fresh = holds.apply(c, claim);
                } catch (SQLException e) {
                    if (!SqlStates.LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                        throw e;
                    }
                    Jdbc.rollback(c); // the aborted attempt; the unit's COMMIT is then a no-op
                    return new Found.WaitedOut<>();
                }
                if (fresh == null) {
                    // after a COMMIT sent with the claim, in a transaction of its own
                    // nothing of this call was written: read only, whose loss leaves nothing in doubt
                    ClaimRow row = ShortTransactions.readOnly(r -> holds.read(r, scope, key))
                            .apply(c);
                    return row == null ? new Found.Gone<>() : new Found.Existing<>(row);
                }
                Intent<R> intent = context.intent(scope, key, request, fresh.fence(), fresh.createdAt());
                long leaseStart = claimStart;
                Remote.Holding<R, T> holding = context.holding;
                if (holding != null) {
                    before(c, holding, intent);
                    // the lease counts from the COMMIT, not from the INSERT: nobody can see the claim
                    // while before() runs, so all of the lease is left for the call however long it took
                    leaseStart = System.nanoTime();
                    FencedClaim mine = new FencedClaim(scope, key, fresh.fence(), fresh.createdAt());
                    holds.apply(c, new Renew(mine, context.lease, Commit.WITH_STATEMENT));
                }
                // the unit's COMMIT is a no-op after one sent
                return new Found.Fresh<>(intent, fresh.createdAt(), leaseStart);
            });
        } catch (RejectedBefore r) {
            return new Found.Refused<>(r.failure);
        }
    }

    /** The local writes before the call; a Rejection is answered by recording it, anything else propagates. */
    private void before(Connection c, Remote.Holding<R, T> holding, Intent<R> intent) {
        try {
            transactions.localWrites(c, tx -> holding.before(tx, intent), intent.scope(), intent.key());
        } catch (Rejection r) {
            throw new RejectedBefore(r.failure());
        }
    }

    /** Carries a Rejection of the local writes out of the rolled-back claim transaction. */
    private static final class RejectedBefore extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient Failure failure;

        RejectedBefore(Failure failure) {
            super(null, null, false, false);
            this.failure = failure;
        }
    }

    /** The refusal of {@code before} recorded on the free key; null when a duplicate claimed it meanwhile. */
    private @Nullable RemoteOutcome<T> refuseBeforeCall(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, Failure failure) {
        Duration ttl = context.policy.ttl();
        RefuseBeforeCall refusal = new RefuseBeforeCall(
                scope, key, fingerprint.bytes(), context.effect, FailureEncoding.encode(failure), ttl);
        Instant at = transactions.run(scope, key, c -> holds.settlements().apply(c, refusal));
        return at == null ? null : new Outcome.Rejected<>(failure, at, false);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IdempotencyException(null, null, "interrupted while waiting for a duplicate", e);
        }
    }
}
