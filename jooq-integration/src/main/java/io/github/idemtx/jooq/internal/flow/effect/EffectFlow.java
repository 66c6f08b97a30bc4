package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.core.WorkFailedException;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.Remote.Lookup;
import io.github.idemtx.jooq.Remote.Reply;
import io.github.idemtx.jooq.internal.store.ClaimRow;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.Digests;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import io.github.idemtx.jooq.internal.store.FailureEncoding;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.store.StoredValues;
import io.github.idemtx.jooq.internal.tx.Boundary;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import io.github.idemtx.jooq.internal.tx.TransactionOwnership;
import io.github.idemtx.jooq.internal.tx.Units;
import io.github.idemtx.jooq.internal.tx.WorkGuard;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.jooq.Configuration;
import org.jspecify.annotations.Nullable;

/**
 * The external-effect protocol (docs/claim-protocol.md, "External effects"): phase 1 commits the
 * claim in flight with the caller's local writes; phase 2 calls the remote outside any transaction;
 * phase 3 records the answer with the local writes after it, only while the fencing token is the
 * claim's. A claim whose lease passed is taken over with a new token and looked up before anything
 * is sent again. Reuses the in-transaction door's pieces: own transactions with retries
 * ({@link Units}), the ownership decision, {@link StoredValues}, failure encoding, backoff.
 */
public final class EffectFlow<R, T> {

    private static final System.Logger LOG = System.getLogger("io.github.idemtx");

    private final Configuration configuration;
    private final IdempotencyPolicy policy;
    private final TransactionOwnership ownership;
    private final EffectStatements sql;
    private final String effect;
    private final StoredValues<R> requests;
    private final StoredValues<T> results;
    private final Remote<R, T> remote;
    private final Duration lease;
    private final List<Duration> lookupSchedule;
    private final boolean readAfterWrite;
    /** {@code remote} when it writes before the call; null when not: the claim then carries its own COMMIT. */
    private final Remote.@Nullable Holding<R, T> holding;

    private final Jdbc.ServerCheck serverCheck = new Jdbc.ServerCheck();
    private final Listeners listeners;

    public EffectFlow(
            Configuration configuration,
            IdempotencyPolicy policy,
            TransactionOwnership ownership,
            EffectStatements sql,
            String effect,
            ResultCodec<R> requestCodec,
            ResultCodec<T> resultCodec,
            Remote<R, T> remote,
            Duration lease,
            List<Duration> lookupSchedule,
            boolean readAfterWrite,
            Listeners listeners) {
        this.configuration = configuration;
        this.listeners = listeners;
        this.policy = policy;
        this.ownership = ownership;
        this.sql = sql;
        this.effect = effect;
        this.requests = new StoredValues<>(requestCodec, policy.maxResultBytes());
        this.results = new StoredValues<>(resultCodec, policy.maxResultBytes());
        this.remote = remote;
        this.lease = lease;
        this.lookupSchedule = List.copyOf(lookupSchedule);
        this.readAfterWrite = readAfterWrite;
        this.holding = remote instanceof Remote.Holding<R, T> h ? h : null;
    }

    /**
     * What a recovery pass did with a claim it took over; {@code HANDED_BACK}: not settled because
     * the pass was asked to stop, its lease ended at once for another pass.
     */
    public enum Settled {
        FOUND,
        REFUSED,
        RESENT,
        UNKNOWN,
        RECONCILIATION,
        LOST_FENCE,
        FAILED,
        HANDED_BACK
    }

    /**
     * A stored request as decoded, or why it no longer decodes (a deploy changed its class): then
     * {@code request} is null, and what needs only the downstream key (a lookup, a record, an
     * operator's resolution) still works.
     */
    public record DecodedRequest<R>(
            @Nullable R request, @Nullable String problem) {}

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

    /** An outcome, and how the claim was settled on the way. */
    private record Step<T>(RemoteOutcome<T> outcome, Settled how) {}

    // ------------------------------------------------------------------ the call

    public RemoteOutcome<T> run(Scope scope, IdempotencyKey key, Fingerprint fingerprint, R request) {
        byte[] encodedRequest = requests.encode(scope, key, request);
        long deadline = System.nanoTime() + policy.duplicateWait().toNanos();
        long pause = 10;
        while (true) {
            // a claimer whose before() is running holds the row uncommitted: the wait on it is bounded too
            long waitMs = Math.max(1, (deadline - System.nanoTime() + 999_999) / 1_000_000);
            long claimStart = System.nanoTime(); // no later than the database's start of the lease
            Found<R> found = claim(scope, key, fingerprint, request, encodedRequest, waitMs, claimStart);
            switch (found) {
                case Found.WaitedOut<R> waitedOut -> {
                    return new Outcome.InProgress<>(policy.retryAfter());
                }
                case Found.Refused<R> refused -> {
                    RemoteOutcome<T> failed = recordRefusalBeforeCall(scope, key, fingerprint, refused.failure());
                    if (failed != null) {
                        created(scope, key);
                        return failed;
                    }
                    continue; // a duplicate claimed the key meanwhile: answer from its row
                }
                case Found.Fresh<R> fresh -> {
                    created(scope, key);
                    return callAndRecord(
                                    new Hold<>(fresh.intent(), fresh.claimedAt(), fresh.leaseStart(), 0, false, null),
                                    false)
                            .outcome();
                }
                case Found.Gone<R> gone -> {
                    continue; // the row expired or was purged between the claim and the read
                }
                case Found.Existing<R> existing -> {
                    ClaimRow row = existing.row();
                    if (!fingerprint.matches(row.fingerprint()) || !effect.equals(row.effect())) {
                        // another request, or the key used by another effect or by IdempotentTransaction
                        return new Outcome.FingerprintMismatch<>();
                    }
                    if (row.state() != ClaimState.IN_FLIGHT) {
                        return answer(scope, key, row);
                    }
                    if (row.leaseExpired()) {
                        long takeoverStart = System.nanoTime();
                        // an effect's row, as read() reads it, has its start (created_at is NOT NULL)
                        Instant claimedAt = Objects.requireNonNull(row.createdAt(), "createdAt");
                        Long fence = inTransaction(
                                scope,
                                key,
                                c -> sql.takeOver(c, scope, key, row.fence(), claimedAt, lease.toMillis()),
                                false);
                        if (fence != null) {
                            // a request stored before a deploy may no longer decode: the retry carries it (its
                            // fingerprint matched)
                            R stored = decodeRequest(scope, key, row.request()).request();
                            Intent<R> intent = intent(scope, key, stored != null ? stored : request, fence, claimedAt);
                            return settle(new Hold<>(intent, claimedAt, takeoverStart, row.lookups(), false, null))
                                    .outcome();
                        }
                        continue; // another caller or the recoverer took it over first
                    }
                }
            }
            if (System.nanoTime() - deadline >= 0) {
                return new Outcome.InProgress<>(policy.retryAfter());
            }
            sleep(Math.min(pause, Math.max(1, (deadline - System.nanoTime()) / 1_000_000)));
            pause = Math.min(pause * 2, 250);
        }
    }

    /**
     * Phase 1 in a transaction of its own: the claim committed in flight with {@link Remote.Holding#before}'s
     * local writes, or what is there instead.
     */
    private Found<R> claim(
            Scope scope,
            IdempotencyKey key,
            Fingerprint fingerprint,
            R request,
            byte @Nullable [] encodedRequest,
            long waitMs,
            long claimStart) {
        try {
            return inTransaction(
                    scope,
                    key,
                    c -> {
                        EffectStatements.Claimed fresh;
                        try {
                            fresh = sql.claim(
                                    c,
                                    scope,
                                    key,
                                    fingerprint.bytes(),
                                    effect,
                                    encodedRequest,
                                    lease.toMillis(),
                                    waitMs,
                                    holding == null);
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
                            ClaimRow row =
                                    readOnly(r -> sql.read(r, scope, key)).apply(c);
                            return row == null ? new Found.Gone<>() : new Found.Existing<>(row);
                        }
                        Intent<R> intent = intent(scope, key, request, fresh.fence(), fresh.createdAt());
                        long leaseStart = claimStart;
                        if (holding != null) {
                            before(c, holding, intent);
                            // the lease counts from the COMMIT, not from the INSERT: nobody can see the claim
                            // while before() runs, so all of the lease is left for the call however long it took
                            leaseStart = System.nanoTime();
                            sql.leaseFromCommit(c, scope, key, fresh.fence(), fresh.createdAt(), lease.toMillis());
                        }
                        return new Found.Fresh<>(
                                intent, fresh.createdAt(), leaseStart); // the unit's COMMIT is a no-op after one sent
                    },
                    true);
        } catch (RejectedBefore r) {
            return new Found.Refused<>(r.failure);
        }
    }

    // ------------------------------------------------------------------ recovery

    /**
     * Takes over up to {@code limit} stuck claims and settles each, one after the other: what
     * happened to each, in order. Once {@code stop} says so, the claims not settled yet are handed
     * back (their lease ends at once) instead. Every unanswered attempt of the pass (a lookup, a
     * resend, a record) is counted, so each claim is due again only on the lookup schedule.
     */
    public List<Settled> recover(int limit, BooleanSupplier stop) {
        List<EffectStatements.Stuck> taken =
                inTransaction(null, null, c -> sql.scan(c, effect, limit, lease.toMillis()), false);
        List<Settled> settled = new ArrayList<>(taken.size());
        for (EffectStatements.Stuck s : taken) {
            settled.add(stop.getAsBoolean() ? handBack(s) : recoverOne(s));
        }
        return settled;
    }

    private Settled recoverOne(EffectStatements.Stuck s) {
        try {
            // the batch's leases started together: renew this one before settling it, or a
            // takeover by someone else may have happened while the others were settled
            long renewed = System.nanoTime();
            Long left = inTransaction(
                    s.scope(),
                    s.key(),
                    c -> sql.renew(c, s.scope(), s.key(), s.fence(), s.createdAt(), lease.toMillis()),
                    false);
            if (left == null) {
                return Settled.LOST_FENCE;
            }
            // the lookup needs only the downstream key: a request that no longer decodes does not stop it
            DecodedRequest<R> request = decodeRequest(s.scope(), s.key(), s.request());
            if (request.problem() != null) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + effect + " " + describe(s.scope(), s.key(), s.createdAt()) + ": "
                                + request.problem() + "; it is looked up by its downstream key, never sent again");
            }
            return settle(new Hold<>(
                            intent(s.scope(), s.key(), request.request(), s.fence(), s.createdAt()),
                            s.createdAt(),
                            renewed,
                            s.lookups(),
                            true,
                            request.problem()))
                    .how();
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: recovering a claim of " + effect + " failed; a later pass tries again",
                    e);
            return Settled.FAILED;
        }
    }

    /** A claim the pass took but will not settle: its lease ends now, nothing counted, for the next pass. */
    private Settled handBack(EffectStatements.Stuck s) {
        try {
            boolean released = inTransaction(
                    s.scope(),
                    s.key(),
                    c -> sql.release(c, s.scope(), s.key(), s.fence(), s.createdAt(), false, null, false),
                    false);
            return released ? Settled.HANDED_BACK : Settled.LOST_FENCE;
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: handing back a claim of " + effect + " failed; its lease runs out",
                    e);
            return Settled.FAILED;
        }
    }

    /** The stored request decoded, or why it no longer decodes; never throws for the codec's sake. */
    public DecodedRequest<R> decodeRequest(Scope scope, IdempotencyKey key, byte @Nullable [] stored) {
        try {
            return new DecodedRequest<>(requests.decode(scope, key, stored), null);
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            return new DecodedRequest<>(null, "the stored request no longer decodes (" + cause + ")");
        }
    }

    public List<EffectStatements.Stuck> unsettled(ClaimState state, int limit) {
        return inTransaction(null, null, c -> sql.unsettled(c, effect, state, limit), false);
    }

    private void created(Scope scope, IdempotencyKey key) {
        if (listeners.any()) {
            listeners.claimChanged(ClaimEvent.created("effect:" + effect, scope, key));
        }
    }

    /** A statement run in the transaction of an operator's resolution, after it (its record). */
    @FunctionalInterface
    public interface InSameTransaction {
        void run(Connection connection) throws SQLException;
    }

    /** The stored result decoded by the effect's codec (an operator's view); throws what the codec throws. */
    public @Nullable T decodeResult(Scope scope, IdempotencyKey key, byte @Nullable [] stored) {
        return results.decode(scope, key, stored);
    }

    /** The stored form of a result, as the effect's codec writes it. */
    public byte @Nullable [] encodeResult(Scope scope, IdempotencyKey key, @Nullable T result) {
        return results.encode(scope, key, result);
    }

    /**
     * An operator's outcome for a claim needing reconciliation, with the local writes it implies and
     * then {@code also}, in one transaction; false if it is not one (nothing written).
     */
    public boolean resolve(
            Scope scope,
            IdempotencyKey key,
            @Nullable T result,
            @Nullable Failure failure,
            @Nullable InSameTransaction also) {
        byte[] stored = failure != null ? FailureEncoding.encode(failure) : results.encode(scope, key, result);
        ClaimState state = failure != null ? ClaimState.FAILED : ClaimState.SUCCEEDED;
        return inTransaction(
                scope,
                key,
                c -> {
                    EffectStatements.Resolved resolved = sql.resolve(
                            c, scope, key, effect, state, stored, policy.ttl().toMillis());
                    if (resolved == null) {
                        return false;
                    }
                    DecodedRequest<R> request = decodeRequest(scope, key, resolved.request());
                    if (request.problem() != null) {
                        LOG.log(
                                System.Logger.Level.WARNING,
                                "idemtx: " + effect + " " + describe(scope, key, resolved.createdAt())
                                        + " resolved by an operator: " + request.problem()
                                        + "; the local writes get no request");
                    }
                    Intent<R> intent = intent(scope, key, request.request(), 0, resolved.createdAt());
                    if (failure != null) {
                        local(c, tx -> remote.refused(tx, intent, failure), scope, key, true);
                    } else {
                        local(c, tx -> remote.after(tx, intent, result), scope, key, true);
                    }
                    if (also != null) {
                        also.run(c);
                    }
                    return true;
                },
                false);
    }

    // ------------------------------------------------------------------ phases 2 and 3

    /**
     * A claim this call holds: its intent, when its lease began (by this JVM's clock, no later than
     * the database's), the lookups counted so far, whether this holder counts its unanswered
     * attempts (the recoverer does, so that it reaches reconciliation on schedule; a retry does
     * not, the client deciding how often it asks), and why its stored request does not decode (null
     * when it does; then it is never sent again).
     */
    private record Hold<R>(
            Intent<R> intent,
            Instant claimedAt,
            long leaseStart,
            int lookups,
            boolean counts,
            @Nullable String undecodable) {}

    /** Phase 2 and 3: calls the remote with the claim held, records its answer or releases the lease. */
    private Step<T> callAndRecord(Hold<R> hold, boolean resent) {
        Intent<R> intent = hold.intent();
        // the call must end before the lease does, or a takeover could overlap it: what is left of the
        // lease, and if that is little (a slow before(), a lookup), the lease renewed first, fenced
        long leaseNanos = lease.toNanos();
        long left = hold.leaseStart() + leaseNanos * 4 / 5 - System.nanoTime();
        if (left < leaseNanos / 2) {
            long renewedAt = System.nanoTime();
            Long ms = inTransaction(
                    intent.scope(),
                    intent.key(),
                    c -> sql.renew(c, intent.scope(), intent.key(), intent.fence(), hold.claimedAt(), lease.toMillis()),
                    false);
            if (ms == null) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + effect + " " + describe(intent) + ": this holder sent"
                                + " nothing: its lease (fence " + intent.fence()
                                + ") passed before the call and another holder took"
                                + " the claim over");
                return lostFence(intent);
            }
            left = Math.min(leaseNanos, ms * 1_000_000L) * 4 / 5 - (System.nanoTime() - renewedAt);
        }
        Reply<T> reply;
        try {
            reply = remote.call(intent, Instant.now().plusNanos(Math.max(0, left)));
            if (reply == null) {
                throw new IllegalStateException(remote.getClass().getName() + ".call returned null");
            }
        } catch (Exception e) {
            return unknown(hold, "the remote call failed: " + e);
        }
        return switch (reply) {
            case Reply.Applied<T> applied ->
                recordApplied(hold, applied.result(), resent ? Settled.RESENT : Settled.FOUND);
            case Reply.Refused<T> refused -> recordRefused(hold, refused.failure());
        };
    }

    /** A takeover's path: look the request up before anything is sent again. */
    private Step<T> settle(Hold<R> hold) {
        Lookup<T> lookup = boundedLookup(hold.intent());
        return switch (lookup) {
            case Lookup.Found<T> found -> recordApplied(hold, found.result(), Settled.FOUND);
            case Lookup.Refused<T> refused -> recordRefused(hold, refused.failure());
            case Lookup.Absent<T> absent
            when !readAfterWrite ->
                unknown(hold, "the remote has no record of it, but does not promise read-after-write");
            // nothing applied it, and nothing can send it: only an operator can settle it
            case Lookup.Absent<T> absent
            when hold.undecodable() != null ->
                release(
                        hold,
                        "the remote has no record of it" + " and it cannot be sent again: " + hold.undecodable(),
                        true,
                        true);
            case Lookup.Absent<T> absent -> callAndRecord(hold, true);
            case Lookup.Unknown<T> unknown -> unknown(hold, "the lookup did not answer: " + unknown.reason());
        };
    }

    /**
     * The remote's lookup, given four fifths of the lease: one that hangs (a remote that never
     * answers, a socket without a timeout) is interrupted and counts as unknown, so it cannot hold a
     * recoverer, and every claim queued behind it, past the schedule. Its late answer is dropped:
     * unknown is always safe, the next lookup asks again.
     */
    private Lookup<T> boundedLookup(Intent<R> intent) {
        java.util.concurrent.FutureTask<Lookup<T>> task = new java.util.concurrent.FutureTask<>(() -> {
            Lookup<T> answer = remote.lookup(intent);
            return answer != null ? answer : Lookup.unknown(remote.getClass().getName() + ".lookup returned null");
        });
        Thread lookup = Thread.ofVirtual().name("idemtx-lookup-" + effect).start(task);
        long bound = lease.toNanos() * 4 / 5;
        try {
            return task.get(bound, java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            lookup.interrupt();
            task.cancel(true);
            return Lookup.unknown("the lookup did not answer within " + java.time.Duration.ofNanos(bound)
                    + " (four fifths of the lease)");
        } catch (java.util.concurrent.ExecutionException e) {
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

    private Step<T> recordApplied(Hold<R> hold, @Nullable T result, Settled how) {
        Intent<R> intent = hold.intent();
        byte[] stored;
        try {
            stored = results.encode(intent.scope(), intent.key(), result);
        } catch (RuntimeException e) {
            // the remote applied it and this will never be storable: an operator must settle it
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: the result of " + effect + " could not be stored;" + " the claim needs reconciliation",
                    e);
            return release(hold, "the result could not be stored: " + e.getMessage(), true, true);
        }
        return record(
                hold,
                ClaimState.SUCCEEDED,
                stored,
                tx -> remote.after(tx, intent, result),
                at -> new Outcome.Executed<>(result),
                how);
    }

    private Step<T> recordRefused(Hold<R> hold, Failure failure) {
        return record(
                hold,
                ClaimState.FAILED,
                FailureEncoding.encode(failure),
                tx -> remote.refused(tx, hold.intent(), failure),
                at -> new Outcome.Rejected<>(failure, at, false),
                Settled.REFUSED);
    }

    /**
     * Phase 3: the fenced record and the local writes that go with it, in one transaction; once more
     * on another connection when the connection was lost with its COMMIT in flight. If it fails (the
     * local writes throw, the database is unreachable), the remote's answer is not lost: the claim
     * stays in flight, the failure counts as an unanswered lookup, and after the schedule it waits
     * for an operator; the caller gets {@code Unknown}. A COMMIT whose outcome is still unknown after
     * that (or one the synchronous standby never confirmed) is thrown as
     * {@link CommitOutcomeUnknownException}, the claim left as it is.
     */
    private Step<T> record(
            Hold<R> hold,
            ClaimState state,
            byte @Nullable [] stored,
            LocalWrites writes,
            Function<Instant, RemoteOutcome<T>> answer,
            Settled how) {
        Intent<R> intent = hold.intent();
        AtomicBoolean localWritesCommitted = new AtomicBoolean();
        SqlUnit<@Nullable Recorded> unit = c -> {
            First first = localThenRecord(c, hold, state, stored, writes);
            if (first.localWritesCommitted()) {
                localWritesCommitted.set(true); // by themselves: never run again
            }
            if (first.recorded() != null) {
                return first.recorded();
            }
            // the older order: the record first, under the claim's row lock, then the local writes
            Instant at = first.fenceLost()
                    ? null // a lost fence does not come back
                    : recordFenced(c, hold, state, stored, false);
            boolean late = false;
            if (at == null) {
                // the fence was lost, the answer is still definite: the remote applied (or refused)
                // this downstream key. While the claim is unsettled nobody has a better answer, and
                // whoever holds it now can only record the same (the remote deduplicates the key)
                // or learn this one: state 3/4 under the row lock lets exactly one record and its
                // local writes commit
                at = recordLate(c, hold, state, stored);
                late = at != null;
            }
            if (at != null && !first.localWritesCommitted()) {
                try {
                    local(c, writes, intent.scope(), intent.key(), true);
                } catch (RuntimeException e) {
                    if (first.failure() != null) {
                        e.addSuppressed(first.failure()); // what the first run met
                    }
                    throw e;
                }
            }
            return at == null ? null : new Recorded(at, late);
        };
        Recorded recorded;
        boolean again = false;
        try {
            try {
                recorded = inTransaction(intent.scope(), intent.key(), unit, false);
            } catch (CommitOutcomeUnknownException e) {
                if (!SqlStates.isLostInCommit(e) || localWritesCommitted.get()) {
                    throw e; // local writes that committed by themselves would run, and commit, again
                }
                // the connection was lost with the COMMIT in flight, and the answer is in hand: recorded
                // again on another connection. If the first COMMIT landed, the fence no longer matches and
                // the claim records this answer already (unrecorded() reads it, the local writes with it)
                LOG.log(
                        System.Logger.Level.DEBUG,
                        () -> "idemtx: " + effect + " " + describe(intent)
                                + ": the connection was lost with the record's COMMIT in flight; recording again",
                        e);
                again = true;
                try {
                    recorded = inTransaction(intent.scope(), intent.key(), unit, false);
                } catch (RuntimeException second) {
                    second.addSuppressed(e); // the first loss
                    throw second;
                }
            }
        } catch (CommitOutcomeUnknownException e) {
            // recorded on this server only (releasing the claim would wait for the standby too), or the
            // connection was lost again: the claim stays as it is, a retry replays it or takes it over
            throw e;
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: recording the answer of " + effect + " (" + verdict(state) + ") for " + describe(intent)
                            + " failed; it is looked up again",
                    e);
            return release(hold, "recording the answer failed: " + e, true, false);
        }
        if (recorded == null) {
            return unrecorded(hold, state, stored, again);
        }
        if (recorded.late()) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: " + effect + " " + describe(intent) + ": the remote's answer ("
                            + verdict(state) + ") came after this holder's lease (fence " + intent.fence()
                            + ") was taken over;"
                            + " the claim was unsettled, so it is recorded");
        }
        return new Step<>(answer.apply(recorded.at()), how);
    }

    private record Recorded(Instant at, boolean late) {}

    /** The fenced record of this holder's answer, with the COMMIT or without; when, or null: the fence was lost. */
    private @Nullable Instant recordFenced(
            Connection c, Hold<R> hold, ClaimState state, byte @Nullable [] stored, boolean commit)
            throws SQLException {
        Intent<R> intent = hold.intent();
        return sql.record(
                c,
                intent.scope(),
                intent.key(),
                intent.fence(),
                hold.claimedAt(),
                state,
                stored,
                policy.ttl().toMillis(),
                commit);
    }

    /** The record of a definite answer whose fence was lost, while its claim is unsettled; when, or null. */
    private @Nullable Instant recordLate(Connection c, Hold<R> hold, ClaimState state, byte @Nullable [] stored)
            throws SQLException {
        Intent<R> intent = hold.intent();
        return sql.recordLate(
                c,
                intent.scope(),
                intent.key(),
                hold.claimedAt(),
                state,
                stored,
                policy.ttl().toMillis());
    }

    /**
     * What the first try of phase 3 left: the answer recorded (committed), or the transaction rolled
     * back because the fence was lost, or because the local writes or the record failed with
     * {@code failure}; {@code localWritesCommitted} when the local writes ended their own transaction
     * past the guard, so that the answer is to be recorded without running them again.
     */
    private record First(
            @Nullable Recorded recorded,
            boolean fenceLost,
            @Nullable Exception failure,
            boolean localWritesCommitted) {}

    /**
     * The usual case in one round trip fewer: the local writes, then the fenced record with the
     * COMMIT. When that did not commit (the fence was lost, or the local writes failed, perhaps
     * because the claim was settled while they ran) the transaction is rolled back, and the caller
     * records first, fenced or late, and runs the local writes again after it, as the row lock
     * decides. A lost connection, an interrupt, and local writes the guard stopped before they ended
     * their transaction are thrown as they are. Local writes that did end it (past the guard) have
     * committed what they wrote so far without the record: running them again would write it twice,
     * so the caller records the answer alone, as the order before this one committed it with them,
     * and an error is logged.
     */
    private First localThenRecord(
            Connection c, Hold<R> hold, ClaimState state, byte @Nullable [] stored, LocalWrites writes)
            throws SQLException {
        Intent<R> intent = hold.intent();
        Exception failure;
        try {
            local(c, writes, intent.scope(), intent.key(), false);
            Instant at = recordFenced(c, hold, state, stored, true);
            if (at != null) {
                return new First(new Recorded(at, false), false, null, false);
            }
            Jdbc.rollback(c);
            return new First(null, true, null, false);
        } catch (WorkEndedTransactionException e) {
            if (!e.committedByWork()) {
                throw e;
            }
            Jdbc.rollback(c); // whatever it opened after its COMMIT
            LOG.log(
                    System.Logger.Level.ERROR,
                    "idemtx: " + effect + " " + describe(intent) + ": the local writes after the remote's answer"
                            + " ended their own transaction, so what they wrote before that is committed without"
                            + " the answer; the answer is recorded alone, the local writes are not run again:"
                            + " check them",
                    e);
            return new First(null, false, e, true);
        } catch (SQLException | RuntimeException e) {
            if (SqlStates.isConnectionLoss(e) || interrupted(e)) {
                throw e;
            }
            failure = e;
        }
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> "idemtx: " + effect + " " + describe(intent) + ": the local writes before the record failed ("
                        + failure + "); rolled back, recording first and running them again");
        Jdbc.rollback(c);
        return new First(null, false, failure, false);
    }

    /** Whether {@code e} stopped on an interrupt, which running the local writes again would ignore. */
    private static boolean interrupted(Throwable e) {
        if (Thread.currentThread().isInterrupted()) {
            return true;
        }
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof InterruptedException) {
                return true;
            }
        }
        return false;
    }

    /**
     * A definite answer that came too late to record: the claim is settled (or gone). The same
     * answer recorded is no news; any other is a contradiction an operator must look at, so it is
     * logged as an error with everything needed to find it at the remote.
     */
    private Step<T> unrecorded(Hold<R> hold, ClaimState state, byte @Nullable [] stored, boolean afterLostCommit) {
        Intent<R> intent = hold.intent();
        ClaimRow row;
        try {
            row = readAfterLoss(intent);
        } catch (RuntimeException e) {
            if (afterLostCommit) {
                // most likely settled by this holder's own first COMMIT, whose answer the connection lost
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + effect + " " + describe(intent) + ": the connection was lost with the"
                                + " record's COMMIT in flight, the record sent again found the claim settled"
                                + " (most likely by that COMMIT), and reading it failed; a retry replays it",
                        e);
                return new Step<>(
                        new RemoteOutcome.Unknown<>(
                                policy.retryAfter(),
                                "the record's COMMIT was lost in flight and reading the claim after it failed: " + e),
                        Settled.UNKNOWN);
            }
            LOG.log(
                    System.Logger.Level.ERROR,
                    "idemtx: " + effect + " " + describe(intent) + ": the remote " + verdict(state)
                            + " it after this holder's lease was taken over, and the claim, which is settled,"
                            + " could not be read to compare; if it records otherwise, reconcile it with the"
                            + " remote by its downstream key",
                    e);
            return unreadAfterLoss(e);
        }
        // the row of this holder's claim, null when it is gone or was claimed anew
        ClaimRow same = row != null && hold.claimedAt().equals(row.createdAt()) ? row : null;
        if (same != null && same.state() == state && Arrays.equals(same.result(), stored)) {
            LOG.log(
                    System.Logger.Level.DEBUG,
                    () -> "idemtx: " + effect + " " + describe(intent)
                            + ": a late answer, the same as the one recorded");
        } else {
            LOG.log(
                    System.Logger.Level.ERROR,
                    "idemtx: " + effect + " " + describe(intent) + ": the remote " + verdict(state)
                            + " it (" + (state == ClaimState.SUCCEEDED ? "result" : "failure") + " of "
                            + (stored == null ? 0 : stored.length) + " bytes)"
                            + " after this holder's lease was taken over, but the claim "
                            + (same == null
                                    ? "is gone or was claimed anew"
                                    : "records "
                                            + (same.state() == ClaimState.SUCCEEDED
                                                    ? "another result"
                                                    : same.state() == ClaimState.FAILED
                                                            ? "a refusal"
                                                            : "state " + same.state()))
                            + ": not recorded; reconcile it with the remote by its downstream key");
        }
        return new Step<>(now(intent, row), Settled.LOST_FENCE);
    }

    private static String verdict(ClaimState state) {
        return state == ClaimState.SUCCEEDED ? "applied" : "refused";
    }

    /** Scope, key and downstream key, as logs name a claim. */
    private String describe(Intent<R> intent) {
        return "scope '" + intent.scope().value() + "' key '" + intent.key().value() + "' (downstream key "
                + intent.downstreamKey() + ")";
    }

    private String describe(Scope scope, IdempotencyKey key, Instant claimedAt) {
        return "scope '" + scope.value() + "' key '" + key.value() + "' (downstream key "
                + downstreamKey(scope, key, claimedAt) + ")";
    }

    @FunctionalInterface
    private interface LocalWrites {
        void write(org.jooq.DSLContext tx) throws Exception;
    }

    /**
     * The outcome is unknown: the lease ends now; a holder that counts (the recoverer) counts the
     * attempt, whatever it was (a lookup, a resend), and may hand the claim to reconciliation.
     */
    private Step<T> unknown(Hold<R> hold, String reason) {
        return release(hold, reason, hold.counts(), false);
    }

    /**
     * Ends the lease, the claim staying in flight. {@code count} counts an unanswered lookup and
     * schedules the next, handing the claim to reconciliation after the last; {@code reconcile} does
     * so at once.
     */
    private Step<T> release(Hold<R> hold, String reason, boolean count, boolean reconcile) {
        Intent<R> intent = hold.intent();
        int lookup = hold.lookups() + 1;
        boolean toOperator = reconcile || (count && lookup > lookupSchedule.size());
        Long next = count && !toOperator ? lookupSchedule.get(lookup - 1).toMillis() : null;
        boolean released;
        try {
            released = inTransaction(
                    intent.scope(),
                    intent.key(),
                    c -> sql.release(
                            c,
                            intent.scope(),
                            intent.key(),
                            intent.fence(),
                            hold.claimedAt(),
                            count || toOperator,
                            next,
                            toOperator),
                    false);
        } catch (RuntimeException e) {
            // the lease runs out by itself; a retry or the recoverer takes it over then
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: releasing a claim of " + effect + " failed; its lease runs out",
                    e);
            return new Step<>(new RemoteOutcome.Unknown<>(lease, reason), Settled.FAILED);
        }
        if (!released) {
            return lostFence(intent);
        }
        return toOperator
                ? new Step<>(new RemoteOutcome.NeedsReconciliation<>(Instant.now()), Settled.RECONCILIATION)
                : new Step<>(new RemoteOutcome.Unknown<>(policy.retryAfter(), reason), Settled.UNKNOWN);
    }

    /** Another holder took the claim over: this one learns what the claim says now. */
    private Step<T> lostFence(Intent<R> intent) {
        ClaimRow row;
        try {
            row = readAfterLoss(intent);
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: " + effect + " " + describe(intent) + ": reading the claim after another holder"
                            + " took it over failed",
                    e);
            return unreadAfterLoss(e);
        }
        return new Step<>(now(intent, row), Settled.LOST_FENCE);
    }

    /** The claim's row, read after this holder lost it. */
    private @Nullable ClaimRow readAfterLoss(Intent<R> intent) {
        return inTransaction(
                intent.scope(), intent.key(), readOnly(c -> sql.read(c, intent.scope(), intent.key())), false);
    }

    /**
     * {@code unit}, which only reads, ended by a ROLLBACK: a connection lost there is a failed read,
     * never a commit of unknown outcome; the unit's COMMIT is then a no-op.
     */
    private static <V extends @Nullable Object> SqlUnit<V> readOnly(SqlUnit<V> unit) {
        return c -> {
            V v = unit.apply(c);
            Jdbc.rollback(c);
            return v;
        };
    }

    /**
     * A holder that lost its claim and could not read what the claim says now: Unknown, as when its
     * own record failed, and a retry reads the claim's answer; the caller gets no exception after a
     * definite answer of the remote.
     */
    private Step<T> unreadAfterLoss(RuntimeException e) {
        return new Step<>(
                new RemoteOutcome.Unknown<>(
                        policy.retryAfter(), "another holder took the claim over, and reading it failed: " + e),
                Settled.LOST_FENCE);
    }

    /** What the claim says now, from the row read after this holder lost it: InProgress while none or in flight. */
    private RemoteOutcome<T> now(Intent<R> intent, @Nullable ClaimRow row) {
        return row == null ? new Outcome.InProgress<>(policy.retryAfter()) : answer(intent.scope(), intent.key(), row);
    }

    /** The answer a live row gives: its outcome, NeedsReconciliation, or InProgress while in flight. */
    private RemoteOutcome<T> answer(Scope scope, IdempotencyKey key, ClaimRow row) {
        if (row.state() == ClaimState.NEEDS_RECONCILIATION) {
            // the time it was handed over (NeedsReconciliation would throw the same without it)
            return new RemoteOutcome.NeedsReconciliation<>(Objects.requireNonNull(row.completedAt(), "since"));
        }
        Outcome<T> settled = results.settled(scope, key, row);
        return settled != null ? settled : new Outcome.InProgress<>(policy.retryAfter());
    }

    // ------------------------------------------------------------------ phase 1 helpers

    /** The local writes before the call; a Rejection is answered by recording it, anything else propagates. */
    private void before(Connection c, Remote.Holding<R, T> holding, Intent<R> intent) {
        try {
            local(c, tx -> holding.before(tx, intent), intent.scope(), intent.key(), true);
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

    private @Nullable RemoteOutcome<T> recordRefusalBeforeCall(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, Failure failure) {
        Instant at = inTransaction(
                scope,
                key,
                c -> sql.fail(
                        c,
                        scope,
                        key,
                        fingerprint.bytes(),
                        FailureEncoding.encode(failure),
                        policy.ttl().toMillis(),
                        effect),
                false);
        return at == null ? null : new Outcome.Rejected<>(failure, at, false);
    }

    /**
     * Runs local writes ({@link Remote.Holding#before}, {@link Remote#after}, {@link Remote#refused}) on
     * {@code c}'s open transaction through a guarded {@code tx}: one that tries to end that
     * transaction is refused ({@link WorkEndedTransactionException}), whatever it returned or threw,
     * so the claim never commits apart from them.
     */
    private void local(Connection c, LocalWrites writes, Scope scope, IdempotencyKey key, boolean openBefore) {
        WorkGuard guard = new WorkGuard(c, openBefore);
        try {
            writes.write(guard.context(configuration));
        } catch (RuntimeException e) {
            WorkEndedTransactionException refused = guard.refusal(scope, key, e);
            throw refused != null ? refused : e;
        } catch (Exception e) {
            WorkEndedTransactionException refused = guard.refusal(scope, key, e);
            throw refused != null ? refused : new WorkFailedException(scope, key, e);
        }
        guard.check(scope, key);
    }

    @FunctionalInterface
    private interface SqlUnit<V extends @Nullable Object> {
        V apply(Connection connection) throws SQLException;
    }

    /**
     * Runs {@code unit} in a transaction of its own on a connection of the configuration (released
     * after: no connection is held across the remote call), again after a serialization failure or
     * deadlock. {@code first} decides ownership (refused inside a caller's transaction).
     */
    private <V extends @Nullable Object> V inTransaction(
            @Nullable Scope scope, @Nullable IdempotencyKey key, SqlUnit<V> unit, boolean first) {
        // detected only for the first unit, which decides ownership
        TransactionOwnership.@Nullable Detected detected = first ? ownership.detect(configuration) : null;
        try {
            return onConnection(scope, key, unit, detected);
        } catch (RuntimeException e) {
            // a COMMIT committed on this server only (SqlStates.requireReplicated), or maybe not at all
            // (the connection was lost with it in flight): the remote is not called on a claim that may
            // not be there or a failover could lose, nor is an answer given as recorded; a retry replays
            // what is recorded, or takes an in-flight claim over once its lease runs out
            throw scope != null && key != null ? SqlStates.commitUnknownOr(scope, key, e) : e;
        }
    }

    private <V extends @Nullable Object> V onConnection(
            @Nullable Scope scope,
            @Nullable IdempotencyKey key,
            SqlUnit<V> unit,
            TransactionOwnership.@Nullable Detected detected) {
        return Jdbc.onConnection(configuration, connection -> {
            serverCheck.check(connection);
            if (detected != null) {
                ownership.decide(configuration, detected, connection, scope, key);
            }
            Function<Boundary, V> attempt = boundary -> {
                try {
                    V v = unit.apply(connection);
                    Jdbc.commit(connection); // none is sent after one that went with a statement
                    return v;
                } catch (SQLException e) {
                    throw SqlStates.storeFailure("the external effect's statement failed", e, sql.schema());
                }
            };
            return Units.retrying(connection, policy, scope, key, attempt);
        });
    }

    // ------------------------------------------------------------------ intents

    private Intent<R> intent(Scope scope, IdempotencyKey key, @Nullable R request, long fence, Instant claimedAt) {
        return new Intent<>(scope, key, downstreamKey(scope, key, claimedAt), request, fence);
    }

    private String downstreamKey(Scope scope, IdempotencyKey key, Instant claimedAt) {
        return Digests.downstreamKey(effect, scope.value(), key.value(), claimedAt);
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
