package io.github.idemtx.jooq.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.ThrowawayCluster;
import io.github.idemtx.db.testing.ThrowawayCluster.StopMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.Collectors;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;

/**
 * Restarts the server under a load of {@code run} calls from a HikariCP pool, on a cluster of the
 * test's own ({@link ThrowawayCluster}), and checks the promise that matters across it: every call
 * returns an outcome or throws, every Executed or Replayed outcome is backed by exactly one effect,
 * and a client that retries the calls that threw, with the same key, ends with each intent applied
 * exactly once and nothing applied that nobody asked for.
 */
@DisabledIfSystemProperty(
        named = "idemtx.test.pgbouncer",
        matches = "true",
        disabledReason = "a server of its own, reached directly: the PgBouncer executions would repeat the direct ones")
@DatabaseTest
class ServerRestartTest {

    private static final int THREADS = 12;
    private static final int CALLS = 3000;
    private static final int RESTARTS = 4;
    /** The pool's wait for a connection; longer than the short downtimes, shorter than the long ones. */
    private static final long CONNECTION_TIMEOUT_MILLIS = 1_500;
    /**
     * How long the server stays down between stop and start, per restart: briefly (the callers
     * waiting for a connection get one once it is back), and past the pool's connection timeout
     * (they give up with an exception, and the pool must still recover).
     */
    private static final long[] DOWNTIME_MILLIS = {250, 2 * CONNECTION_TIMEOUT_MILLIS};

    private static final int PROBES = 100;
    private static final int MAX_RETRIES_PER_KEY = 20;
    private static final String SCHEMA = "restart_test";
    private static final String EFFECT = SCHEMA + ".effect";

    private final Scope scope = Scope.of("tenant-restart");
    private final Fingerprint fingerprint = Fingerprint.sha256("POST /effects");
    private ThrowawayCluster cluster;
    private HikariDataSource pool;
    private DSLContext dsl;
    private IdempotentTransaction<String> idem;

    @BeforeEach
    void startOwnServer() {
        cluster = ThrowawayCluster.start();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(cluster.jdbcUrl());
        config.setUsername(cluster.user());
        config.setMaximumPoolSize(THREADS);
        config.setPoolName("restart-test");
        // short waits, so calls fail fast while the server is down and the pool refills once it is back
        config.setConnectionTimeout(CONNECTION_TIMEOUT_MILLIS);
        config.setValidationTimeout(1_000);
        config.addDataSourceProperty("connectTimeout", "5");
        config.addDataSourceProperty("socketTimeout", "60"); // a guard against a hang, never reached when all is well
        config.addDataSourceProperty("tcpKeepAlive", "true");
        pool = new HikariDataSource(config);
        ClaimPartitions partitions = Db.migrate(pool, SCHEMA);
        dsl = DSL.using(pool, SQLDialect.POSTGRES);
        dsl.execute(
                "CREATE TABLE " + EFFECT + " (id bigserial PRIMARY KEY, scope text NOT NULL, idem_key text NOT NULL)");
        idem = Db.builderIn(dsl, ResultCodec.utf8(), SCHEMA, partitions).build();
    }

    @AfterEach
    void removeOwnServer() {
        try {
            if (pool != null) {
                pool.close();
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    @Test
    void everyOutcomeReturnedAcrossFastRestartsIsBackedByExactlyOneEffect() throws Exception {
        loadAcrossRestarts(StopMode.FAST);
    }

    @Test
    void everyOutcomeReturnedAcrossCrashesIsBackedByExactlyOneEffect() throws Exception {
        loadAcrossRestarts(StopMode.IMMEDIATE);
    }

    /** What one call returned or threw, and how many restarts had completed when it started. */
    private record Call(IdempotencyKey key, int epoch, Outcome<String> outcome, Throwable error) {}

    private void loadAcrossRestarts(StopMode mode) throws Exception {
        AtomicReferenceArray<Call> calls = new AtomicReferenceArray<>(CALLS);
        AtomicInteger next = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        AtomicInteger epoch = new AtomicInteger();
        AtomicBoolean restarterFailed = new AtomicBoolean();

        List<Callable<Integer>> tasks = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            tasks.add(() -> {
                int made = 0;
                for (int i = next.getAndIncrement(); i < CALLS && !restarterFailed.get(); i = next.getAndIncrement()) {
                    IdempotencyKey key = Db.key("call-" + i);
                    int startedIn = epoch.get();
                    try {
                        calls.set(i, new Call(key, startedIn, call(key), null));
                    } catch (RuntimeException e) {
                        calls.set(i, new Call(key, startedIn, null, e));
                    }
                    done.incrementAndGet();
                    made++;
                }
                return made;
            });
        }
        tasks.add(() -> {
            try {
                for (int r = 1; r <= RESTARTS; r++) {
                    int due = CALLS * r / (RESTARTS + 1);
                    while (done.get() < due) {
                        Thread.sleep(2);
                    }
                    cluster.stop(mode);
                    Thread.sleep(DOWNTIME_MILLIS[(r - 1) % DOWNTIME_MILLIS.length]);
                    cluster.startAgain();
                    epoch.incrementAndGet();
                }
                return RESTARTS;
            } catch (Exception | Error e) {
                restarterFailed.set(true); // a server that stays down would only make the load time out, call by call
                throw e;
            }
        });

        List<Concurrently.Result<Integer>> finished = Concurrently.run(tasks);

        assertThat(finished)
                .as("load threads and the restarter ran to the end (server log: %s)", cluster.logTail(4000))
                .extracting(Concurrently.Result::error)
                .containsOnlyNulls();
        assertThat(epoch).as("restarts done").hasValue(RESTARTS);
        List<Call> load = new ArrayList<>();
        for (int i = 0; i < CALLS; i++) {
            assertThat(calls.get(i))
                    .as("call %d returned an outcome or threw", i)
                    .isNotNull();
            load.add(calls.get(i));
        }
        Map<String, Long> errorsByKind = load.stream()
                .filter(c -> c.error() != null)
                .collect(Collectors.groupingBy(c -> kind(c.error()), TreeMap::new, Collectors.counting()));
        List<Call> afterLast = load.stream().filter(c -> c.epoch() == RESTARTS).toList();
        StringBuilder summary = new StringBuilder()
                .append(String.format(
                        "ServerRestartTest[%s x%d, %s]: %d calls on %d threads: %d Executed, %d exceptions %s; %d after the last restart (%d threw)",
                        mode.pgCtlName(),
                        RESTARTS,
                        cluster.description(),
                        CALLS,
                        THREADS,
                        load.stream().filter(c -> c.outcome() != null).count(),
                        load.stream().filter(c -> c.error() != null).count(),
                        errorsByKind,
                        afterLast.size(),
                        afterLast.stream().filter(c -> c.error() != null).count()));
        try {
            checkLoadAndRetries(load, afterLast, summary);
        } finally {
            System.out.println(summary);
        }
    }

    private void checkLoadAndRetries(List<Call> load, List<Call> afterLast, StringBuilder summary)
            throws InterruptedException {
        // a call fails only because the server or the connection went away, or the pool gave up waiting
        assertThat(load)
                .filteredOn(c -> c.error() != null)
                .allSatisfy(c -> assertThat(isConnectionFailure(c.error()))
                        .as("%s threw a connection failure, not %s", c.key(), c.error())
                        .isTrue());
        // each key was sent once during the load: the only outcome it can have is Executed
        assertThat(load)
                .filteredOn(c -> c.outcome() != null)
                .allSatisfy(c ->
                        assertThat(c.outcome()).as("outcome of %s", c.key()).isInstanceOf(Outcome.Executed.class));

        // the pool recovered: calls that started after the last restart succeeded, and a fresh batch
        // afterwards succeeds entirely. How many calls fail first is a matter of timing: after a
        // failed connection attempt HikariCP's connection adder backs off (doubling, up to 5 s), so
        // after a long outage the pool may stay empty for seconds once the server is back.
        assertThat(afterLast)
                .as("calls started after the last restart")
                .isNotEmpty()
                .anySatisfy(c -> assertThat(c.outcome()).isNotNull());
        Map<IdempotencyKey, Outcome<String>> probes = new HashMap<>();
        for (int i = 0; i < PROBES; i++) {
            IdempotencyKey key = Db.key("probe-" + i);
            probes.put(key, call(key));
        }
        assertThat(probes.values()).allSatisfy(o -> assertThat(o).isInstanceOf(Outcome.Executed.class));
        summary.append(String.format("; %d/%d probes Executed", probes.size(), PROBES));

        // the client's retry: each call that threw is sent again with its key until it gets an outcome
        Map<IdempotencyKey, Outcome<String>> retried = new HashMap<>();
        int retryAttempts = 0;
        for (Call c : load) {
            if (c.error() == null) {
                continue;
            }
            Outcome<String> outcome = null;
            RuntimeException last = null;
            for (int attempt = 1; outcome == null && attempt <= MAX_RETRIES_PER_KEY; attempt++) {
                retryAttempts++;
                try {
                    outcome = call(c.key());
                } catch (RuntimeException e) {
                    last = e;
                    Thread.sleep(100);
                }
            }
            assertThat(outcome)
                    .as("retries of %s got an outcome (last failure: %s)", c.key(), last)
                    .isNotNull();
            assertThat(outcome)
                    .as("retried outcome of %s", c.key())
                    .isInstanceOfAny(Outcome.Executed.class, Outcome.Replayed.class);
            retried.put(c.key(), outcome);
        }
        summary.append(String.format(
                "; retried %d keys in %d attempts: %d Executed, %d Replayed (committed although the call threw)",
                retried.size(),
                retryAttempts,
                retried.values().stream()
                        .filter(o -> o instanceof Outcome.Executed)
                        .count(),
                retried.values().stream()
                        .filter(o -> o instanceof Outcome.Replayed)
                        .count()));

        // every key the test issued ends with one outcome; check each against the database
        Map<IdempotencyKey, Outcome<String>> finalOutcomes = new HashMap<>(probes);
        finalOutcomes.putAll(retried);
        load.stream().filter(c -> c.outcome() != null).forEach(c -> finalOutcomes.put(c.key(), c.outcome()));
        Map<String, List<Long>> effects = effectsByKey();
        Map<String, ClaimRow> claims = claimsByKey();
        Set<String> issued =
                finalOutcomes.keySet().stream().map(IdempotencyKey::value).collect(Collectors.toSet());

        assertThat(effects.keySet()).as("effects only for keys the test issued").isSubsetOf(issued);
        assertThat(claims.keySet()).as("claims only for keys the test issued").isSubsetOf(issued);
        assertThat(effects)
                .as("no key has more than one effect")
                .allSatisfy(
                        (key, ids) -> assertThat(ids).as("effects of %s", key).hasSize(1));
        for (Map.Entry<IdempotencyKey, Outcome<String>> e : finalOutcomes.entrySet()) {
            String key = e.getKey().value();
            String value = switch (e.getValue()) {
                case Outcome.Executed<String> x -> x.value();
                case Outcome.Replayed<String> x -> x.value();
                default -> throw new AssertionError("unexpected outcome for " + key + ": " + e.getValue());
            };
            assertThat(effects.get(key))
                    .as("effects of %s, whose outcome was %s", key, e.getValue())
                    .hasSize(1);
            assertThat(value)
                    .as("the value returned for %s names its one effect", key)
                    .isEqualTo("effect-" + effects.get(key).get(0));
            assertThat(claims.get(key)).as("claim of %s", key).isEqualTo(new ClaimRow((short) 1, value));
        }
        assertThat(effects).hasSize(finalOutcomes.size());
        assertThat(claims).hasSize(finalOutcomes.size());
        summary.append(
                String.format("; %d effects, %d claims, one each per key issued", effects.size(), claims.size()));
    }

    private Outcome<String> call(IdempotencyKey key) {
        return idem.run(
                scope,
                key,
                fingerprint,
                tx -> "effect-"
                        + tx.resultQuery(
                                        "INSERT INTO " + EFFECT + " (scope, idem_key) VALUES (?, ?) RETURNING id",
                                        scope.value(),
                                        key.value())
                                .fetchSingle()
                                .get(0, Long.class));
    }

    private record ClaimRow(short state, String result) {}

    private Map<String, List<Long>> effectsByKey() {
        Map<String, List<Long>> byKey = new HashMap<>();
        for (Record r : dsl.resultQuery("SELECT scope, idem_key, id FROM " + EFFECT + " ORDER BY id")
                .fetch()) {
            assertThat(r.get(0, String.class))
                    .as("scope of effect %s", r.get(2))
                    .isEqualTo(scope.value());
            byKey.computeIfAbsent(r.get(1, String.class), k -> new ArrayList<>())
                    .add(r.get(2, Long.class));
        }
        return byKey;
    }

    private Map<String, ClaimRow> claimsByKey() {
        Map<String, ClaimRow> byKey = new HashMap<>();
        Set<String> seen = new HashSet<>();
        for (Record r : dsl.resultQuery("SELECT scope, idem_key, state, result FROM " + SCHEMA + ".idempotency_claim")
                .fetch()) {
            assertThat(r.get(0, String.class)).isEqualTo(scope.value());
            String key = r.get(1, String.class);
            assertThat(seen.add(key)).as("one claim row for %s", key).isTrue();
            byte[] result = r.get(3, byte[].class);
            byKey.put(
                    key,
                    new ClaimRow(
                            r.get(2, Short.class), result == null ? null : new String(result, StandardCharsets.UTF_8)));
        }
        return byKey;
    }

    /**
     * Whether the failure is the server or the connection going away (SQLSTATE class 08, or 57P0x:
     * terminated by a shutdown, or refused while starting up or in recovery), or the pool's wait for
     * a connection running out.
     */
    private static boolean isConnectionFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SQLTransientConnectionException) {
                return true;
            }
            if (c instanceof SQLException sql
                    && sql.getSQLState() != null
                    && (sql.getSQLState().startsWith("08") || sql.getSQLState().startsWith("57P0"))) {
                return true;
            }
        }
        return false;
    }

    /**
     * For the summary: the outermost SQLException in the cause chain (else the exception itself), by
     * class and SQLSTATE, e.g. {@code PSQLException 57P01}, or {@code SQLTransientConnectionException}
     * when the pool's wait for a connection timed out.
     */
    private static String kind(Throwable t) {
        Throwable pick = t;
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SQLException) {
                pick = c;
                break;
            }
        }
        String state = pick instanceof SQLException sql ? sql.getSQLState() : null;
        return pick.getClass().getSimpleName() + (state == null ? "" : " " + state);
    }
}
