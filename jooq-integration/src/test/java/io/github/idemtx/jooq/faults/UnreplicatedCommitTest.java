package io.github.idemtx.jooq.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.ThrowawayCluster;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.Remote;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A COMMIT that waits for a synchronous standby and is ended by a cancel request (an operator's
 * {@code pg_cancel_backend} when the standby is gone, a driver's query timeout) returns success
 * with a WARNING: committed locally, maybe not replicated. A failover can still lose it, so the
 * call must not answer {@code Executed}: it answers that the commit's outcome is unknown, and the
 * retry with the same key replays (here, where no failover came). A server of its own, whose
 * {@code synchronous_standby_names} names a standby that never connects: every writing COMMIT
 * waits. Each of the three ways the library commits its own transaction, and the external effect's
 * COMMITs before and after its remote call.
 */
@DatabaseTest
class UnreplicatedCommitTest {

    private static final String SCHEMA = "idemtx_sync";

    /** Where the COMMIT is: the record's statement in each order, or commit() after an expired row's upsert. */
    enum Commit {
        READ_FIRST_RECORD,
        WORK_FIRST_RECORD,
        AFTER_TAKING_OVER_AN_EXPIRED_ROW
    }

    /** Where the external effect's COMMIT is. */
    enum EffectCommit {
        /** the in-flight claim's, sent with its INSERT: nothing is called yet */
        CLAIM,
        /** the in-flight claim's after {@code before()}'s local writes */
        CLAIM_AFTER_BEFORE,
        /** the fenced record's, after the remote applied it and {@code after()} wrote */
        RECORD
    }

    private static final String STANDBY = "a_standby_that_never_connects";
    /** The application name of the probes that tell whether COMMITs wait. */
    private static final String PROBE = "idemtx-sync-probe";

    private static ThrowawayCluster server;
    private static HikariDataSource pool;
    private static DSLContext dsl;

    @BeforeAll
    static void serverWaitingForAStandby() throws Exception {
        server = ThrowawayCluster.start();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(server.jdbcUrl());
        config.setUsername(server.user());
        config.setMaximumPoolSize(4);
        config.setPoolName("unreplicated-commit-test");
        pool = new HikariDataSource(config);
        IdempotencySchema.migrate(pool, SCHEMA);
        dsl = DSL.using(pool, SQLDialect.POSTGRES);
        dsl.execute("CREATE TABLE " + SCHEMA + ".effect (id bigserial PRIMARY KEY, note text)");
    }

    /** Every writing COMMIT waits for the standby (an effect's case turns that off before its retry). */
    @BeforeEach
    void commitsWaitForAStandby() throws Exception {
        synchronousStandby(STANDBY);
    }

    /**
     * Sets {@code synchronous_standby_names} and returns once writing COMMITs wait for the standby
     * (a name) or no longer do (empty). SHOW tells what a session sees; whether a COMMIT waits is
     * the server's shared flag, which its checkpointer sets on its own reload: a probe tells.
     */
    private static void synchronousStandby(String names) throws Exception {
        dsl.execute("ALTER SYSTEM SET synchronous_standby_names = '" + names + "'");
        dsl.execute("SELECT pg_reload_conf()");
        boolean waits = !names.isEmpty();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (probeWaits() != waits) {
            assertThat(System.nanoTime())
                    .as("COMMITs %s for the standby", waits ? "wait" : "no longer wait")
                    .isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    /** Whether a probe's writing COMMIT waits for the standby; one that does is cancelled (its row stays). */
    private static boolean probeWaits() throws Exception {
        ExecutorService runner = Executors.newSingleThreadExecutor();
        try {
            Future<?> probe = runner.submit(() -> dsl.transaction(c -> {
                c.dsl().execute("SET LOCAL application_name = '" + PROBE + "'"); // kept through its COMMIT's wait
                c.dsl().execute("INSERT INTO " + SCHEMA + ".effect (note) VALUES ('probe')");
            }));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!probe.isDone()) {
                Integer waiting = waitingFor("= '" + PROBE + "'");
                if (waiting != null) {
                    assertThat(dsl.fetchValue("SELECT pg_cancel_backend(?)", waiting))
                            .isEqualTo(true);
                    probe.get(60, TimeUnit.SECONDS);
                    return true;
                }
                assertThat(System.nanoTime())
                        .as("a probe COMMIT returns or waits")
                        .isLessThan(deadline);
                Thread.sleep(5);
            }
            probe.get();
            return false;
        } finally {
            runner.shutdownNow();
        }
    }

    /** The pid of a session of this database whose COMMIT waits for the standby, by application name, or null. */
    private static @Nullable Integer waitingFor(String applicationName) {
        return dsl.fetchOptional("SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
                        + " AND datname = current_database() AND application_name " + applicationName)
                .map(r -> r.get(0, Integer.class))
                .orElse(null);
    }

    @AfterAll
    static void stop() {
        if (pool != null) {
            pool.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Commit.class)
    void aCommitEndedByACancelBeforeTheStandbyConfirmedIsUnknownAndTheRetryReplays(Commit commit) throws Exception {
        Scope scope = Scope.of("tenant-sync");
        IdempotencyKey key = IdempotencyKey.random();
        Fingerprint fingerprint = Fingerprint.sha256("pay 10");
        if (commit == Commit.AFTER_TAKING_OVER_AN_EXPIRED_ROW) {
            // written in a transaction of its own that waits too: cancelled the same way first
            cancelWhenWaiting(() -> {
                dsl.execute(
                        "INSERT INTO " + SCHEMA + ".idempotency_claim (scope, idem_key, fingerprint, state, created_at,"
                                + " completed_at, expires_at) VALUES (?, ?, ?, 1, now(), now(), now() - interval '1 s')",
                        scope.value(),
                        key.value(),
                        fingerprint.bytes());
                return null;
            });
        }
        IdempotentTransaction<String> idem = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .schema(SCHEMA)
                .claimMode(commit == Commit.WORK_FIRST_RECORD ? ClaimMode.WORK_FIRST : ClaimMode.CLAIM_FIRST)
                .build();
        AtomicInteger runs = new AtomicInteger();
        assertThatThrownBy(() -> cancelWhenWaiting(() -> idem.run(scope, key, fingerprint, tx -> {
                    tx.execute("INSERT INTO " + SCHEMA + ".effect (note) VALUES (?)", key.value());
                    return "paid once, run " + runs.incrementAndGet();
                })))
                .isInstanceOf(CommitOutcomeUnknownException.class)
                .hasMessageContaining("before the synchronous standby confirmed it")
                .hasMessageContaining("retry with the same key");

        // committed on this server (no failover came): the retry replays it, nothing runs again
        assertThat(idem.run(scope, key, fingerprint, tx -> "paid twice"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("paid once, run 1"));
        assertThat(runs).hasValue(1);
        assertThat(notes(key.value())).isEqualTo(1);
    }

    @ParameterizedTest
    @EnumSource(EffectCommit.class)
    void anEffectsCommitEndedByACancelIsUnknownAndTheRetryCallsTheRemoteOnce(EffectCommit commit) throws Exception {
        Scope scope = Scope.of("tenant-sync-effect");
        IdempotencyKey key = IdempotencyKey.random();
        Fingerprint fingerprint = Fingerprint.sha256("charge 10");
        AtomicInteger calls = new AtomicInteger();
        AtomicInteger lookups = new AtomicInteger();
        class Charges implements Remote<String, String> {
            @Override
            public Reply<String> call(Remote.Intent<String> intent, Instant deadline) throws Exception {
                if (commit == EffectCommit.RECORD) {
                    synchronousStandby(STANDBY); // the claim was confirmed; the record's COMMIT waits
                }
                return Reply.applied("charge-" + calls.incrementAndGet());
            }

            @Override
            public Lookup<String> lookup(Remote.Intent<String> intent) {
                lookups.incrementAndGet();
                return calls.get() == 0 ? Lookup.absent() : Lookup.unknown("asked once only");
            }

            @Override
            public void after(DSLContext tx, Remote.Intent<String> intent, String charge) {
                tx.execute("INSERT INTO " + SCHEMA + ".effect (note) VALUES (?)", key.value() + " after");
            }
        }
        class Holding extends Charges implements Remote.Holding<String, String> {
            @Override
            public void before(DSLContext tx, Remote.Intent<String> intent) {
                tx.execute("INSERT INTO " + SCHEMA + ".effect (note) VALUES (?)", key.value() + " before");
            }
        }
        ExternalEffect<String, String> charges = ExternalEffect.builder(
                        dsl,
                        "sync-charge",
                        ResultCodec.utf8(),
                        ResultCodec.utf8(),
                        commit == EffectCommit.CLAIM_AFTER_BEFORE ? new Holding() : new Charges())
                .schema(SCHEMA)
                .lease(Duration.ofSeconds(2)) // past it, within the retry's duplicateWait (5 s)
                .readAfterWrite(true)
                .build();
        if (commit == EffectCommit.RECORD) {
            synchronousStandby(""); // until the remote is called
        }
        // a retry's statements wait for the standby too: with it, they would wait for ever
        Callable<RemoteOutcome<String>> charge = () -> charges.run(scope, key, fingerprint, "10 EUR");

        assertThatThrownBy(() -> cancelWhenWaiting(charge))
                .isInstanceOf(CommitOutcomeUnknownException.class)
                .hasMessageContaining("before the synchronous standby confirmed it")
                .hasMessageContaining("retry with the same key");
        assertThat(calls)
                .as("a claim the standby never confirmed is not called")
                .hasValue(commit == EffectCommit.RECORD ? 1 : 0);
        assertThat(notes(key.value() + " before"))
                .as("before() committed with the claim")
                .isEqualTo(commit == EffectCommit.CLAIM_AFTER_BEFORE ? 1 : 0);
        assertThat(notes(key.value() + " after"))
                .as("after() committed with the record")
                .isEqualTo(commit == EffectCommit.RECORD ? 1 : 0);

        // the standby dropped from the list: commits go on, and the retry settles it (no failover came)
        synchronousStandby("");
        RemoteOutcome<String> retried = charge.call();
        if (commit == EffectCommit.RECORD) {
            assertThat(retried)
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
            assertThat(lookups).hasValue(0);
        } else {
            // past the lease (2 s) it is taken over, looked up (absent) and sent once
            assertThat(retried)
                    .isInstanceOfSatisfying(
                            Outcome.Executed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
            assertThat(lookups).hasValue(1);
        }
        assertThat(calls).hasValue(1);
        assertThat(notes(key.value() + " after")).isEqualTo(1);
        assertThat(charge.call())
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
        assertThat(calls).hasValue(1);
    }

    private static int notes(String note) {
        return dsl.fetchCount(
                DSL.table(DSL.name(SCHEMA, "effect")), DSL.field("note").eq(note));
    }

    /** Runs {@code call}, cancels its session's wait for the standby, and returns what it returned or threw. */
    private static <T> T cancelWhenWaiting(Callable<T> call) throws Exception {
        ExecutorService runner = Executors.newSingleThreadExecutor();
        try {
            Future<T> running = runner.submit(call);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Integer waiting = null;
            while (waiting == null) {
                assertThat(running.isDone())
                        .as("the COMMIT waits for the standby")
                        .isFalse();
                assertThat(System.nanoTime())
                        .as("a COMMIT waiting for the standby")
                        .isLessThan(deadline);
                waiting = waitingFor("<> '" + PROBE + "'"); // the probes the remote's call() sends are not it
                if (waiting == null) {
                    Thread.sleep(10);
                }
            }
            assertThat(dsl.fetchValue("SELECT pg_cancel_backend(?)", waiting)).isEqualTo(true);
            try {
                return running.get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Exception cause) {
                    throw cause;
                }
                throw e;
            }
        } finally {
            runner.shutdownNow();
        }
    }
}
