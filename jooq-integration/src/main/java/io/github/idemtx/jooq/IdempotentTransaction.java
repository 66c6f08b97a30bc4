package io.github.idemtx.jooq;

import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.ClaimOrderEvent;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.PurgeEvent;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.ResultTooLargeException;
import io.github.idemtx.core.RetriesExhaustedException;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.core.UnsupportedDatabaseException;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.core.WorkFailedException;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.internal.flow.Timings;
import io.github.idemtx.jooq.internal.flow.claim.ClaimFlow;
import io.github.idemtx.jooq.internal.flow.claim.ClaimFlow.Call;
import io.github.idemtx.jooq.internal.flow.claim.ClaimOrder;
import io.github.idemtx.jooq.internal.store.ClaimStatements;
import io.github.idemtx.jooq.internal.store.ClaimTable;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import io.github.idemtx.jooq.internal.tx.TransactionOwnership;
import io.github.idemtx.jooq.internal.tx.TransactionOwnership.Decision;
import io.github.idemtx.jooq.internal.tx.Units;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jooq.Configuration;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * Runs business work exactly once per (scope, key): the claim of the key, the work's writes and
 * the encoded result commit in one PostgreSQL transaction, or none of them does.
 *
 * <pre>{@code
 * IdempotentTransaction<Transfer> transfers =
 *         IdempotentTransaction.create(dsl, IdempotencyPolicy.defaults(), ResultCodec.json(Transfer.class));
 *
 * Outcome<Transfer> outcome = transfers.run(scope, key, fingerprint, tx -> ledger.transfer(tx, from, to, amount));
 * }</pre>
 *
 * <h2>Before the first call</h2>
 * Apply the claim table's migrations once at start-up, before any call:
 * {@link IdempotencySchema#migrate(javax.sql.DataSource, String)} (Flyway, with a history table of its
 * own, so they never collide with the application's migrations), or the Spring starter, which does it
 * by default. Without them every call throws {@link UnsupportedDatabaseException} and writes nothing.
 * Claims past {@link IdempotencyPolicy#ttl()} count as absent but stay in the table until
 * {@link #purgeExpired} deletes them: call it on a schedule.
 *
 * <h2>What {@link #run} returns</h2>
 * <ul>
 *   <li>{@link Outcome.Executed}: first call for the key; the work ran and everything committed.
 *   <li>{@link Outcome.Replayed}: the key completed earlier with the same fingerprint; the work did
 *       not run (in the opt-in {@link ClaimMode#WORK_FIRST} and {@link ClaimMode#ADAPTIVE} it may
 *       have run first and been rolled back: nothing of it committed).
 *   <li>{@link Outcome.Rejected}: the work failed deterministically, now or earlier; its writes were
 *       rolled back, the failure is recorded and replayed.
 *   <li>{@link Outcome.FingerprintMismatch}: the key was used for another request; the work did
 *       not run (or, working first, ran and was rolled back).
 *   <li>{@link Outcome.InProgress}: a concurrent call holding the key did not finish within
 *       {@link IdempotencyPolicy#duplicateWait()}; nothing committed.
 * </ul>
 * The claim row is written once, with the result, and only becomes visible to others when the work
 * commits, so nobody ever observes a half-done call. How a call claims is its {@link ClaimMode}. By
 * default ({@link ClaimMode#CLAIM_FIRST}) the key is claimed before the work runs: one statement
 * reads the key's row and takes the key's transaction-level advisory lock, so a retry of a
 * completed call replays without running the work, and a concurrent duplicate waits on that lock
 * (never on the work's row locks) and then replays the first call's result, or is answered
 * {@code InProgress} once {@link IdempotencyPolicy#duplicateWait()} runs out. Opt-in modes run the
 * work first and let the row's insert with the COMMIT be the claim ({@link ClaimMode#WORK_FIRST},
 * and {@link ClaimMode#ADAPTIVE} while the instance's calls rarely meet a taken key): one round trip
 * less, but a retry's work runs and is rolled back, and a duplicate whose work waits on the first
 * call's row locks waits as long as they are held. Any other
 * exception from the work rolls everything back, frees
 * the key and reaches the caller. Serialization failures and deadlocks re-run the whole unit, work
 * included, up to {@link IdempotencyPolicy#maxAttempts()} times with jittered backoff. A claim older
 * than {@link IdempotencyPolicy#ttl()} counts as absent and is taken over atomically.
 *
 * <h2>Who owns the transaction</h2>
 * Decided per call by the {@link TransactionMode} set on the builder (default
 * {@link TransactionMode#DETECT}) and by {@link TransactionDetector}s that ask the transaction
 * manager itself, never from the connection's transaction state alone:
 * <ul>
 *   <li><b>Own</b>: a {@code DSLContext} over a {@code DataSource} or pool, with no caller
 *       transaction open. {@code run} takes a connection, runs its own transaction and has
 *       committed it when it returns {@code Executed}, {@code Replayed} or {@code Rejected}; also on
 *       a pool whose connections have auto-commit off, and when the pool's own statements (a test
 *       query, init SQL, {@code schema}) left a transaction open on the connection it hands out:
 *       that transaction is nobody's, and is committed first. Serialization failures and deadlocks
 *       are retried here.
 *   <li><b>Joined</b>: the context of an open jOOQ {@code transaction(cfg -> ...)} (nested ones
 *       too), a {@code DSLContext} with jOOQ's {@code ThreadLocalTransactionProvider} inside one of
 *       its transactions (also as the first statement), {@code DSL.using(connection)} on a connection
 *       the caller manages with auto-commit off, or whatever a registered detector (the Spring
 *       module's) reports. {@code run} works inside a savepoint: nothing commits until the caller
 *       does, the caller's rollback undoes the claim too, the caller's transaction stays usable
 *       after every outcome and exception, and serialization failures reach the caller, whose
 *       transaction they doomed. A joined claim's TTL counts from the caller's commit.
 *   <li><b>Refused</b> with {@link TransactionOwnershipException}, before any SQL of the call and
 *       before the work, where it cannot tell (see {@link TransactionMode#DETECT}) or the stated
 *       mode contradicts what it sees, and on a read-only connection.
 * </ul>
 *
 * <p>Calling {@code run} for the same key inside that key's own work is a mistake it cannot answer
 * well: the inner call joins the same transaction, finds no claim yet (PostgreSQL's advisory locks
 * are re-entrant), runs and records; the outer call's record then fails, and the unit is retried
 * until {@link RetriesExhaustedException}. Nothing commits twice.
 *
 * <h2>Cost</h2>
 * First execution in {@link ClaimMode#CLAIM_FIRST} (the default): one statement claims the key
 * (sent with {@code BEGIN}: it reads the key's row and takes the key's advisory lock without
 * waiting), then the work's own statements, then one that inserts the completed row, sent together
 * with {@code COMMIT}: one round trip more than the work alone. Replay: the claim statement and the
 * end of the transaction; it takes no lock and writes nothing. In {@link ClaimMode#WORK_FIRST} a
 * first execution saves the claim statement's round trip, and a replay costs the work and the
 * insert, both rolled back, then that same read. The library's statements (the claim, a duplicate's wait, the record)
 * run as plain JDBC on the transaction's connection, so jOOQ {@code ExecuteListener}s of the
 * {@code DSLContext} see the work's statements but not them.
 *
 * <p>Instances are immutable and thread-safe; create one per result type and share it.
 *
 * @param <T> the type of the work's result
 */
public final class IdempotentTransaction<T> {

    /**
     * The default {@link ClaimMode}: {@link ClaimMode#CLAIM_FIRST}, which claims the key before the
     * work runs, so a retry of a completed call never runs the work and a duplicate of a call still
     * running is answered {@code InProgress} within {@link IdempotencyPolicy#duplicateWait()}. (From
     * 0.1 until 1.0 the default was {@link ClaimMode#ADAPTIVE}; see CHANGELOG.md.)
     */
    public static final ClaimMode DEFAULT_CLAIM_MODE = ClaimMode.CLAIM_FIRST;

    private final DSLContext dsl;
    private final IdempotencyPolicy policy;
    private final String schema;
    private final ClaimStatements sql;
    private final ClaimFlow<T> flow;
    private final TransactionOwnership ownership;
    private final @Nullable FailureTranslator translator;
    private final Listeners listeners;
    private final long waitNanos;
    private final ClaimMode claimMode;
    private final @Nullable ClaimPartitions partitions;
    private final Jdbc.ServerCheck serverCheck = new Jdbc.ServerCheck();

    private IdempotentTransaction(Builder<T> b) {
        this.dsl = b.dsl;
        this.policy = b.policy;
        this.schema = b.schema;
        this.sql = new ClaimStatements(new ClaimTable(b.schema));
        this.claimMode = b.claimMode;
        this.partitions = b.partitions;
        Listeners told = new Listeners(b.listeners);
        this.listeners = told;
        this.flow = new ClaimFlow<>(
                b.dsl.configuration(),
                b.policy,
                b.codec,
                sql,
                ClaimOrder.of(b.claimMode, event -> orderChanged(told, event)));
        this.ownership = new TransactionOwnership(b.mode, b.detectors);
        this.translator = b.translator != null ? b.translator : discoveredTranslator();
        this.waitNanos = policy.duplicateWait().toNanos();
    }

    /** The adaptive order changed: logged at INFO (a retry storm begins or ends) and told to the listeners. */
    private static void orderChanged(Listeners listeners, ClaimOrderEvent event) {
        ORDER_LOG.log(
                System.Logger.Level.INFO,
                () -> String.format(
                        java.util.Locale.ROOT,
                        event.claimFirst()
                                ? "idemtx: %.1f%% of recent calls found their key taken, a third above the"
                                        + " break-even of %.1f%%: calls claim the key first until it falls a third"
                                        + " under that"
                                : "idemtx: %.1f%% of recent calls found their key taken, a third under the"
                                        + " break-even of %.1f%%: the work goes first again",
                        event.takenShare() * 100,
                        event.breakEven() * 100));
        listeners.claimOrderChanged(event);
    }

    /**
     * An instance with the claim table in the {@value IdempotencySchema#DEFAULT_SCHEMA} schema and
     * {@link TransactionMode#DETECT}.
     *
     * @param dsl where connections come from; the context of an open transaction makes {@code run} join it
     * @param policy the behaviour; see {@link IdempotencyPolicy#defaults()}
     * @param codec how results are stored, e.g. {@link ResultCodec#json(Class)}
     * @param <T> the type of the work's result
     * @return the instance
     * @throws NullPointerException if an argument is null
     */
    public static <T> IdempotentTransaction<T> create(DSLContext dsl, IdempotencyPolicy policy, ResultCodec<T> codec) {
        return builder(dsl, codec).policy(policy).build();
    }

    /**
     * {@return a builder, for a claim table in another schema, a stated transaction mode or a detector}
     *
     * @param dsl where connections come from; the context of an open transaction makes {@code run} join it
     * @param codec how results are stored, e.g. {@link ResultCodec#json(Class)}
     * @param <T> the type of the work's result
     * @throws NullPointerException if an argument is null
     */
    public static <T> Builder<T> builder(DSLContext dsl, ResultCodec<T> codec) {
        return new Builder<>(dsl, codec);
    }

    /** {@return the policy this instance applies} */
    public IdempotencyPolicy policy() {
        return policy;
    }

    /** {@return the schema holding the claim table} */
    public String schema() {
        return schema;
    }

    /** {@return in which order this instance claims and works in transactions of its own} */
    public ClaimMode claimMode() {
        return claimMode;
    }

    /** {@return how this instance decides who owns the transaction} */
    public TransactionMode transactionMode() {
        return ownership.mode();
    }

    /**
     * Runs {@code work} once for ({@code scope}, {@code key}), or replays what the first call
     * recorded; see the class documentation for every outcome and for who owns the transaction.
     *
     * @param scope whose key this is (the authenticated principal), never from client input alone
     * @param key the client's idempotency key
     * @param fingerprint the request's fingerprint; a different one with the same key is a mismatch
     * @param work the business write, through the {@code tx} it is given
     * @return the outcome; never null. Owning its transaction, {@code Executed}, {@code Replayed}
     *     and {@code Rejected} mean committed; joined, they commit or vanish with the caller's transaction
     * @throws NullPointerException if an argument is null, before any SQL runs
     * @throws IllegalArgumentException with {@link Builder#partitions}, if the key carries no day or
     *     one outside the days the table accepts; before any SQL runs
     * @throws TransactionOwnershipException if it cannot tell whether to own or join the
     *     transaction, or was told something that contradicts what it sees, or the connection is
     *     read-only; before any SQL of the call runs and before the work
     * @throws UnsupportedDatabaseException if the server is older than PostgreSQL 14, or the claim
     *     table in {@link #schema()} is missing or older than this version (apply the migrations
     *     first: {@link IdempotencySchema#migrate}); nothing was committed, and every call fails so
     *     until the database is put right
     * @throws RuntimeException any unchecked exception the work threw that the policy does not call
     *     deterministic, unchanged, after a full rollback (the key is free again)
     * @throws WorkFailedException if the work threw such a checked exception, wrapped once; rolled back
     * @throws WorkEndedTransactionException if the work ended the transaction it was handed (a
     *     commit, a rollback, auto-commit switched on, a {@code COMMIT} statement): nothing is recorded
     *     for the key; {@link WorkEndedTransactionException#committedByWork()} says whether the work's
     *     own writes committed before the library saw it
     * @throws ResultTooLargeException if the encoded result exceeds the policy's limit (rolled back)
     * @throws IdempotencyException if the codec could not encode the work's result (rolled back), or
     *     could not decode a stored result or failure (a codec changed incompatibly; nothing written);
     *     every exception above that the library makes is one of its subclasses, carrying scope and key
     * @throws RetriesExhaustedException if serialization failures or deadlocks used up the
     *     policy's attempts (owned calls; a joined call's 40001 or 40P01 reaches the caller as jOOQ's
     *     {@code DataAccessException}, since it doomed the caller's transaction)
     * @throws CommitOutcomeUnknownException if the connection was lost while the commit was in
     *     flight, or the server committed before its synchronous standby confirmed it (a cancel
     *     ended the wait): retry with the same key, which replays or runs exactly once
     * @throws DataAccessException jOOQ's, if the database fails otherwise (connection lost before
     *     the commit, a statement timeout, ...): nothing was committed; with a
     *     {@link Builder#failureTranslator} (the Spring module's), what it translates that into
     */
    public Outcome<T> run(Scope scope, IdempotencyKey key, Fingerprint fingerprint, TransactionalWork<T> work) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(fingerprint, "fingerprint must not be null");
        Objects.requireNonNull(work, "work must not be null");
        if (partitions != null) {
            partitions.requireAccepted(key);
        }
        Timings timings = Timings.of(listeners);
        Outcome<T> outcome = timings.observe(
                listeners,
                OPERATION,
                scope,
                () -> runOnce(new Call(
                        scope, key, fingerprint, withClaim(scope, key, work), System.nanoTime() + waitNanos, timings)));
        if (listeners.any()
                && (outcome instanceof Outcome.Executed<T>
                        || (outcome instanceof Outcome.Rejected<T> rejected && !rejected.replayed()))) {
            listeners.claimChanged(ClaimEvent.created(OPERATION, scope, key));
        }
        return outcome;
    }

    /** The work, told its claim through its {@code tx} ({@link ClaimContext}, which the outbox names messages by). */
    private static <T> TransactionalWork<T> withClaim(Scope scope, IdempotencyKey key, TransactionalWork<T> work) {
        return tx -> {
            ClaimContext.attach(tx, scope, key);
            return work.execute(tx);
        };
    }

    private static final String OPERATION = "transaction";
    private static final System.Logger ORDER_LOG = System.getLogger("io.github.idemtx");

    private Outcome<T> runOnce(Call call) {
        return withConnection(
                call.scope(),
                call.key(),
                (connection, decision, flush) -> decision == Decision.OWN
                        ? Units.retrying(
                                connection,
                                policy,
                                call.scope(),
                                call.key(),
                                own -> flow.attempt(connection, call, own))
                        : Units.inSavepoint(connection, flush, savepoint -> flow.attempt(connection, call, savepoint)));
    }

    /**
     * Deletes up to {@code limit} claims whose TTL has passed, in one statement (one per partition,
     * oldest day first, with {@link Builder#partitions}); call it
     * periodically (and again while it returns {@code limit}). Safe to run while calls are running:
     * it never deletes a live claim, skips rows another transaction has locked, and a call taking
     * over an expired claim that the purge deletes simply inserts it anew. Who owns the transaction
     * is decided as for {@link #run}: on its own it commits before returning (also on a pool with
     * auto-commit off); joined, the deletions commit with the caller.
     *
     * @param limit how many to delete at most, from 1 to 100,000
     * @return how many were deleted (committed, when it owns its transaction)
     * @throws IllegalArgumentException if {@code limit} is out of range, before any SQL runs
     * @throws TransactionOwnershipException as for {@link #run}
     * @throws DataAccessException if the database fails; nothing was deleted
     */
    public int purgeExpired(int limit) {
        if (limit < 1 || limit > 100_000) {
            throw new IllegalArgumentException("limit must be between 1 and 100000, was " + limit);
        }
        if (!listeners.any()) {
            return purgeOnce(limit);
        }
        long start = System.nanoTime();
        int deleted;
        try {
            deleted = purgeOnce(limit);
        } catch (RuntimeException | Error e) {
            listeners.purged(PurgeEvent.of(
                    0,
                    limit,
                    java.time.Duration.ofNanos(System.nanoTime() - start),
                    e.getClass().getName()));
            throw e;
        }
        listeners.purged(PurgeEvent.of(deleted, limit, java.time.Duration.ofNanos(System.nanoTime() - start), null));
        return deleted;
    }

    private int purgeOnce(int limit) {
        return withConnection(
                null,
                null,
                (connection, decision, flush) -> decision == Decision.OWN
                        ? Units.inOwnTransaction(connection, null, null, () -> {
                            int deleted = purge(connection, limit);
                            Jdbc.commit(connection);
                            return deleted;
                        })
                        : Units.inSavepoint(connection, flush, savepoint -> {
                            int deleted = purge(connection, limit);
                            savepoint.keep();
                            return deleted;
                        }));
    }

    private int purge(Connection connection, int limit) {
        try {
            List<String> tables = partitions == null ? List.of() : partitions.tables(connection);
            if (!tables.isEmpty()) {
                // one partition after the other, oldest day first (docs/scaling.md: the statement on
                // the parent can read every expired row of every partition to find its batch)
                int deleted = 0;
                for (String table : tables) {
                    try {
                        deleted += sql.purgeIn(connection, table, limit - deleted);
                    } catch (SQLException e) {
                        if ("42P01".equals(e.getSQLState())) {
                            throw new DataAccessException(
                                    "the partition " + table + " was dropped while the purge ran (ClaimPartitions."
                                            + "dropBehind); nothing of this batch was deleted: run the purge again",
                                    e);
                        }
                        throw e;
                    }
                    if (deleted >= limit) {
                        break;
                    }
                }
                return deleted;
            }
            return sql.purge(connection, limit);
        } catch (SQLException e) {
            throw SqlStates.storeFailure("the purge of expired claims failed", e, schema);
        }
    }

    @FunctionalInterface
    private interface OnConnection<R> {
        /** @param flush pushes out the joined transaction's in-memory writes ({@link TransactionDetector#flush}) */
        R apply(Connection connection, Decision decision, Runnable flush);
    }

    /**
     * Decides who owns the transaction, then applies {@code body} to the provider's connection and
     * releases it; jOOQ's DataAccessExceptions leave through the failure translator.
     */
    private <R> R withConnection(@Nullable Scope scope, @Nullable IdempotencyKey key, OnConnection<R> body) {
        try {
            return onConnection(scope, key, body);
        } catch (DataAccessException e) {
            if (translator == null) {
                throw e;
            }
            RuntimeException translated = translator.translate(e, dsl.configuration());
            if (translated == null) {
                throw new IllegalStateException(translator.getClass().getName() + ".translate returned null", e);
            }
            throw translated;
        }
    }

    private static @Nullable FailureTranslator discoveredTranslator() {
        return java.util.ServiceLoader.load(FailureTranslator.class, IdempotentTransaction.class.getClassLoader())
                .findFirst()
                .orElse(null);
    }

    private <R> R onConnection(@Nullable Scope scope, @Nullable IdempotencyKey key, OnConnection<R> body) {
        Configuration configuration = dsl.configuration();
        TransactionOwnership.Detected detected = ownership.detect(configuration); // before a connection is taken
        return Jdbc.onConnection(configuration, connection -> {
            serverCheck.check(connection);
            return body.apply(
                    connection,
                    ownership.decide(configuration, detected, connection, scope, key),
                    detected.flusher(configuration));
        });
    }

    /**
     * Builds an {@link IdempotentTransaction}. Not thread-safe; each setter validates at once.
     *
     * @param <T> the type of the work's result
     */
    public static final class Builder<T> {
        private final DSLContext dsl;
        private final ResultCodec<T> codec;
        private IdempotencyPolicy policy = IdempotencyPolicy.defaults();
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;
        private TransactionMode mode = TransactionMode.DETECT;
        private ClaimMode claimMode = DEFAULT_CLAIM_MODE;
        private @Nullable ClaimPartitions partitions;
        private final List<TransactionDetector> detectors = new ArrayList<>();
        private @Nullable FailureTranslator translator;
        private final List<IdempotencyListener<?>> listeners = new ArrayList<>();

        private Builder(DSLContext dsl, ResultCodec<T> codec) {
            this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
            this.codec = Objects.requireNonNull(codec, "codec must not be null");
        }

        /**
         * Sets the policy; default {@link IdempotencyPolicy#defaults()}.
         *
         * @param policy the policy
         * @return this builder
         * @throws NullPointerException if {@code policy} is null
         */
        public Builder<T> policy(IdempotencyPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy must not be null");
            return this;
        }

        /**
         * The schema the claim table was migrated into with {@link IdempotencySchema#migrate}; default
         * {@value IdempotencySchema#DEFAULT_SCHEMA}.
         *
         * @param schema a plain PostgreSQL identifier
         * @return this builder
         * @throws NullPointerException if {@code schema} is null
         * @throws IllegalArgumentException if it is not a plain identifier
         */
        public Builder<T> schema(String schema) {
            this.schema = IdempotencySchema.requireSchemaName(schema);
            return this;
        }

        /**
         * Who owns the transaction of each call; default {@link TransactionMode#DETECT}. State
         * {@link TransactionMode#OWN} or {@link TransactionMode#JOIN} where no detector knows the
         * transaction manager in use.
         *
         * @param mode who owns the transaction
         * @return this builder
         * @throws NullPointerException if {@code mode} is null
         */
        public Builder<T> transactionMode(TransactionMode mode) {
            this.mode = Objects.requireNonNull(mode, "transactionMode must not be null");
            return this;
        }

        /**
         * In which order a call that owns its transaction claims the key and runs the work; default
         * {@link IdempotentTransaction#DEFAULT_CLAIM_MODE} ({@link ClaimMode#CLAIM_FIRST}). Joined
         * calls always claim first. The deprecated {@code READ_FIRST} is taken as
         * {@link ClaimMode#CLAIM_FIRST}.
         *
         * @param claimMode the order
         * @return this builder
         * @throws NullPointerException if {@code claimMode} is null
         */
        public Builder<T> claimMode(ClaimMode claimMode) {
            this.claimMode = Objects.requireNonNull(claimMode, "claimMode must not be null")
                    .canonical();
            return this;
        }

        /**
         * Adds a detector, asked before those found through {@link java.util.ServiceLoader} and
         * before jOOQ's own; see {@link TransactionDetector}.
         *
         * @param detector the detector
         * @return this builder
         * @throws NullPointerException if {@code detector} is null
         */
        public Builder<T> detector(TransactionDetector detector) {
            detectors.add(Objects.requireNonNull(detector, "detector must not be null"));
            return this;
        }

        /**
         * Sets how database failures are thrown (see {@link FailureTranslator}); by default the
         * first translator found through {@link java.util.ServiceLoader}, else none.
         *
         * @param translator the translator
         * @return this builder
         * @throws NullPointerException if {@code translator} is null
         */
        public Builder<T> failureTranslator(FailureTranslator translator) {
            this.translator = Objects.requireNonNull(translator, "translator must not be null");
            return this;
        }

        /**
         * Adds a listener, told of every call and purge (see {@link IdempotencyListener}); none by
         * default, and then nothing is measured.
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder<T> listener(IdempotencyListener<?> listener) {
            listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
            return this;
        }

        /**
         * Uses a claim table partitioned by the day its keys carry ({@link ClaimPartitions}): each
         * call first refuses a key outside the days the table accepts, with an
         * {@link IllegalArgumentException} and before any SQL runs, and {@link #purgeExpired} purges
         * partition by partition. Also sets the {@link #schema} to the partitions'. None by default:
         * the plain table.
         *
         * @param partitions the partitions' configuration
         * @return this builder
         * @throws NullPointerException if {@code partitions} is null
         */
        public Builder<T> partitions(ClaimPartitions partitions) {
            this.partitions = Objects.requireNonNull(partitions, "partitions must not be null");
            this.schema = partitions.schema();
            return this;
        }

        /**
         * {@return the instance; immutable, whatever is done with this builder afterwards}
         *
         * @throws IllegalStateException if {@link #schema} named another schema than the
         *     {@link #partitions}' after them
         */
        public IdempotentTransaction<T> build() {
            PartitionsSchema.requireSame(partitions, schema);
            return new IdempotentTransaction<>(this);
        }
    }
}
