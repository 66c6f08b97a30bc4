package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.StatementSettlement;
import io.github.idemtx.jooq.internal.store.ClaimRow;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.Digests;
import io.github.idemtx.jooq.internal.store.StoredValues;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What every part of one effect's flow shares: its name, policy, remote, codecs, lease and lookup
 * schedule, and the readings of a claim they all give the same way (its intent, its answer, how logs
 * name it). Immutable and thread-safe.
 */
final class EffectContext<R, T> {

    static final System.Logger LOG = System.getLogger("io.github.idemtx");

    final String effect;
    final IdempotencyPolicy policy;
    final Remote<R, T> remote;
    /** {@code remote} when it writes before the call; null when not: the claim then carries its own COMMIT. */
    final Remote.@Nullable Holding<R, T> holding;

    final StoredValues<R> requests;
    final StoredValues<T> results;
    final Duration lease;
    final List<Duration> lookupSchedule;
    final Absent absent;
    /** How the effect is settled when its remote takes no key and answers no lookup; null when it does. */
    final @Nullable StatementSettlement<R, T> statement;

    private final Listeners listeners;

    EffectContext(
            String effect,
            IdempotencyPolicy policy,
            Remote<R, T> remote,
            StoredValues<R> requests,
            StoredValues<T> results,
            Duration lease,
            List<Duration> lookupSchedule,
            Absent absent,
            @Nullable StatementSettlement<R, T> statement,
            Listeners listeners) {
        this.effect = effect;
        this.policy = policy;
        this.remote = remote;
        this.holding = remote instanceof Remote.Holding<R, T> h ? h : null;
        this.requests = requests;
        this.results = results;
        this.lease = lease;
        this.lookupSchedule = List.copyOf(lookupSchedule);
        this.absent = absent;
        this.statement = statement;
        this.listeners = listeners;
    }

    Intent<R> intent(Scope scope, IdempotencyKey key, @Nullable R request, long fence, Instant claimedAt) {
        return new Intent<>(scope, key, downstreamKey(scope, key, claimedAt), request, fence);
    }

    private String downstreamKey(Scope scope, IdempotencyKey key, Instant claimedAt) {
        return statement != null
                ? Digests.statementReference(effect, scope.value(), key.value(), claimedAt)
                : Digests.downstreamKey(effect, scope.value(), key.value(), claimedAt);
    }

    /** The stored request decoded, or why it no longer decodes; never throws for the codec's sake. */
    EffectFlow.DecodedRequest<R> decodeRequest(Scope scope, IdempotencyKey key, byte @Nullable [] stored) {
        try {
            return new EffectFlow.DecodedRequest<>(requests.decode(scope, key, stored), null);
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            return new EffectFlow.DecodedRequest<>(null, "the stored request no longer decodes (" + cause + ")");
        }
    }

    /** The answer a live row gives: its outcome, NeedsReconciliation, or InProgress while in flight. */
    RemoteOutcome<T> answer(Scope scope, IdempotencyKey key, ClaimRow row) {
        if (row.state() == ClaimState.NEEDS_RECONCILIATION) {
            // the time it was handed over (NeedsReconciliation would throw the same without it)
            return new RemoteOutcome.NeedsReconciliation<>(Objects.requireNonNull(row.completedAt(), "since"));
        }
        if (row.state() == ClaimState.SENT) {
            return awaitingStatement("sent");
        }
        Outcome<T> settled = results.settled(scope, key, row);
        return settled != null ? settled : inProgress();
    }

    /** What the claim says to a holder that lost it, from its row read after: InProgress while none or in flight. */
    RemoteOutcome<T> answerAfterLoss(Intent<R> intent, @Nullable ClaimRow row) {
        return row == null ? inProgress() : answer(intent.scope(), intent.key(), row);
    }

    /** A claim sent without a definite answer: its outcome is read from the remote's statement. */
    RemoteOutcome.Unknown<T> awaitingStatement(String what) {
        return new RemoteOutcome.Unknown<>(
                policy.retryAfter(), what + "; its outcome is read from the remote's statement");
    }

    Outcome.InProgress<T> inProgress() {
        return new Outcome.InProgress<>(policy.retryAfter());
    }

    void created(Scope scope, IdempotencyKey key) {
        if (listeners.any()) {
            listeners.claimChanged(ClaimEvent.created("effect:" + effect, scope, key));
        }
    }

    /** Scope, key and downstream key, as logs name a claim. */
    String describe(Intent<R> intent) {
        return "scope '" + intent.scope().value() + "' key '" + intent.key().value() + "' (downstream key "
                + intent.downstreamKey() + ")";
    }

    String describe(Scope scope, IdempotencyKey key, Instant claimedAt) {
        return "scope '" + scope.value() + "' key '" + key.value() + "' (downstream key "
                + downstreamKey(scope, key, claimedAt) + ")";
    }

    static String verdict(ClaimState state) {
        return state == ClaimState.SUCCEEDED ? "applied" : "refused";
    }
}
