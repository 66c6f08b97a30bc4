package io.github.idemtx.jooq;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.internal.store.SqlStates;
import java.util.Set;

/** {@link ClaimAdmin}'s refusals: each says why the action cannot be taken and what to do instead. */
final class ClaimAdminRefusals {

    private ClaimAdminRefusals() {}

    static ClaimAdminException notFound(Scope scope, IdempotencyKey key) {
        return new ClaimAdminException(
                ClaimAdminException.Reason.NOT_FOUND,
                scope,
                key,
                "there is no claim for this key (never made, purged, forgotten, or not committed yet)");
    }

    static ClaimAdminException notAnEffect(ClaimView claim) {
        return new ClaimAdminException(
                ClaimAdminException.Reason.WRONG_STATE,
                claim.scope(),
                claim.key(),
                "the claim was written by IdempotentTransaction and is "
                        + claim.state().tag()
                        + ": only an external effect's claim that needs reconciliation can be resolved");
    }

    static ClaimAdminException unknownEffect(ClaimView claim, Set<String> known) {
        return new ClaimAdminException(
                ClaimAdminException.Reason.UNKNOWN_EFFECT,
                claim.scope(),
                claim.key(),
                "the claim was written by the effect '" + claim.effect() + "', which this ClaimAdmin was not given"
                        + " (it knows " + (known.isEmpty() ? "none" : String.join(", ", known))
                        + "): build it with ClaimAdmin.Builder.effect so its local writes run with the resolution");
    }

    static ClaimAdminException otherEffect(ClaimView claim, String given) {
        return new ClaimAdminException(
                ClaimAdminException.Reason.UNKNOWN_EFFECT,
                claim.scope(),
                claim.key(),
                "the claim was written by the effect '" + claim.effect() + "', not by '" + given
                        + "': resolve it with its own effect");
    }

    static ClaimAdminException badAnswer(Scope scope, IdempotencyKey key, RuntimeException e) {
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        return new ClaimAdminException(
                ClaimAdminException.Reason.BAD_INPUT,
                scope,
                key,
                "the answer does not decode with the effect's result codec ("
                        + ClaimViewDecoder.oneLine(cause.toString())
                        + "); give the result in the form the codec stores (JSON for a JSON codec)");
    }

    static ClaimAdminException madeAgain(ClaimView before, ClaimView now) {
        return new ClaimAdminException(
                ClaimAdminException.Reason.WRONG_STATE,
                now.scope(),
                now.key(),
                "cannot forget the claim: it was made again at " + now.createdAt() + ", after the one read at the"
                        + " start of this action (created at " + before.createdAt() + "); nothing was deleted:"
                        + " inspect it, and forget it again if that is meant");
    }

    static ClaimAdminException cannotResolve(ClaimView claim) {
        String why = switch (claim.state()) {
            case IN_FLIGHT ->
                "it is in flight: its call is running or the recoverer will look it up"
                        + (claim.nextLookupAt() == null ? "" : " at " + claim.nextLookupAt())
                        + "; it can be resolved once it needs reconciliation";
            case SENT ->
                "it was sent to a remote that takes no key: its outcome is read from the remote's statement"
                        + " (StatementReconciliation); it can be resolved once it needs reconciliation";
            case COMPLETED, FAILED ->
                "it is settled already (" + claim.state().tag() + " at " + claim.completedAt()
                        + "); forget it first if that answer is wrong";
            default -> "it is " + claim.state().tag() + "; only a claim that needs reconciliation can be resolved";
        };
        return new ClaimAdminException(
                ClaimAdminException.Reason.WRONG_STATE, claim.scope(), claim.key(), "cannot resolve the claim: " + why);
    }

    /**
     * {@code e} as an operator's action in doubt when it says the action's COMMIT was in flight when
     * the connection was lost (or committed on the primary only), else {@code e} as it is. Its advice
     * is not a caller's "retry with the same key": a call with the key may have run since, so the
     * claim is looked at before the action is repeated.
     */
    static RuntimeException inDoubt(Scope scope, IdempotencyKey key, String action, RuntimeException e) {
        if (!SqlStates.isCommitInDoubt(e)) {
            return e;
        }
        return new CommitOutcomeUnknownException(
                scope,
                key,
                "the " + action + "'s COMMIT was in flight when the connection was lost, or the synchronous standby"
                        + " never confirmed it: it may or may not have taken effect. Inspect the claim before doing"
                        + " anything else (a call with its key may have run since) and repeat the " + action
                        + " only if it did not",
                e);
    }

    static ClaimAdminException cannotForget(ClaimView claim) {
        String why = switch (claim.state()) {
            case IN_FLIGHT ->
                "it is in flight: forgetting it could send the remote request again; wait until it is settled";
            case NEEDS_RECONCILIATION ->
                "it needs reconciliation: forgetting it could send the remote request again;"
                        + " resolve it as applied or refused first";
            case SENT ->
                "it was sent to a remote that takes no key, and its statement has not settled it: forgetting it"
                        + " could pay twice; apply the statement first";
            case RUNNING -> "its work is running (a claim of schema version 1)";
            default -> "it is " + claim.state().tag();
        };
        return new ClaimAdminException(
                ClaimAdminException.Reason.WRONG_STATE, claim.scope(), claim.key(), "cannot forget the claim: " + why);
    }
}
