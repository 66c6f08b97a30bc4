package io.github.idemtx.jooq;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.internal.flow.Timings;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.ClaimTable;
import io.github.idemtx.jooq.internal.store.Digests;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import io.github.idemtx.jooq.internal.tx.TransactionOwnership;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

/**
 * Exactly-once across a call to a remote system outside the database (a payment provider), on the
 * claim table of {@link IdempotentTransaction}. No transaction can hold the claim and the remote
 * effect together, so each call runs in phases:
 *
 * <ol>
 *   <li>the claim is committed <b>in flight</b>, with a lease and a fencing token, together with
 *       {@link Remote.Holding#before} (a hold on the funds);
 *   <li>{@link Remote#call} runs outside any transaction, with the intent's downstream key (the
 *       remote deduplicates by it) and a deadline inside the lease;
 *   <li>its answer is recorded only if the token is still the claim's, together with
 *       {@link Remote#after} (the posting) or, for a definite refusal, {@link Remote#refused}
 *       (releasing the hold): a refusal is a {@code Rejected} outcome, replayed like any other.
 * </ol>
 *
 * <p>When the answer does not say whether the remote applied the request (a timeout, a 5xx), the
 * outcome is {@link RemoteOutcome.Unknown}: the claim stays in flight, never released by time. A
 * retry after the lease, or {@link #recover}, takes it over with a new token and first asks
 * {@link Remote#lookup}: <b>found</b> is recorded; <b>absent</b> sends again with the same
 * downstream key only where the remote promises read-after-write ({@link Builder#readAfterWrite});
 * <b>unknown</b> is looked up again on the schedule (1, 2, 4 minutes by default; the recoverer
 * counts every unanswered attempt, a lookup or a resend), after which the claim needs
 * reconciliation ({@link RemoteOutcome.NeedsReconciliation}) until an operator records it
 * ({@link #resolveApplied}, {@link #resolveRefused}). A holder whose lease was taken over can no
 * longer renew or release the claim (fencing); a definite answer it still brings back is recorded
 * while the claim is unsettled, and otherwise it learns the claim's outcome. A duplicate of a
 * claim in flight, or of one still being claimed (its {@link Remote.Holding#before} running), waits up to
 * the policy's {@code duplicateWait}, then gets {@code InProgress}.
 *
 * <pre>{@code
 * ExternalEffect<ChargeRequest, Charge> charges = ExternalEffect.builder(dsl, "charge",
 *                 ResultCodec.json(ChargeRequest.class), ResultCodec.json(Charge.class), new Remote<>() {
 *                     @Override
 *                     public Remote.Reply<Charge> call(Remote.Intent<ChargeRequest> intent, Instant deadline)
 *                             throws Exception {
 *                         return provider.charge(intent.request(), intent.downstreamKey(), deadline);
 *                     }
 *
 *                     @Override
 *                     public Remote.Lookup<Charge> lookup(Remote.Intent<ChargeRequest> intent) throws Exception {
 *                         return provider.find(intent.downstreamKey());
 *                     }
 *                 })
 *         .build();
 * AutoCloseable recovery = charges.scheduleRecovery(Duration.ofSeconds(10), 100, pass -> {}); // close on shutdown
 *
 * RemoteOutcome<Charge> outcome = charges.run(scope, key, fingerprint, request); // outside any transaction
 * }</pre>
 *
 * <p>Every call owns its transactions; inside a caller's transaction (a jOOQ {@code transaction},
 * Spring's {@code @Transactional}) it is refused with
 * {@link io.github.idemtx.core.TransactionOwnershipException}: call it outside one. Instances are
 * immutable and thread-safe; build each effect once and share it.
 *
 * <h2>Names, keys and the claim table</h2>
 * Apply the claim table's migrations first ({@link io.github.idemtx.db.IdempotencySchema#migrate}),
 * as for {@link IdempotentTransaction}: without them every call throws
 * {@link io.github.idemtx.core.UnsupportedDatabaseException}. The effect's {@link #name()} must be
 * unique among the effects on one claim table: it is stored with each claim, starts the downstream
 * key, and each effect's recoverer takes over only the claims of its own name, so two effects of one
 * name with different remotes would look up and resend each other's calls. The keys are those of
 * {@link IdempotentTransaction}, in the same table: one ({@code scope}, {@code key}) is one intent,
 * whichever front door claims it. The same key on another effect, or on an
 * {@code IdempotentTransaction}, answers {@link io.github.idemtx.core.Outcome.FingerprintMismatch} (and the other
 * door answers {@code FingerprintMismatch} too): give each intent its own key, e.g. derived with the
 * keys module.
 *
 * @param <R> the request type, stored with the claim so a recoverer can look it up or resend it
 * @param <T> the result type
 */
public final class ExternalEffect<R, T> {

    /** A lease long enough for a payment provider's slowest answer. */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);

    /** Lookups of an unknown outcome after 1, 2 and 4 minutes, then reconciliation. */
    public static final List<Duration> DEFAULT_LOOKUP_SCHEDULE =
            List.of(Duration.ofMinutes(1), Duration.ofMinutes(2), Duration.ofMinutes(4));

    /** The longest pause {@link Builder#lookupSchedule} accepts: 30 days. */
    public static final Duration LONGEST_LOOKUP_PAUSE = Duration.ofDays(30);

    /** The shortest pause between the scheduled recoverer's passes: 1 millisecond. */
    public static final Duration SHORTEST_RECOVERY_INTERVAL = Duration.ofMillis(1);

    /** The longest pause between the scheduled recoverer's passes: 1 day. */
    public static final Duration LONGEST_RECOVERY_INTERVAL = Duration.ofDays(1);

    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_.-]{0,63}");

    private final String name;
    private final @Nullable ClaimPartitions partitions;
    private final EffectFlow<R, T> flow;
    private final io.github.idemtx.core.internal.Listeners listeners;

    private ExternalEffect(Builder<R, T> b) {
        this.name = b.name;
        this.partitions = b.partitions;
        this.listeners = new io.github.idemtx.core.internal.Listeners(b.listeners);
        this.flow = new EffectFlow<>(
                b.dsl.configuration(),
                b.policy,
                TransactionOwnership.ownOnly(
                        b.detectors,
                        "an external effect commits its claim before the remote call"
                                + " and its result after it, in transactions of its own,",
                        "call it outside the transaction"),
                new EffectStatements(new ClaimTable(b.schema)),
                b.name,
                b.requests,
                b.results,
                b.remote,
                b.lease,
                b.lookupSchedule,
                b.readAfterWrite,
                listeners);
    }

    /**
     * A builder.
     *
     * @param <R> the request type
     * @param <T> the result type
     * @param dsl where the claim table is; each call takes connections from it for transactions of its own
     * @param name the effect's name (e.g. {@code charge}): lower-case letters, digits, {@code _ . -};
     *     the downstream key starts with it, and each effect's recoverer takes only its own claims
     * @param requests how requests are stored with the in-flight claim
     * @param results how results are stored
     * @param remote the remote system and the local writes around it
     * @return a builder with the default policy, schema, lease and lookup schedule
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code name} is not 1 to 64 such characters starting with a letter
     */
    public static <R, T> Builder<R, T> builder(
            DSLContext dsl, String name, ResultCodec<R> requests, ResultCodec<T> results, Remote<R, T> remote) {
        return new Builder<>(dsl, name, requests, results, remote);
    }

    /** The engine under this effect, for {@link ClaimAdmin}: not API. */
    EffectFlow<R, T> flow() {
        return flow;
    }

    /** {@return the effect's name} */
    public String name() {
        return name;
    }

    /**
     * {@return the downstream key of effect {@code name}'s claim of ({@code scope}, {@code key}) that
     * began at {@code claimedAt} (the row's {@code created_at})}: what {@link Remote.Intent#downstreamKey()}
     * carried to the remote, for matching the claim table with the remote's own records (an
     * operator's reconciliation, an audit). {@code name:} and the base64url SHA-256 of scope, key and
     * {@code created_at} in epoch microseconds, separated by 0 bytes.
     *
     * @param name the effect's name
     * @param scope the claim's scope
     * @param key the claim's key
     * @param claimedAt when the claim began, to the microsecond
     * @throws NullPointerException if an argument is null
     */
    public static String downstreamKey(String name, Scope scope, IdempotencyKey key, Instant claimedAt) {
        Objects.requireNonNull(name, "name must not be null");
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(claimedAt, "claimedAt must not be null");
        return Digests.downstreamKey(name, scope.value(), key.value(), claimedAt);
    }

    /**
     * Runs the request once for ({@code scope}, {@code key}) through the phases above, or answers
     * what the claim already says.
     *
     * @param scope whose key it is
     * @param key the client's key
     * @param fingerprint the request's fingerprint; another one under the same key is a {@code FingerprintMismatch}
     * @param request what to send; stored with the in-flight claim
     * @return never null; {@code Executed}, {@code Replayed} and {@code Rejected} are committed
     * @throws NullPointerException if an argument is null, before any SQL runs
     * @throws IllegalArgumentException with {@link Builder#partitions}, if the key carries no day or
     *     one outside the days the table accepts; before any SQL runs
     * @throws io.github.idemtx.core.TransactionOwnershipException inside a caller's transaction
     * @throws io.github.idemtx.core.CommitOutcomeUnknownException when the connection was lost while a
     *     COMMIT before the remote call (the claim's, a takeover's, a lease renewal's, a refusal's) was
     *     in flight (a record's is sent again on another connection first), or a COMMIT of the claim
     *     or of the record returned before the synchronous standby confirmed it (a cancel request
     *     ended its wait): the remote is not called on such a claim; a retry with the same key replays
     *     what is recorded, or takes an in-flight claim over once its lease runs out and looks it up
     *     first
     * @throws io.github.idemtx.core.UnsupportedDatabaseException if the server is older than
     *     PostgreSQL 14, or the claim table is missing or older than this version (apply the
     *     migrations first); nothing was written and the remote was not called
     * @throws io.github.idemtx.core.WorkEndedTransactionException if a local write
     *     ({@link Remote.Holding#before}, {@link Remote#after}, {@link Remote#refused}) ended the
     *     transaction it was handed: before the call nothing is kept and the remote is not called;
     *     after it, the answer is recorded alone and an error logged
     * @throws io.github.idemtx.core.WorkFailedException if a local write threw a checked exception
     *     (other than a {@code Rejection}), wrapped once
     * @throws io.github.idemtx.core.ResultTooLargeException if the encoded request or result exceeds
     *     the policy's limit
     * @throws io.github.idemtx.core.IdempotencyException if a codec could not encode the request or
     *     result or decode a stored one, or the thread was interrupted while waiting for a duplicate;
     *     every exception above that the library makes is one of its subclasses, carrying scope and key
     * @throws io.github.idemtx.core.RetriesExhaustedException if serialization failures or deadlocks
     *     of the local transactions used up the policy's attempts
     * @throws org.jooq.exception.DataAccessException jOOQ's, if the database fails otherwise (a
     *     connection lost before a commit was sent, a statement timeout): what the claim shows is
     *     the truth, and a retry with the same key answers from it (an in-flight claim is looked up
     *     once its lease runs out)
     * @throws RuntimeException what {@link Remote.Holding#before} threw (other than a Rejection): nothing is kept
     */
    public RemoteOutcome<T> run(Scope scope, IdempotencyKey key, Fingerprint fingerprint, R request) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(fingerprint, "fingerprint must not be null");
        Objects.requireNonNull(request, "request must not be null");
        if (partitions != null) {
            partitions.requireAccepted(key);
        }
        Timings timings = Timings.of(listeners);
        timings.attempt(false); // the event carries the total only
        return timings.observe(listeners, "effect:" + name, scope, () -> flow.run(scope, key, fingerprint, request));
    }

    /**
     * One recovery pass: takes over up to {@code limit} in-flight claims of this effect whose lease
     * has passed and whose next lookup is due ({@code FOR UPDATE SKIP LOCKED}, so passes and live
     * calls run side by side), and settles each as described above. Call it on a schedule.
     *
     * @param limit from 1 to 10,000
     * @return how the claims taken over ended
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public Recovery recover(int limit) {
        return recover(limit, () -> false);
    }

    /**
     * One recovery pass, as {@link #recover(int)}, that a scheduler can stop: {@code stop} is asked
     * before each claim of the batch is settled, and once it answers true the claims not yet settled
     * are handed back at once (their lease ends, counted {@code handed_back}) for the next recoverer.
     * The claim being settled when it turns true is finished (its remote call ends within the lease).
     *
     * @param limit from 1 to 10,000
     * @param stop asked before each claim; true stops the pass
     * @return how the claims taken over ended
     * @throws NullPointerException if {@code stop} is null
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public Recovery recover(int limit, java.util.function.BooleanSupplier stop) {
        Objects.requireNonNull(stop, "stop must not be null");
        checkLimit(limit);
        Map<String, Integer> counts = new TreeMap<>();
        for (EffectFlow.Settled s : flow.recover(limit, stop)) {
            counts.merge(s.name().toLowerCase(java.util.Locale.ROOT), 1, Integer::sum);
        }
        return new Recovery(counts);
    }

    /**
     * Runs {@link #recover}{@code (limit)} every {@code every} on a daemon thread of its own, again
     * at once while a pass takes over {@code limit} claims (each claim it could not settle is counted
     * and due again only on the lookup schedule, so this catches up and never spins); a failed pass
     * is tried again at the next tick. Close the returned handle to stop it: it waits only for the
     * claim being settled (a remote call ends within the lease), the rest of a running pass's batch
     * is handed back ({@code handed_back}) for the next recoverer.
     *
     * @param every from 1 ms to 1 day
     * @param limit claims per pass, from 1 to 10,000
     * @param onPass told of each pass that took any claim over (for logs and metrics); may be null
     * @return the handle that stops the recoverer; its {@code close()} waits up to a minute
     * @throws NullPointerException if {@code every} is null
     * @throws IllegalArgumentException if {@code every} or {@code limit} is out of range
     */
    public AutoCloseable scheduleRecovery(
            Duration every, int limit, java.util.function.@Nullable Consumer<Recovery> onPass) {
        Objects.requireNonNull(every, "every must not be null");
        if (every.compareTo(SHORTEST_RECOVERY_INTERVAL) < 0 || every.compareTo(LONGEST_RECOVERY_INTERVAL) > 0) {
            throw new IllegalArgumentException("every must be between 1 ms and 1 day, was " + every);
        }
        checkLimit(limit);
        java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.ScheduledExecutorService scheduler =
                java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread t = new Thread(r, "idemtx-recover-" + name);
                    t.setDaemon(true);
                    return t;
                });
        // the task catches all but a VirtualMachineError, so its Future has nothing to report;
        // the handle below stops it through the scheduler
        java.util.concurrent.Future<?> unused = scheduler.scheduleWithFixedDelay(
                () -> {
                    try {
                        Recovery pass;
                        do {
                            pass = recover(limit, closed::get);
                            if (onPass != null && pass.total() > 0) {
                                onPass.accept(pass);
                            }
                            // again at once only while whole batches were taken: each claim of one is settled,
                            // or counted and scheduled later, or held by someone else, so a next batch holds
                            // other claims; failures wait for the next tick
                        } while (pass.total() == limit && pass.count("failed") == 0 && !closed.get());
                    } catch (VirtualMachineError e) {
                        throw e;
                    } catch (Throwable e) {
                        // a scheduled task that throws is never run again: log and go on
                        System.getLogger("io.github.idemtx")
                                .log(
                                        System.Logger.Level.WARNING,
                                        "idemtx: a recovery pass of " + name + " failed; the next tick tries again",
                                        e);
                    }
                },
                0,
                every.toMillis(),
                java.util.concurrent.TimeUnit.MILLISECONDS);
        return () -> {
            closed.set(true);
            scheduler.shutdown();
            if (!scheduler.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES)) {
                scheduler.shutdownNow();
            }
        };
    }

    private static void checkLimit(int limit) {
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
    }

    /**
     * {@return claims of this effect that wait for an operator, at most {@code limit}, in key order}
     *
     * @param limit from 1 to 10,000
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public List<Unsettled<R>> needingReconciliation(int limit) {
        return unsettled(ClaimState.NEEDS_RECONCILIATION, limit);
    }

    /**
     * {@return claims of this effect in flight now (a call running, or an unknown outcome waiting for
     * its lookup), at most {@code limit}, in key order}
     *
     * @param limit from 1 to 10,000
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public List<Unsettled<R>> inFlight(int limit) {
        return unsettled(ClaimState.IN_FLIGHT, limit);
    }

    private List<Unsettled<R>> unsettled(ClaimState state, int limit) {
        checkLimit(limit);
        List<Unsettled<R>> out = new ArrayList<>();
        for (EffectStatements.Stuck s : flow.unsettled(state, limit)) {
            // a row whose request no longer decodes is listed as such, not an error for the whole list
            EffectFlow.DecodedRequest<R> request = flow.decodeRequest(s.scope(), s.key(), s.request());
            out.add(new Unsettled<>(
                    s.scope(),
                    s.key(),
                    request.request(),
                    s.fence(),
                    s.lookups(),
                    state == ClaimState.NEEDS_RECONCILIATION ? s.since() : null,
                    s.nextLookupAt(),
                    request.problem()));
        }
        return out;
    }

    /**
     * An operator's finding for a claim that needs reconciliation: the remote applied it, with
     * {@code result}; recorded with {@link Remote#after} (whose intent's request is null when the
     * stored one no longer decodes, see {@link Unsettled#undecodable}). Retries then replay it. The
     * stored request is cleared, as a holder's record clears it.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param result what the remote applied; may be null
     * @return false if the claim does not need reconciliation (nothing changed)
     * @throws NullPointerException if {@code scope} or {@code key} is null
     * @throws RuntimeException what {@link Remote#after} threw, a {@link io.github.idemtx.core.Rejection}
     *     as it is, or {@link org.jooq.exception.DataAccessException} when the database failed: nothing
     *     is recorded, the claim still needs reconciliation, and the resolution can be tried again; or
     *     {@link io.github.idemtx.core.CommitOutcomeUnknownException} when its COMMIT returned before
     *     the synchronous standby confirmed it (recorded on the primary, where it is no longer
     *     unsettled), or the connection was lost while it was in flight (resolving again returns
     *     false if it was recorded)
     * @see ClaimAdmin#resolveApplied ClaimAdmin, which also records who resolved it and why
     */
    public boolean resolveApplied(Scope scope, IdempotencyKey key, @Nullable T result) {
        return flow.resolve(
                Objects.requireNonNull(scope, "scope"), Objects.requireNonNull(key, "key"), result, null, null);
    }

    /**
     * An operator's finding for a claim that needs reconciliation: the remote did not apply it, for
     * {@code failure}; recorded with {@link Remote#refused} (its intent's request null when the
     * stored one no longer decodes). Retries then get it as {@code Rejected}. The stored request is
     * cleared.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param failure why the remote did not apply it
     * @return false if the claim does not need reconciliation (nothing changed)
     * @throws NullPointerException if an argument is null
     * @throws RuntimeException what {@link Remote#refused} threw, a {@link io.github.idemtx.core.Rejection}
     *     as it is, or {@link org.jooq.exception.DataAccessException} when the database failed: nothing
     *     is recorded, the claim still needs reconciliation, and the resolution can be tried again; or
     *     {@link io.github.idemtx.core.CommitOutcomeUnknownException} when its COMMIT returned before
     *     the synchronous standby confirmed it (recorded on the primary, where it is no longer
     *     unsettled), or the connection was lost while it was in flight (resolving again returns
     *     false if it was recorded)
     * @see ClaimAdmin#resolveRefused ClaimAdmin, which also records who resolved it and why
     */
    public boolean resolveRefused(Scope scope, IdempotencyKey key, Failure failure) {
        return flow.resolve(
                Objects.requireNonNull(scope, "scope"),
                Objects.requireNonNull(key, "key"),
                null,
                Objects.requireNonNull(failure, "failure"),
                null);
    }

    /**
     * What a recovery pass did, by how each claim it took over ended: {@code found}, {@code refused},
     * {@code resent}, {@code unknown} (looked up again later), {@code reconciliation} (handed to an
     * operator), {@code lost_fence} (another holder settled it), {@code failed} (an error; tried again later),
     * {@code handed_back} (not settled: the scheduled recoverer was closed; its lease ended at once).
     *
     * @param counts how many claims ended each way; ways that did not occur are absent
     */
    public record Recovery(Map<String, Integer> counts) {
        /**
         * Copies {@code counts}.
         *
         * @throws NullPointerException if {@code counts} or one of its keys or values is null
         */
        public Recovery {
            counts = Map.copyOf(counts);
        }

        /** {@return how many claims the pass took over} */
        public int total() {
            return counts.values().stream().mapToInt(Integer::intValue).sum();
        }

        /**
         * {@return how many claims ended {@code how}; 0 for a way that did not occur}
         *
         * @param how one of the ways named above, such as {@code "found"}
         */
        public int count(String how) {
            return counts.getOrDefault(how, 0);
        }
    }

    /**
     * A claim that is not settled.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param request the stored request; null when it no longer decodes (then {@code undecodable} says why)
     * @param fence the current holder's fencing token
     * @param lookups how many attempts on its unknown outcome went unanswered
     * @param since when it was handed to reconciliation (null while in flight)
     * @param nextLookupAt when the recoverer looks it up next (null: as soon as its lease passes)
     * @param undecodable null, or why the stored request no longer decodes (its class changed in a
     *     deploy): the recoverer still looks it up by its downstream key, never sends it again, and an
     *     operator can resolve it
     * @param <R> the request type
     */
    public record Unsettled<R>(
            Scope scope,
            IdempotencyKey key,
            @Nullable R request,
            long fence,
            int lookups,
            @Nullable Instant since,
            @Nullable Instant nextLookupAt,
            @Nullable String undecodable) {}

    /**
     * Builds an {@link ExternalEffect}. Not thread-safe; each setter validates at once.
     *
     * @param <R> the request type
     * @param <T> the result type
     */
    public static final class Builder<R, T> {
        private final DSLContext dsl;
        private final String name;
        private final ResultCodec<R> requests;
        private final ResultCodec<T> results;
        private final Remote<R, T> remote;
        private IdempotencyPolicy policy = IdempotencyPolicy.defaults();
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;
        private @Nullable ClaimPartitions partitions;
        private Duration lease = DEFAULT_LEASE;
        private List<Duration> lookupSchedule = DEFAULT_LOOKUP_SCHEDULE;
        private boolean readAfterWrite;
        private final List<TransactionDetector> detectors = new ArrayList<>();
        private final List<io.github.idemtx.core.IdempotencyListener<?>> listeners = new ArrayList<>();

        private Builder(
                DSLContext dsl, String name, ResultCodec<R> requests, ResultCodec<T> results, Remote<R, T> remote) {
            this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
            Objects.requireNonNull(name, "name must not be null");
            if (!NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("name must be 1 to 64 lower-case letters, digits, '_', '.' or '-',"
                        + " starting with a letter, was '" + name + "'");
            }
            this.name = name;
            this.requests = Objects.requireNonNull(requests, "requests must not be null");
            this.results = Objects.requireNonNull(results, "results must not be null");
            this.remote = Objects.requireNonNull(remote, "remote must not be null");
        }

        /**
         * Sets the TTL of settled claims, the duplicate wait, the retry hint, the attempts on
         * serialization failures and the largest result; default {@link IdempotencyPolicy#defaults()}.
         *
         * @param policy the policy
         * @return this builder
         * @throws NullPointerException if {@code policy} is null
         */
        public Builder<R, T> policy(IdempotencyPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy must not be null");
            return this;
        }

        /**
         * Sets the claim table's schema; default {@value IdempotencySchema#DEFAULT_SCHEMA}.
         *
         * @param schema a plain PostgreSQL identifier
         * @return this builder
         * @throws NullPointerException if {@code schema} is null
         * @throws IllegalArgumentException if it is not a plain identifier
         */
        public Builder<R, T> schema(String schema) {
            this.schema = IdempotencySchema.requireSchemaName(schema);
            return this;
        }

        /**
         * How long a holder may work on a claim before a duplicate or the recoverer may take it over;
         * the remote call's deadline is four fifths of it.
         *
         * @param lease from 10 ms to 1 day; default 30 s
         * @return this builder
         * @throws NullPointerException if {@code lease} is null
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder<R, T> lease(Duration lease) {
            Objects.requireNonNull(lease, "lease must not be null");
            if (lease.compareTo(Duration.ofMillis(10)) < 0 || lease.compareTo(Duration.ofDays(1)) > 0) {
                throw new IllegalArgumentException("lease must be between 10 ms and 1 day, was " + lease);
            }
            this.lease = lease;
            return this;
        }

        /**
         * The pauses between the recoverer's attempts on an unknown outcome (a lookup, or a resend
         * after absent); after the last one goes unanswered the claim needs reconciliation.
         *
         * @param schedule 0 to 20 pauses of 1 ms to 30 days ({@link #LONGEST_LOOKUP_PAUSE}); default 1, 2,
         *     4 minutes; copied
         * @return this builder
         * @throws NullPointerException if {@code schedule} is null
         * @throws IllegalArgumentException if it is too long, or a pause is null or out of range
         */
        public Builder<R, T> lookupSchedule(List<Duration> schedule) {
            Objects.requireNonNull(schedule, "schedule must not be null");
            if (schedule.size() > 20) {
                throw new IllegalArgumentException("at most 20 lookups may be scheduled, was " + schedule.size());
            }
            for (Duration d : schedule) {
                if (d == null || d.compareTo(Duration.ofMillis(1)) < 0 || d.compareTo(LONGEST_LOOKUP_PAUSE) > 0) {
                    throw new IllegalArgumentException(
                            "every pause of the lookup schedule must be between 1 ms and 30 days"
                                    + " (ExternalEffect.LONGEST_LOOKUP_PAUSE), was " + d);
                }
            }
            this.lookupSchedule = List.copyOf(schedule);
            return this;
        }

        /**
         * Whether the remote promises that a lookup sees every request it applied (read-after-write):
         * only then is <b>absent</b> taken as "not applied" and the request sent again (with the same
         * downstream key). Default false: absent counts as unknown.
         *
         * @param readAfterWrite whether the remote's lookups read its own writes
         * @return this builder
         */
        public Builder<R, T> readAfterWrite(boolean readAfterWrite) {
            this.readAfterWrite = readAfterWrite;
            return this;
        }

        /**
         * Adds a transaction detector (see {@link TransactionDetector}), used to refuse calls inside a
         * caller's transaction.
         *
         * @param detector the detector
         * @return this builder
         * @throws NullPointerException if {@code detector} is null
         */
        public Builder<R, T> detector(TransactionDetector detector) {
            detectors.add(Objects.requireNonNull(detector, "detector must not be null"));
            return this;
        }

        /**
         * Adds a listener, told of every call (operation {@code effect:<name>}; the event carries the
         * total time and the outcome, not the split by phase).
         *
         * @param listener the listener; see {@link io.github.idemtx.core.IdempotencyListener} for its contract
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder<R, T> listener(io.github.idemtx.core.IdempotencyListener<?> listener) {
            listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
            return this;
        }

        /**
         * Uses a claim table partitioned by the day its keys carry ({@link ClaimPartitions}): each
         * run first refuses a key outside the days the table accepts, with an
         * {@link IllegalArgumentException} and before any SQL runs. Also sets the {@link #schema}
         * to the partitions'. None by default: the plain table.
         *
         * @param partitions the partitions' configuration
         * @return this builder
         * @throws NullPointerException if {@code partitions} is null
         */
        public Builder<R, T> partitions(ClaimPartitions partitions) {
            this.partitions = Objects.requireNonNull(partitions, "partitions must not be null");
            this.schema = partitions.schema();
            return this;
        }

        /**
         * {@return the effect}
         *
         * @throws IllegalStateException if {@link #schema} named another schema than the
         *     {@link #partitions}' after them
         */
        public ExternalEffect<R, T> build() {
            PartitionsSchema.requireSame(partitions, schema);
            return new ExternalEffect<>(this);
        }
    }
}
