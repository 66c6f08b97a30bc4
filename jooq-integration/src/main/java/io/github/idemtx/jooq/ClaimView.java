package io.github.idemtx.jooq;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the claim table holds for one (scope, key), as {@link ClaimAdmin} shows it to an operator.
 *
 * @param scope the claim's scope
 * @param key the claim's key
 * @param state what the claim is now
 * @param operation what wrote it: {@code transaction} ({@link IdempotentTransaction}) or {@code effect:<name>}
 * @param fingerprint the request's fingerprint, lower-case hex
 * @param createdAt when the claim began
 * @param completedAt when its outcome was recorded (for {@link State#NEEDS_RECONCILIATION}, when it
 *     was handed to an operator); null while in flight
 * @param expiresAt when it stops answering retries (a later call with its key runs again); null:
 *     never, while an effect's claim is unsettled
 * @param expired whether {@code expiresAt} has passed (the row waits for the purge and answers nothing)
 * @param fence an effect's fencing token; null for a transaction's claim
 * @param leaseUntil until when an effect's holder may work undisturbed; null when settled
 * @param lookups an effect's unanswered attempts on an unknown outcome; null when settled
 * @param nextLookupAt when the recoverer looks the claim up next; null: as soon as the lease passes, or settled
 * @param downstreamKey the key the remote call carried (see {@link ExternalEffect#downstreamKey}); null
 *     for a transaction's claim
 * @param request an effect's stored request, decoded by its codec; null when settled (the record
 *     clears it), when the effect is not known, or when it does not decode ({@code undecodable} says why)
 * @param answer the stored result, decoded by the codec that wrote it where it is known; null for a
 *     null result, a failure, an unsettled claim, or an unknown codec ({@code answerText} then shows it)
 * @param answerText the stored result as UTF-8 text (the JSON of a JSON codec); null when there is
 *     none or it is not text
 * @param failure the recorded failure of a {@link State#FAILED} claim
 * @param undecodable null, or why the stored request or result could not be decoded
 * @param history what operators did to this (scope, key), newest first (kept after a forget)
 */
public record ClaimView(
        Scope scope,
        IdempotencyKey key,
        State state,
        String operation,
        String fingerprint,
        Instant createdAt,
        @Nullable Instant completedAt,
        @Nullable Instant expiresAt,
        boolean expired,
        @Nullable Long fence,
        @Nullable Instant leaseUntil,
        @Nullable Integer lookups,
        @Nullable Instant nextLookupAt,
        @Nullable String downstreamKey,
        @Nullable Object request,
        @Nullable Object answer,
        @Nullable String answerText,
        @Nullable Failure failure,
        @Nullable String undecodable,
        List<Action> history) {

    /**
     * Copies {@code history}.
     *
     * @throws NullPointerException if a component that may not be null is
     */
    public ClaimView {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(createdAt, "createdAt");
        history = List.copyOf(history);
    }

    /** {@return the effect's name, or null for a transaction's claim} */
    public @Nullable String effect() {
        return operation.startsWith(EFFECT) ? operation.substring(EFFECT.length()) : null;
    }

    private static final String EFFECT = "effect:";

    /** A claim's state, as an operator reads it. */
    public enum State {
        /** Completed: retries replay its result. */
        COMPLETED,
        /** Failed deterministically, or refused by the remote: retries get the same failure. */
        FAILED,
        /**
         * An external effect's claim committed before its remote call: the call is running, or its
         * outcome was unknown and the recoverer will look it up ({@code nextLookupAt}). Never expires.
         */
        IN_FLIGHT,
        /**
         * Every lookup of an effect's schedule went unanswered: an operator must find out at the remote
         * whether it applied the request, and resolve it. Never expires; retries get {@code NeedsReconciliation}.
         */
        NEEDS_RECONCILIATION,
        /** A claim whose work is running, written only by version 1 of the schema's function (a rolling upgrade). */
        RUNNING,
        /**
         * An effect {@link StatementSettlement settled by statement} sent without a definite answer:
         * its outcome is read from the remote's statement ({@link StatementReconciliation}). Never
         * expires; retries get {@code Unknown}.
         */
        SENT;

        /** {@return the lower-case name ({@code needs_reconciliation}), as endpoints and metrics spell it} */
        public String tag() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * One action of an operator.
     *
     * @param at when
     * @param action {@code resolved_applied}, {@code resolved_refused} or {@code forgotten}
     * @param operator who
     * @param reason why
     */
    public record Action(Instant at, String action, String operator, String reason) {}
}
