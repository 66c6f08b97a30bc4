package io.github.idemtx.jooq;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.internal.flow.Timings;
import io.github.idemtx.jooq.internal.flow.effect.Absent;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow;
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
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
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
 * retry after the lease, or the effect's {@link #recovery()}, takes it over with a new token and first asks
 * {@link Remote#lookup}: <b>found</b> is recorded; <b>absent</b> sends again with the same
 * downstream key only where the remote promises read-after-write ({@link Builder#readAfterWrite});
 * <b>unknown</b> is looked up again on the schedule (1, 2, 4 minutes by default; the recoverer
 * counts every unanswered attempt, a lookup or a resend), after which the claim needs
 * reconciliation ({@link RemoteOutcome.NeedsReconciliation}) until an operator records it
 * ({@link ClaimAdmin#resolveApplied}, {@link ClaimAdmin#resolveRefused}). A holder whose lease was taken over can no
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
 * AutoCloseable recovering = charges.recovery().schedule(Duration.ofSeconds(10), 100, pass -> {}); // close on shutdown
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

    /**
     * The shortest pause between the scheduled recoverer's passes: 1 millisecond.
     *
     * @deprecated since 1.0, moved: {@link EffectRecovery#SHORTEST_INTERVAL}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public static final Duration SHORTEST_RECOVERY_INTERVAL = EffectRecovery.SHORTEST_INTERVAL;

    /**
     * The longest pause between the scheduled recoverer's passes: 1 day.
     *
     * @deprecated since 1.0, moved: {@link EffectRecovery#LONGEST_INTERVAL}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public static final Duration LONGEST_RECOVERY_INTERVAL = EffectRecovery.LONGEST_INTERVAL;

    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_.-]{0,63}");

    private final String name;
    private final @Nullable ClaimPartitions partitions;
    private final EffectFlow<R, T> flow;
    private final Listeners listeners;
    private final EffectRecovery<R> recovery;
    private final @Nullable StatementReconciliation<R, T> statements;

    private ExternalEffect(Builder<R, T> b) {
        this.name = b.name;
        this.partitions = b.partitions;
        this.listeners = new Listeners(b.listeners);
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
                RemoteWithClaim.of(b.remote), // local writes may add outbox messages of the claim
                b.lease,
                b.lookupSchedule,
                b.readAfterWrite ? Absent.NOT_APPLIED : Absent.UNKNOWN,
                b.statement,
                listeners);
        this.recovery = new EffectRecovery<>(b.name, flow);
        this.statements = b.statement == null ? null : new StatementReconciliation<>(b.name, flow);
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
     * {@return the recovery of this effect's claims whose outcome is unknown: the recovery pass, its
     * schedule and the listings of unsettled claims}; one per effect, thread-safe. Recording what
     * the remote did with a claim that needs reconciliation is an operator's action:
     * {@link ClaimAdmin#resolveApplied(ExternalEffect, Scope, IdempotencyKey, Object, ClaimAdmin.Note)},
     * {@link ClaimAdmin#resolveRefused}.
     */
    public EffectRecovery<R> recovery() {
        return recovery;
    }

    /**
     * {@return the reconciliation of this effect's claims with the remote's statements}: statements
     * applied, the claims awaiting one, the flagged lines and an operator's handling of them; one per
     * effect, thread-safe.
     *
     * @throws IllegalStateException if the effect is not {@link Builder#settledByStatement settled by
     *     statement}
     */
    public StatementReconciliation<R, T> statements() {
        if (statements == null) {
            throw new IllegalStateException("the effect " + name + " is not settled by statement:"
                    + " build it with settledByStatement(...) to reconcile it with statements");
        }
        return statements;
    }

    /**
     * One recovery pass.
     *
     * @param limit from 1 to 10,000
     * @return how the claims taken over ended
     * @deprecated since 1.0, moved: {@code recovery().recover(limit)}, which counts by
     *     {@link EffectRecovery.Ending}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public Recovery recover(int limit) {
        return Recovery.of(recovery.recover(limit));
    }

    /**
     * One recovery pass that a scheduler can stop.
     *
     * @param limit from 1 to 10,000
     * @param stop asked before each claim; true stops the pass
     * @return how the claims taken over ended
     * @deprecated since 1.0, moved: {@code recovery().recover(limit, stop)}, which counts by
     *     {@link EffectRecovery.Ending}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public Recovery recover(int limit, BooleanSupplier stop) {
        return Recovery.of(recovery.recover(limit, stop));
    }

    /**
     * Runs recovery passes on a schedule.
     *
     * @param every from 1 ms to 1 day
     * @param limit claims per pass, from 1 to 10,000
     * @param onPass told of each pass that took any claim over; may be null
     * @return the handle that stops the recoverer
     * @deprecated since 1.0, moved: {@code recovery().schedule(every, limit, onPass)}, whose passes
     *     count by {@link EffectRecovery.Ending}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public AutoCloseable scheduleRecovery(Duration every, int limit, @Nullable Consumer<Recovery> onPass) {
        return recovery.schedule(every, limit, onPass == null ? null : pass -> onPass.accept(Recovery.of(pass)));
    }

    /**
     * {@return claims of this effect that wait for an operator}
     *
     * @param limit from 1 to 10,000
     * @deprecated since 1.0, moved: {@code recovery().needingReconciliation(limit)}; it will be
     *     removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public List<EffectRecovery.Unsettled<R>> needingReconciliation(int limit) {
        return recovery.needingReconciliation(limit);
    }

    /**
     * {@return claims of this effect in flight now}
     *
     * @param limit from 1 to 10,000
     * @deprecated since 1.0, moved: {@code recovery().inFlight(limit)}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public List<EffectRecovery.Unsettled<R>> inFlight(int limit) {
        return recovery.inFlight(limit);
    }

    /**
     * What a recovery pass did, by how each claim it took over ended, named in lower case.
     *
     * @param counts how many claims ended each way ({@link EffectRecovery.Ending#tag()}); ways that
     *     did not occur are absent
     * @deprecated since 1.0, replaced by {@link EffectRecovery.Pass}, which counts by
     *     {@link EffectRecovery.Ending}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public record Recovery(Map<String, Integer> counts) {
        /**
         * Copies {@code counts}.
         *
         * @throws NullPointerException if {@code counts} or one of its keys or values is null
         */
        public Recovery {
            counts = Map.copyOf(counts);
        }

        static Recovery of(EffectRecovery.Pass pass) {
            Map<String, Integer> counts = new TreeMap<>();
            pass.counts().forEach((how, n) -> counts.put(how.tag(), n));
            return new Recovery(counts);
        }

        /** {@return how many claims the pass took over} */
        public int total() {
            return counts.values().stream().mapToInt(Integer::intValue).sum();
        }

        /**
         * {@return how many claims ended {@code how}; 0 for a way that did not occur}
         *
         * @param how a way's {@link EffectRecovery.Ending#tag()}, such as {@code "found"}
         */
        public int count(String how) {
            return counts.getOrDefault(how, 0);
        }
    }

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
        private @Nullable StatementSettlement<R, T> statement;
        private final List<TransactionDetector> detectors = new ArrayList<>();
        private final List<IdempotencyListener<?>> listeners = new ArrayList<>();

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
         * Settles the effect by the remote's statement, for a remote that takes no idempotency key and
         * answers no lookup ({@link StatementSettlement}): each send is marked first, {@link
         * Remote#lookup} is never called, and a claim sent without a definite reply is settled by
         * {@link ExternalEffect#statements()}, never by time. The remote must send {@link
         * Remote.Intent#downstreamKey()} as the payment's reference. The lookup schedule then paces
         * only the recoverer's retries of sends that failed before they went out. Default: none, the
         * remote deduplicates by key and answers lookups.
         *
         * @param settlement the settlement's lag, amounts, result and policy for absent claims
         * @return this builder
         * @throws NullPointerException if {@code settlement} is null
         */
        public Builder<R, T> settledByStatement(StatementSettlement<R, T> settlement) {
            this.statement = Objects.requireNonNull(settlement, "settlement must not be null");
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
         * @param listener the listener; see {@link IdempotencyListener} for its contract
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder<R, T> listener(IdempotencyListener<?> listener) {
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
         *     {@link #partitions}' after them, or {@link #readAfterWrite} is set for an effect
         *     {@link #settledByStatement settled by statement}
         */
        public ExternalEffect<R, T> build() {
            PartitionsSchema.requireSame(partitions, schema);
            if (statement != null && readAfterWrite) {
                throw new IllegalStateException("readAfterWrite(true) describes a remote's lookups, and an effect"
                        + " settled by statement has none: drop one of the two");
            }
            return new ExternalEffect<>(this);
        }
    }
}
