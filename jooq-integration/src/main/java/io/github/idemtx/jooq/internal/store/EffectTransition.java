package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * The external effect's lifecycle, one case per change of its claim row, each run by exactly one
 * statement ({@link EffectStatements#apply}, {@link EffectSettlements#apply} or {@link
 * StatementSettlements#apply}, overloaded per case).
 * The cases and their order are those of docs/claim-protocol.md, "External effects": claim, take
 * over (one claim, or the recoverer's batch), renew, record fenced, record late, refuse before the
 * call, release as unknown, release to an operator, resolve; for an effect settled by statement,
 * mark sent, settle by statement, absent by statement, mismatch to an operator. The reads ({@code effect-read}, the
 * unsettled lists) change nothing and are not transitions; an operator's forget is {@link
 * AdminStatements#forget}, shared with {@code IdempotentTransaction}'s claims.
 */
public sealed interface EffectTransition {

    /** Whether the statement carries the transaction's COMMIT (one round trip) or leaves it open. */
    enum Commit {
        /** The COMMIT goes with the statement; a connection lost in flight is marked by {@link SqlStates#inCommit}. */
        WITH_STATEMENT,
        /** The transaction stays open for the local writes that follow and the unit's own COMMIT. */
        LATER
    }

    /**
     * One claim of the key: its fence and its start together. Fences start again at 1 for a new
     * claim of the key (after an expiry, a purge or a refusal), so a holder stalled past all of that
     * must not match.
     */
    record FencedClaim(Scope scope, IdempotencyKey key, long fence, Instant claimedAt) {}

    /** A definite answer as stored: {@link ClaimState#SUCCEEDED} with the result, or {@link ClaimState#FAILED} with the failure. */
    @SuppressWarnings("ArrayRecordComponent") // taken apart and compared by content where needed, never hashed
    record Answer(ClaimState state, byte @Nullable [] stored) {}

    /**
     * {@code effect-claim}: the key claimed in flight (fence 1, or the expired row's fence + 1) with
     * a lease, waiting at most {@code lockWait} on a concurrent claimer's uncommitted row. Returns the
     * fence and start ({@link EffectStatements.Claimed}), or null when a live row is there.
     */
    @SuppressWarnings("ArrayRecordComponent") // bound, never compared or hashed
    record Claim(
            Scope scope,
            IdempotencyKey key,
            byte[] fingerprint,
            String effect,
            byte @Nullable [] request,
            Duration lease,
            Duration lockWait,
            Commit commit)
            implements EffectTransition {}

    /** {@code effect-takeover}: an in-flight claim whose lease passed, still {@code claim}, gets fence + 1; the new fence or null. */
    record TakeOver(FencedClaim claim, Duration lease) implements EffectTransition {}

    /**
     * {@code effect-scan}: the recoverer takes over up to {@code limit} in-flight claims of {@code
     * effect} whose lease passed and whose next lookup is due, each with fence + 1.
     */
    record TakeOverBatch(String effect, int limit, Duration lease) implements EffectTransition {}

    /**
     * {@code effect-takeover}: the holder's lease started again from now, fenced; the ms left of it
     * or null when the fence was lost. With {@link Commit#WITH_STATEMENT} it ends phase 1 (the claim
     * is this transaction's own, so it matches).
     */
    record Renew(FencedClaim claim, Duration lease, Commit commit) implements EffectTransition {}

    /**
     * {@code effect-record}: the answer recorded while the fence is still the claim's; when, or null
     * when the fence was lost. With {@link Commit#WITH_STATEMENT}, sent after the local writes: a
     * lost fence fails the statement, so that nothing of the transaction commits.
     */
    record RecordFenced(FencedClaim claim, Answer answer, Duration ttl, Commit commit) implements EffectTransition {}

    /**
     * {@code effect-record}: a definite answer whose holder lost the fence, recorded while the claim
     * begun at {@code claimedAt} is unsettled (in flight or needing reconciliation); when, or null.
     */
    record RecordLate(Scope scope, IdempotencyKey key, Instant claimedAt, Answer answer, Duration ttl)
            implements EffectTransition {}

    /**
     * {@code effect-record}: a refusal of the local writes before the call, on a fresh or expired
     * key (the claim's own insert rolled back with them); when, or null if a live row is there.
     */
    @SuppressWarnings("ArrayRecordComponent") // bound, never compared or hashed
    record RefuseBeforeCall(
            Scope scope, IdempotencyKey key, byte[] fingerprint, String effect, byte[] failure, Duration ttl)
            implements EffectTransition {}

    /**
     * {@code effect-release}: the lease ends now, the claim staying in flight for a retry or the
     * recoverer. {@code nextLookupIn} counts the attempt and schedules the recoverer's next lookup;
     * null counts nothing (a retry's attempt, or a claim handed back). False if the fence was lost.
     */
    record ReleaseUnknown(FencedClaim claim, @Nullable Duration nextLookupIn) implements EffectTransition {}

    /** {@code effect-release}: the attempt counted and the claim handed to an operator (state 4); false if the fence was lost. */
    record ReleaseToOperator(FencedClaim claim) implements EffectTransition {}

    /**
     * {@code effect-record}: an operator's answer for a claim of {@code effect} needing
     * reconciliation, its request cleared; its request and start ({@link EffectSettlements.Resolved}),
     * or null if it is not one.
     */
    record Resolve(Scope scope, IdempotencyKey key, String effect, Answer answer, Duration ttl)
            implements EffectTransition {}

    /**
     * {@code effect-sent}: an effect settled by statement marks its claim sent (state 5) with the
     * reference it sends, fenced, with the COMMIT, before every send; the number of sends so far, or
     * null when the fence was lost (nothing is sent then).
     */
    record MarkSent(FencedClaim claim, String reference) implements EffectTransition {}

    /**
     * {@code statement-apply}: a statement line with the claim's reference settles it applied while it
     * is unsettled (sent, in flight to be sent again, or at an operator); its request and start, or
     * null when it is not unsettled.
     */
    record SettleByStatement(
            Scope scope, IdempotencyKey key, String effect, String reference, Answer answer, Duration ttl)
            implements EffectTransition {}

    /**
     * {@code statement-apply}: a sent claim that no statement line names although the statements
     * applied cover its send plus {@code lag}: to {@link ClaimState#IN_FLIGHT} with its lease passed
     * (the recoverer sends it again, same reference) or to {@link ClaimState#NEEDS_RECONCILIATION};
     * false when it changed meanwhile (a line came, another pass decided).
     */
    record AbsentByStatement(
            Scope scope, IdempotencyKey key, String effect, Instant sentAt, Duration lag, ClaimState to)
            implements EffectTransition {}

    /**
     * {@code statement-apply}: a claim in flight or sent whose statement line disagrees with it
     * (amount, currency, a request that no longer decodes) to {@link ClaimState#NEEDS_RECONCILIATION},
     * so that nothing sends it again while an operator decides; false when it is not unsettled.
     */
    record MismatchToOperator(Scope scope, IdempotencyKey key, String effect) implements EffectTransition {}
}
