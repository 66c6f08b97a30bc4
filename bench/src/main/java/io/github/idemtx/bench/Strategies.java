package io.github.idemtx.bench;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jooq.impl.DataSourceConnectionProvider;
import org.jooq.impl.DefaultConfiguration;
import org.jooq.impl.DefaultTransactionProvider;

/** The strategies compared, by name. */
final class Strategies {

    static final String BARE = "bare";
    /** {@code run} with a fresh key in the library's default mode, CLAIM_FIRST: the key claimed first. */
    static final String CLAIM = "claim";
    /** The same in WORK_FIRST (opt-in): the work, then the claim row with COMMIT. */
    static final String CLAIM_WORK_FIRST = "claim-work-first";
    /** The same in ADAPTIVE (opt-in), an instance of its own: on fresh keys it works first. */
    static final String CLAIM_ADAPTIVE = "claim-adaptive";
    /** {@code run} with a completed key, in the default mode (CLAIM_FIRST): the read alone. */
    static final String REPLAY = "replay";
    /** The same in WORK_FIRST: the work and the insert, rolled back, then the read. */
    static final String REPLAY_WORK_FIRST = "replay-work-first";
    /** The same in ADAPTIVE, an instance of its own, which soon reads first. */
    static final String REPLAY_ADAPTIVE = "replay-adaptive";
    /**
     * Retry-share phase: fresh keys and, at the phase's share, retries of completed ones, in ADAPTIVE
     * (an instance serving this phase alone); the one compared with the better fixed mode.
     */
    static final String MIXED_ADAPTIVE = "mixed-adaptive";
    /** The same in WORK_FIRST. */
    static final String MIXED_WORK_FIRST = "mixed-work-first";
    /** The same in CLAIM_FIRST (the default). */
    static final String MIXED_CLAIM_FIRST = "mixed-claim-first";

    static final String THREE_TX = "three-tx";
    /** The work-first floor: the transfer, then a completed claim row inserted with COMMIT (4 round trips). */
    static final String FLOOR = "floor";
    /**
     * The claim-first floor: a claim row inserted with BEGIN, the transfer, its completion updated
     * with COMMIT (5 round trips).
     */
    static final String FLOOR_CLAIM_FIRST = "floor-claim-first";

    static final String BURST = "duplicate-burst";
    /** Growth phase only: {@code claim} with {@code purgeExpired} running beside it. */
    static final String CLAIM_PURGE = "claim+purge";
    /** Observability (not in the default set): {@code claim} with the Micrometer listener and a registry attached. */
    static final String CLAIM_METRICS = "claim+metrics";
    /** External effects (not in the default set): a remote stub call plus the transfer in one transaction. */
    static final String REMOTE_BARE = "remote-bare";
    /**
     * External effects: the least an exactly-once remote call with a durable in-flight record can
     * cost, in plain JDBC: the in-flight row committed before the call, then the transfer and the
     * row's settlement with the COMMIT.
     */
    static final String REMOTE_FLOOR = "remote-floor";
    /** External effects: the same through {@code ExternalEffect.run} (claim in flight, call, fenced record with the transfer). */
    static final String REMOTE_EFFECT = "remote-effect";
    /** The remote stub's fixed latency. */
    static final long REMOTE_LATENCY_MILLIS = 2;
    /** Profile only: {@code bare} through jOOQ's DefaultTransactionProvider, to show what it adds. */
    static final String BARE_JOOQ_DEFAULT = "bare-jooq-default";

    private Strategies() {}

    static Strategy create(String name, BenchContext ctx, int purgeLimit) {
        return switch (name) {
            case BARE -> new Bare(BARE, ctx, false);
            case BARE_JOOQ_DEFAULT -> new Bare(BARE_JOOQ_DEFAULT, ctx, true);
            case CLAIM -> new Claim(CLAIM, ctx, ctx.idem, 0);
            case CLAIM_WORK_FIRST -> new Claim(CLAIM_WORK_FIRST, ctx, ctx.idemWorkFirst, 0);
            case CLAIM_ADAPTIVE -> new Claim(CLAIM_ADAPTIVE, ctx, ctx.idemAdaptive, 0);
            case MIXED_ADAPTIVE -> new Mixed(MIXED_ADAPTIVE, ctx, ctx.idemMixedAdaptive);
            case MIXED_WORK_FIRST -> new Mixed(MIXED_WORK_FIRST, ctx, ctx.idemWorkFirst);
            case MIXED_CLAIM_FIRST -> new Mixed(MIXED_CLAIM_FIRST, ctx, ctx.idem);
            case CLAIM_PURGE -> new Claim(CLAIM_PURGE, ctx, ctx.idem, purgeLimit);
            case CLAIM_METRICS ->
                new Claim(
                        CLAIM_METRICS,
                        ctx,
                        IdempotentTransaction.builder(ctx.dsl, Ledger.CODEC)
                                .schema(ctx.schema())
                                .listener(io.github.idemtx.micrometer.MicrometerIdempotencyListener.of(
                                        new io.micrometer.core.instrument.simple.SimpleMeterRegistry()))
                                .build(),
                        0);
            case REPLAY -> new Replay(REPLAY, ctx, ctx.idem);
            case REPLAY_WORK_FIRST -> new Replay(REPLAY_WORK_FIRST, ctx, ctx.idemWorkFirst);
            case REPLAY_ADAPTIVE -> new Replay(REPLAY_ADAPTIVE, ctx, ctx.idemReplayAdaptive);
            case THREE_TX -> new ThreeTx(ctx);
            case FLOOR -> new Floor(ctx);
            case FLOOR_CLAIM_FIRST -> new ClaimFirstFloor(ctx);
            case BURST -> new Burst(ctx);
            case REMOTE_BARE -> new RemoteBare(ctx);
            case REMOTE_FLOOR -> new RemoteFloor(ctx);
            case REMOTE_EFFECT -> new RemoteEffect(ctx);
            default -> throw new IllegalArgumentException("unknown strategy " + name);
        };
    }

    private static SplittableRandom random() {
        return new SplittableRandom(
                java.util.concurrent.ThreadLocalRandom.current().nextLong());
    }

    /** The claim-table columns, as the library's migration declares them. */
    private static String insertClaim(String schema, String stateSql, String resultSql, String completedSql) {
        return "INSERT INTO " + schema + ".idempotency_claim"
                + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                + " VALUES (?, ?, ?, " + stateSql + ", " + resultSql + ", clock_timestamp(), " + completedSql
                + ", clock_timestamp() + ? * interval '1 millisecond')";
    }

    /** A statement that ends with {@code ; commit}, given the transfer's receipt. */
    @FunctionalInterface
    private interface CommittingStatement {
        void run(Ledger.Receipt receipt) throws Exception;
    }

    /** A plain-JDBC statement sent before the transfer, as the transaction's first. */
    @FunctionalInterface
    private interface FirstStatement {
        void run() throws Exception;
    }

    /**
     * The floors' transaction in plain JDBC on {@code c}: the transfer, then {@code last}, a statement
     * sent together with the COMMIT (the {@code commit()} that follows is a no-op); rolled back on
     * any failure.
     */
    private static void transferThenCommitWith(
            BenchContext ctx, Connection c, Ledger.TransferRequest request, CommittingStatement last) throws Exception {
        transferThenCommitWith(ctx, c, () -> {}, request, last);
    }

    /**
     * The same with {@code first} sent before the transfer, as the transaction's first statement
     * (pgjdbc sends BEGIN together with it).
     */
    private static void transferThenCommitWith(
            BenchContext ctx,
            Connection c,
            FirstStatement first,
            Ledger.TransferRequest request,
            CommittingStatement last)
            throws Exception {
        c.setAutoCommit(false);
        try {
            first.run();
            last.run(ctx.ledger.transfer(DSL.using(c, SQLDialect.POSTGRES, BenchContext.SETTINGS), request));
            c.commit();
        } catch (Exception e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
    }

    // ------------------------------------------------------------------ 1. bare

    /** The transfer in one jOOQ transaction, nothing else. */
    static final class Bare implements Strategy {
        private final String name;
        private final BenchContext ctx;
        private final DSLContext bareDsl;

        Bare(String name, BenchContext ctx, boolean jooqDefault) {
            this.name = name;
            this.ctx = ctx;
            this.bareDsl = bareDsl(ctx, jooqDefault);
        }

        /** A context whose transactions are plain JDBC ones (or jOOQ's default provider's, to show what it adds). */
        static DSLContext bareDsl(BenchContext ctx, boolean jooqDefault) {
            DataSourceConnectionProvider provider = new DataSourceConnectionProvider(ctx.pool);
            return DSL.using(new DefaultConfiguration()
                    .set(SQLDialect.POSTGRES)
                    .set(BenchContext.SETTINGS)
                    .set(provider)
                    .set(
                            jooqDefault
                                    ? new DefaultTransactionProvider(provider)
                                    : new PlainTransactionProvider(provider)));
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                bareDsl.transactionResult(cfg -> ctx.ledger.transfer(cfg.dsl(), request));
                return Kind.EXECUTED;
            };
        }
    }

    // ------------------------------------------------------------------ external effects

    /** The remote system: answers after a fixed latency, deduplicating by nothing (the bench sends each key once). */
    private static String remoteCall(String downstreamKey) {
        try {
            Thread.sleep(REMOTE_LATENCY_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return "ch_" + downstreamKey.hashCode();
    }

    /** The baseline of an external effect: the remote call, then the transfer in one local transaction. */
    static final class RemoteBare implements Strategy {
        private final BenchContext ctx;
        private final DSLContext bareDsl;

        RemoteBare(BenchContext ctx) {
            this.ctx = ctx;
            this.bareDsl = Bare.bareDsl(ctx, false);
        }

        @Override
        public String name() {
            return REMOTE_BARE;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                remoteCall(BenchContext.freshKey(random).value());
                bareDsl.transactionResult(cfg -> ctx.ledger.transfer(cfg.dsl(), request));
                return Kind.EXECUTED;
            };
        }
    }

    /**
     * The floor of an external effect: what its definition needs written, and no more. Before the
     * call, the in-flight row (the same columns the library writes: request, fence, lease) inserted
     * and committed in one round trip, as a statement in auto-commit; it must be durable before the
     * call, or a crash after the call would leave no trace of it. After the call, the transfer and
     * the row's settlement (its state, the answer, the fence checked) in one transaction whose
     * COMMIT rides with the settlement: 5 round trips, 2 commits. No library code.
     */
    static final class RemoteFloor implements Strategy {
        private final BenchContext ctx;
        private final String claimSql;
        private final String settleSql;

        RemoteFloor(BenchContext ctx) {
            this.ctx = ctx;
            String t = ctx.schema() + ".idempotency_claim";
            this.claimSql = "INSERT INTO " + t
                    + " (scope, idem_key, fingerprint, state, created_at, expires_at, effect, request, fence,"
                    + " lease_until, lookups) VALUES (?, ?, ?, 3, now(), 'infinity', 'bench-payout', ?, 1,"
                    + " clock_timestamp() + interval '30 seconds', 0)";
            this.settleSql = "UPDATE " + t + " SET state = 1, result = ?, completed_at = clock_timestamp(),"
                    + " expires_at = clock_timestamp() + ? * interval '1 millisecond', request = null,"
                    + " lease_until = null WHERE scope = ? AND idem_key = ? AND state = 3 AND fence = 1; commit";
        }

        @Override
        public String name() {
            return REMOTE_FLOOR;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                String scope = BenchContext.scopeName(random.nextInt(BenchContext.SCOPES));
                String key = BenchContext.freshKey(random).value();
                try (Connection c = ctx.pool.getConnection()) {
                    try (PreparedStatement ps = c.prepareStatement(claimSql)) {
                        ps.setString(1, scope);
                        ps.setString(2, key);
                        ps.setBytes(3, request.fingerprint().bytes());
                        ps.setBytes(4, RemoteEffect.REQUESTS.encode(request));
                        ps.executeUpdate();
                    }
                    String charge = remoteCall(key);
                    transferThenCommitWith(ctx, c, request, receipt -> {
                        try (PreparedStatement ps = c.prepareStatement(settleSql)) {
                            ps.setBytes(1, charge.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                            ps.setLong(2, ctx.ttlMillis);
                            ps.setString(3, scope);
                            ps.setString(4, key);
                            ps.executeUpdate();
                        }
                    });
                }
                ctx.shared.claimRows.incrementAndGet();
                return Kind.EXECUTED;
            };
        }
    }

    /** The same through {@code ExternalEffect}: claim committed in flight, the call, the fenced record with the transfer. */
    static final class RemoteEffect implements Strategy {
        static final io.github.idemtx.core.ResultCodec<Ledger.TransferRequest> REQUESTS =
                new io.github.idemtx.core.ResultCodec<>() {
                    @Override
                    public byte[] encode(Ledger.TransferRequest r) {
                        return (r.from() + "|" + r.to() + "|" + r.amount().toPlainString())
                                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
                    }

                    @Override
                    public Ledger.TransferRequest decode(byte[] bytes) {
                        String[] p = new String(bytes, java.nio.charset.StandardCharsets.UTF_8).split("\\|");
                        return new Ledger.TransferRequest(p[0], p[1], new java.math.BigDecimal(p[2]));
                    }
                };

        private final BenchContext ctx;
        private final io.github.idemtx.jooq.ExternalEffect<Ledger.TransferRequest, String> effect;

        RemoteEffect(BenchContext ctx) {
            this.ctx = ctx;
            this.effect = io.github.idemtx.jooq.ExternalEffect.builder(
                            ctx.dsl,
                            "bench-payout",
                            REQUESTS,
                            io.github.idemtx.core.ResultCodec.utf8(),
                            new io.github.idemtx.jooq.Remote<Ledger.TransferRequest, String>() {
                                @Override
                                public Reply<String> call(Intent<Ledger.TransferRequest> intent, Instant deadline) {
                                    return Reply.applied(remoteCall(intent.downstreamKey()));
                                }

                                @Override
                                public Lookup<String> lookup(Intent<Ledger.TransferRequest> intent) {
                                    return Lookup.unknown("the bench never looks up");
                                }

                                @Override
                                public void after(DSLContext tx, Intent<Ledger.TransferRequest> intent, String charge) {
                                    ctx.ledger.transfer(tx, intent.request());
                                }
                            })
                    .schema(ctx.schema())
                    .build();
        }

        @Override
        public String name() {
            return REMOTE_EFFECT;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                Scope scope = BenchContext.scope(random.nextInt(BenchContext.SCOPES));
                return effect.run(scope, BenchContext.freshKey(random), request.fingerprint(), request)
                                instanceof Outcome.Executed<String>
                        ? Kind.EXECUTED
                        : Kind.OTHER;
            };
        }
    }

    // ------------------------------------------------------------------ 2. claim (and claim+purge)

    /** The transfer through {@code IdempotentTransaction.run} with a fresh key each time. */
    static final class Claim implements Strategy {
        private final String name;
        private final BenchContext ctx;
        private final IdempotentTransaction<Ledger.Receipt> idem;
        private final int purgeLimit;

        Claim(String name, BenchContext ctx, IdempotentTransaction<Ledger.Receipt> idem, int purgeLimit) {
            this.name = name;
            this.ctx = ctx;
            this.idem = idem;
            this.purgeLimit = purgeLimit;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                Scope scope = BenchContext.scope(random.nextInt(BenchContext.SCOPES));
                IdempotencyKey key = BenchContext.freshKey(random);
                Fingerprint fingerprint = request.fingerprint();
                Outcome<Ledger.Receipt> outcome =
                        idem.run(scope, key, fingerprint, tx -> ctx.ledger.transfer(tx, request));
                if (outcome instanceof Outcome.Executed<Ledger.Receipt>) {
                    ctx.shared.completed(new BenchContext.Completed(scope, key, request, fingerprint));
                    return Kind.EXECUTED;
                }
                return Kind.OTHER;
            };
        }

        @Override
        public SideTask sideTask(Driver.Segment segment) {
            return purgeLimit > 0 ? new Purge(ctx, idem, purgeLimit, segment) : null;
        }
    }

    /**
     * Calls {@code purgeExpired(limit)} back to back while it returns the limit, and once a second
     * when it returned less (as the library's documentation suggests: periodically, and again
     * while it returns the limit).
     */
    static final class Purge implements Strategy.SideTask {
        private final Thread thread;
        private volatile boolean closed;
        private final AtomicLong purged = new AtomicLong();
        private final AtomicLong calls = new AtomicLong();
        private final AtomicLong callNanos = new AtomicLong();
        private volatile Throwable failure;
        private final Driver.Segment segment;

        Purge(BenchContext ctx, IdempotentTransaction<?> idem, int limit, Driver.Segment segment) {
            this.segment = segment;
            this.thread = new Thread(
                    () -> {
                        while (!closed) {
                            try {
                                long t0 = System.nanoTime();
                                int n = idem.purgeExpired(limit);
                                long t1 = System.nanoTime();
                                ctx.shared.claimRows.addAndGet(-n);
                                ctx.shared.expiredRows.addAndGet(-n);
                                if (segment.measuring()) {
                                    purged.addAndGet(n);
                                    calls.incrementAndGet();
                                    callNanos.addAndGet(t1 - t0);
                                }
                                if (n < limit) {
                                    Thread.sleep(1000);
                                }
                            } catch (InterruptedException e) {
                                return;
                            } catch (RuntimeException | Error e) {
                                failure = e;
                                return;
                            }
                        }
                    },
                    "bench-purge");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public Map<String, Object> figures() {
            Map<String, Object> m = new LinkedHashMap<>();
            double seconds = segment.measuredSeconds();
            m.put("purged_rows", purged.get());
            m.put("purged_rows_per_s", seconds > 0 ? purged.get() / seconds : 0.0);
            m.put("purge_calls", calls.get());
            m.put("purge_call_ms_mean", calls.get() > 0 ? callNanos.get() / 1e6 / calls.get() : 0.0);
            if (failure != null) {
                m.put("purge_error", String.valueOf(failure));
            }
            return m;
        }

        @Override
        public void close() {
            closed = true;
            try {
                thread.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    // ------------------------------------------------------------------ 3. replay

    /** {@code run} with keys that already completed: the work never runs, the stored result comes back. */
    static final class Replay implements Strategy {
        private final String name;
        private final BenchContext ctx;
        private final IdempotentTransaction<Ledger.Receipt> idem;

        Replay(String name, BenchContext ctx, IdempotentTransaction<Ledger.Receipt> idem) {
            this.name = name;
            this.ctx = ctx;
            this.idem = idem;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                BenchContext.Completed c = ctx.shared.randomCompleted(random);
                Outcome<Ledger.Receipt> outcome =
                        idem.run(c.scope(), c.key(), c.fingerprint(), tx -> ctx.ledger.transfer(tx, c.request()));
                return outcome instanceof Outcome.Replayed<Ledger.Receipt> ? Kind.REPLAYED : Kind.OTHER;
            };
        }
    }

    // ------------------------------------------------------------------ 3b. mixed (the retry-share phase)

    /**
     * Fresh keys and, at the share the phase sets ({@link BenchContext#retryShare}), retries of keys
     * that completed: the traffic whose retry share moves, which a fixed claim mode loses to. Each
     * call is {@link Claim}'s or {@link Replay}'s, on the one instance given.
     */
    static final class Mixed implements Strategy {
        private final String name;
        private final BenchContext ctx;
        private final Claim fresh;
        private final Replay retry;

        Mixed(String name, BenchContext ctx, IdempotentTransaction<Ledger.Receipt> idem) {
            this.name = name;
            this.ctx = ctx;
            this.fresh = new Claim(name, ctx, idem, 0);
            this.retry = new Replay(name, ctx, idem);
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            Worker first = fresh.worker(index, threads);
            Worker again = retry.worker(index, threads);
            return wave -> random.nextDouble() < ctx.retryShare ? again.op(wave) : first.op(wave);
        }
    }

    // ------------------------------------------------------------------ 4. three-tx

    /**
     * The seeds' middleware design, faithfully: claim the key in a transaction of its own (an
     * in-progress row, committed), run the transfer in a second, complete the key (the row gets the
     * result) in a third. Plain JDBC for the claim statements, one pooled connection for all three
     * (the cheapest way to do it; a middleware often uses separate ones).
     */
    static final class ThreeTx implements Strategy {
        private final BenchContext ctx;
        private final String claimSql;
        private final String completeSql;
        private final String releaseSql;

        ThreeTx(BenchContext ctx) {
            this.ctx = ctx;
            String s = ctx.schema();
            this.claimSql = insertClaim(s, "0", "NULL", "NULL") + " ON CONFLICT (scope, idem_key) DO NOTHING";
            this.completeSql =
                    "UPDATE " + s + ".idempotency_claim SET state = 1, result = ?, completed_at = clock_timestamp()"
                            + " WHERE scope = ? AND idem_key = ?";
            this.releaseSql = "DELETE FROM " + s + ".idempotency_claim WHERE scope = ? AND idem_key = ? AND state = 0";
        }

        @Override
        public String name() {
            return THREE_TX;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                String scope = BenchContext.scopeName(random.nextInt(BenchContext.SCOPES));
                String key = BenchContext.freshKey(random).value();
                byte[] fingerprint = request.fingerprint().bytes();
                try (Connection c = ctx.pool.getConnection()) {
                    // transaction 1: the claim, committed on its own
                    try (PreparedStatement ps = c.prepareStatement(claimSql)) {
                        ps.setString(1, scope);
                        ps.setString(2, key);
                        ps.setBytes(3, fingerprint);
                        ps.setLong(4, ctx.ttlMillis);
                        if (ps.executeUpdate() != 1) {
                            return Kind.OTHER; // a duplicate; never happens with fresh keys
                        }
                    }
                    ctx.shared.claimRows.incrementAndGet();
                    // transaction 2: the business write
                    Ledger.Receipt receipt;
                    c.setAutoCommit(false);
                    try {
                        receipt =
                                ctx.ledger.transfer(DSL.using(c, SQLDialect.POSTGRES, BenchContext.SETTINGS), request);
                        c.commit();
                    } catch (Exception e) {
                        c.rollback();
                        c.setAutoCommit(true);
                        release(c, scope, key); // what the middleware does when the handler fails
                        throw e;
                    }
                    c.setAutoCommit(true);
                    // transaction 3: the completion
                    try (PreparedStatement ps = c.prepareStatement(completeSql)) {
                        ps.setBytes(1, Ledger.CODEC.encode(receipt));
                        ps.setString(2, scope);
                        ps.setString(3, key);
                        if (ps.executeUpdate() != 1) {
                            throw new IllegalStateException("three-tx completion updated no row");
                        }
                    }
                    return Kind.EXECUTED;
                }
            };
        }

        private void release(Connection c, String scope, String key) throws SQLException {
            try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
                ps.setString(1, scope);
                ps.setString(2, key);
                ctx.shared.claimRows.addAndGet(-ps.executeUpdate());
            }
        }
    }

    // ------------------------------------------------------------------ 5. floor

    /**
     * The least a durable claim in the same transaction can cost: the transfer plus ONE insert of
     * an already-completed claim row, sent together with COMMIT in one round trip (pgjdbc sends
     * "...; commit" as one message; the Connection.commit() that follows is a no-op), so 4 round
     * trips like {@code bare}. No library code; the claim row goes to the library's claim table
     * (same columns, same indexes).
     */
    static final class Floor implements Strategy {
        private final BenchContext ctx;
        private final String insertSql;

        Floor(BenchContext ctx) {
            this.ctx = ctx;
            this.insertSql = insertClaim(ctx.schema(), "1", "?", "clock_timestamp()") + "; commit";
        }

        @Override
        public String name() {
            return FLOOR;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                String scope = BenchContext.scopeName(random.nextInt(BenchContext.SCOPES));
                String key = BenchContext.freshKey(random).value();
                byte[] fingerprint = request.fingerprint().bytes();
                try (Connection c = ctx.pool.getConnection()) {
                    transferThenCommitWith(ctx, c, request, receipt -> {
                        try (PreparedStatement ps = c.prepareStatement(insertSql)) {
                            ps.setString(1, scope);
                            ps.setString(2, key);
                            ps.setBytes(3, fingerprint);
                            ps.setBytes(4, Ledger.CODEC.encode(receipt));
                            ps.setLong(5, ctx.ttlMillis);
                            ps.executeUpdate();
                        }
                    });
                }
                ctx.shared.claimRows.incrementAndGet();
                return Kind.EXECUTED;
            };
        }
    }

    /**
     * The least a claim-first unit can send by hand: the claim row (running, state 0) inserted as the
     * transaction's first statement (pgjdbc sends BEGIN with it; a duplicate would fail or wait on the
     * primary key here, before any work), the transfer, then the completion (state, result) updated
     * and sent together with COMMIT: 5 round trips, one more than {@link Floor}. Plain JDBC on the
     * same pool, the library's claim table; no library code.
     */
    static final class ClaimFirstFloor implements Strategy {
        private final BenchContext ctx;
        private final String claimSql;
        private final String completeSql;

        ClaimFirstFloor(BenchContext ctx) {
            this.ctx = ctx;
            String s = ctx.schema();
            this.claimSql = insertClaim(s, "0", "NULL", "NULL");
            this.completeSql =
                    "UPDATE " + s + ".idempotency_claim SET state = 1, result = ?, completed_at = clock_timestamp()"
                            + " WHERE scope = ? AND idem_key = ?; commit";
        }

        @Override
        public String name() {
            return FLOOR_CLAIM_FIRST;
        }

        @Override
        public Worker worker(int index, int threads) {
            SplittableRandom random = random();
            return wave -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(random);
                String scope = BenchContext.scopeName(random.nextInt(BenchContext.SCOPES));
                String key = BenchContext.freshKey(random).value();
                byte[] fingerprint = request.fingerprint().bytes();
                try (Connection c = ctx.pool.getConnection()) {
                    transferThenCommitWith(
                            ctx,
                            c,
                            () -> {
                                try (PreparedStatement ps = c.prepareStatement(claimSql)) {
                                    ps.setString(1, scope);
                                    ps.setString(2, key);
                                    ps.setBytes(3, fingerprint);
                                    ps.setLong(4, ctx.ttlMillis);
                                    ps.executeUpdate();
                                }
                            },
                            request,
                            receipt -> {
                                try (PreparedStatement ps = c.prepareStatement(completeSql)) {
                                    ps.setBytes(1, Ledger.CODEC.encode(receipt));
                                    ps.setString(2, scope);
                                    ps.setString(3, key);
                                    ps.executeUpdate();
                                }
                            });
                }
                ctx.shared.claimRows.incrementAndGet();
                return Kind.EXECUTED;
            };
        }
    }

    // ------------------------------------------------------------------ 6. duplicate-burst

    /**
     * All client threads send the same key (and request) at the same instant through {@code run},
     * wave after wave. One call per wave executes; the others wait on the key's lock and replay,
     * or get InProgress once the policy's duplicate wait runs out.
     */
    static final class Burst implements Strategy {
        private final BenchContext ctx;
        private final SplittableRandom waveRandom = random();

        record Wave(Scope scope, IdempotencyKey key, Ledger.TransferRequest request, Fingerprint fingerprint) {}

        Burst(BenchContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public String name() {
            return BURST;
        }

        @Override
        public Supplier<Object> waves() {
            // called by one thread at a time, at the barrier
            return () -> {
                Ledger.TransferRequest request = ctx.ledger.randomRequest(waveRandom);
                return new Wave(
                        BenchContext.scope(waveRandom.nextInt(BenchContext.SCOPES)),
                        BenchContext.freshKey(waveRandom),
                        request,
                        request.fingerprint());
            };
        }

        @Override
        public Worker worker(int index, int threads) {
            return input -> {
                Wave w = (Wave) input;
                Instant start = Instant.now();
                Outcome<Ledger.Receipt> outcome = ctx.burstIdem.run(
                        w.scope(), w.key(), w.fingerprint(), tx -> ctx.ledger.transfer(tx, w.request()));
                return switch (outcome) {
                    case Outcome.Executed<Ledger.Receipt> e -> {
                        ctx.shared.completed(
                                new BenchContext.Completed(w.scope(), w.key(), w.request(), w.fingerprint()));
                        yield Kind.EXECUTED;
                    }
                    // completed after this call began: it overlapped the holder, and waited for it
                    case Outcome.Replayed<Ledger.Receipt> r ->
                        r.completedAt().isAfter(start) ? Kind.WAITED : Kind.REPLAYED;
                    case Outcome.InProgress<Ledger.Receipt> p -> Kind.IN_PROGRESS;
                    default -> Kind.OTHER;
                };
            };
        }
    }
}
