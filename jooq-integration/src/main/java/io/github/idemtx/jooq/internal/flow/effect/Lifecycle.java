package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.Remote.Lookup;
import io.github.idemtx.jooq.StatementSettlement;
import io.github.idemtx.jooq.internal.store.ClaimRow;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.EffectTransition;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The decisions of the external effect's lifecycle (docs/claim-protocol.md, "External effects"),
 * apart from the statements that carry them out: what a row found at the claim calls for, what a
 * lookup's answer leads to, when the lease is renewed before the call and how long the call may
 * take, and which release ends a hold whose outcome is unknown. Pure: no database, no clock of its
 * own (times are passed in), so each is unit-tested, mutations included.
 */
final class Lifecycle {

    private Lifecycle() {}

    /**
     * Whether the claim's COMMIT goes with its INSERT: yes when the remote writes nothing before the
     * call; a {@link Remote.Holding}'s {@code before} runs in the claim's transaction first.
     */
    static EffectTransition.Commit claimCommit(Remote<?, ?> remote) {
        return remote instanceof Remote.Holding<?, ?>
                ? EffectTransition.Commit.LATER
                : EffectTransition.Commit.WITH_STATEMENT;
    }

    /** What a live row of the key, found instead of a fresh claim, calls for. */
    enum AtTheRow {
        /** Another request, or the key used by another effect or by {@code IdempotentTransaction}. */
        MISMATCH,
        /** Settled or needing reconciliation: its answer. */
        ANSWER,
        /** In flight with its lease passed: take it over. */
        TAKE_OVER,
        /** In flight with a live lease: poll until it settles or the wait ends. */
        WAIT
    }

    static AtTheRow atTheRow(ClaimRow row, Fingerprint fingerprint, String effect) {
        if (!fingerprint.matches(row.fingerprint()) || !effect.equals(row.effect())) {
            return AtTheRow.MISMATCH;
        }
        if (row.state() != ClaimState.IN_FLIGHT) {
            return AtTheRow.ANSWER;
        }
        return row.leaseExpired() ? AtTheRow.TAKE_OVER : AtTheRow.WAIT;
    }

    /** What a takeover's lookup leads to. */
    enum AfterLookup {
        RECORD_APPLIED,
        RECORD_REFUSED,
        /** No answer: release as unknown (counted for the recoverer), looked up again later. */
        RELEASE_UNKNOWN,
        /** Absent and nothing can send it (its stored request does not decode): an operator settles it. */
        TO_OPERATOR,
        /** Absent, and absent means not applied: sent again with the same downstream key. */
        SEND_AGAIN
    }

    static AfterLookup afterLookup(Lookup<?> lookup, Absent absent, @Nullable String undecodable) {
        return switch (lookup) {
            case Lookup.Found<?> found -> AfterLookup.RECORD_APPLIED;
            case Lookup.Refused<?> refused -> AfterLookup.RECORD_REFUSED;
            case Lookup.Unknown<?> unknown -> AfterLookup.RELEASE_UNKNOWN;
            case Lookup.Absent<?> a when absent == Absent.UNKNOWN -> AfterLookup.RELEASE_UNKNOWN;
            case Lookup.Absent<?> a when undecodable != null -> AfterLookup.TO_OPERATOR;
            case Lookup.Absent<?> a -> AfterLookup.SEND_AGAIN;
        };
    }

    /**
     * What a claim taken over (by a retry or the recoverer) of an effect settled by statement calls
     * for instead of a lookup: such a claim still in flight was never sent (it is marked sent,
     * committed, before every send), so it is sent now, unless nothing can send it.
     */
    static AfterLookup unsentByStatement(@Nullable String undecodable) {
        return undecodable != null ? AfterLookup.TO_OPERATOR : AfterLookup.SEND_AGAIN;
    }

    /**
     * How long after a send the statements must cover before the claim is absent: the bank's booking
     * lag, but never less than the lease, so that no send is judged absent while its call may still
     * be running (its deadline is inside the lease) and the bank may still take it.
     */
    static Duration absentWindow(Duration lag, Duration lease) {
        return java.util.Collections.max(List.of(lag, lease));
    }

    /**
     * Where a sent claim that the statements show absent goes: in flight again, for the recoverer to
     * send with the same reference, while the settlement sends again and the claim has sends left and
     * a request to send; else to an operator.
     */
    static ClaimState whenAbsent(
            StatementSettlement.WhenAbsent whenAbsent, int sends, int maxSends, @Nullable String undecodable) {
        return whenAbsent == StatementSettlement.WhenAbsent.SEND_AGAIN && sends < maxSends && undecodable == null
                ? ClaimState.IN_FLIGHT
                : ClaimState.NEEDS_RECONCILIATION;
    }

    /**
     * What is left for the call of a lease begun at {@code leaseStart} (nanos, this JVM's clock): four
     * fifths of the lease from its start, so that the call ends before a takeover could overlap it.
     */
    static long callBudget(long leaseStart, long now, Duration lease) {
        return leaseStart + lease.toNanos() * 4 / 5 - now;
    }

    /** Whether so little is left ({@link #callBudget}) that the lease is renewed, fenced, before the call. */
    static boolean renewFirst(long budget, Duration lease) {
        return budget < lease.toNanos() / 2;
    }

    /**
     * What is left for the call after a renewal that the database answered with {@code msLeft} of
     * the lease at {@code renewedAt}: four fifths of it (never more than one lease), less the time
     * since.
     */
    static long budgetAfterRenewal(long msLeft, long renewedAt, long now, Duration lease) {
        return Math.min(lease.toNanos(), msLeft * 1_000_000L) * 4 / 5 - (now - renewedAt);
    }

    /**
     * The release of a hold whose outcome is unknown: a retry's attempt ends the lease, nothing
     * counted; the recoverer's is counted ({@link #countedRelease}).
     */
    static EffectTransition releaseUnknown(HeldClaim<?> hold, List<Duration> schedule) {
        return hold.attempts() == HeldClaim.Attempts.NOT_COUNTED
                ? new EffectTransition.ReleaseUnknown(hold.fenced(), null)
                : countedRelease(hold, schedule);
    }

    /**
     * The release of a hold whose attempt counts as an unanswered lookup, whoever held it (a
     * recoverer's attempt, or any holder's failed record): the next lookup scheduled, or after the
     * last of {@code schedule} the claim handed to an operator.
     */
    static EffectTransition countedRelease(HeldClaim<?> hold, List<Duration> schedule) {
        int lookup = hold.lookups() + 1;
        return lookup > schedule.size()
                ? new EffectTransition.ReleaseToOperator(hold.fenced())
                : new EffectTransition.ReleaseUnknown(hold.fenced(), schedule.get(lookup - 1));
    }

    /** A claim the recoverer took but will not settle: its lease ends now, nothing counted. */
    static EffectTransition.ReleaseUnknown handBack(EffectTransition.FencedClaim claim) {
        return new EffectTransition.ReleaseUnknown(claim, null);
    }

    /** The bound on a remote lookup: four fifths of the lease, so that one that hangs cannot hold a recoverer past it. */
    static Duration lookupBound(Duration lease) {
        return Duration.ofNanos(lease.toNanos() * 4 / 5);
    }

    /**
     * The poll of a duplicate waiting on a live lease: the next pause after {@code pauseMs}, doubling
     * from 10 ms to at most 250 ms.
     */
    static long nextPause(long pauseMs) {
        return Math.min(pauseMs * 2, 250);
    }

    /** How long to sleep before the next poll: the pause, but no longer than the wait left (at least 1 ms). */
    static long sleepMs(long pauseMs, long deadline, long now) {
        return Math.min(pauseMs, Math.max(1, (deadline - now) / 1_000_000));
    }

    /** The wait left for the claim's insert on a claimer's uncommitted row, in whole ms rounded up, at least 1. */
    static Duration claimWait(long deadline, long now) {
        return Duration.ofMillis(Math.max(1, (deadline - now + 999_999) / 1_000_000));
    }

    /**
     * Whether a late answer, which could no longer be recorded, agrees with what the claim's row
     * (read after) records: the same claim (begun at {@code claimedAt}), the same state and the same
     * stored bytes. Anything else (the row gone, claimed anew, another answer) is for an operator.
     */
    static boolean lateAnswerAgrees(@Nullable ClaimRow row, Instant claimedAt, EffectTransition.Answer answer) {
        return row != null
                && claimedAt.equals(row.createdAt())
                && row.state() == answer.state()
                && Arrays.equals(row.result(), answer.stored());
    }
}
