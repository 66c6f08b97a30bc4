package io.github.idemtx.jooq.readme;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.readme.ChargeService.Charge;
import io.github.idemtx.jooq.readme.ChargeService.ChargeRequest;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * docs/external-effects.md's example, {@link ChargeService}, run against PostgreSQL and a provider
 * that deduplicates by key: a charge, its retry, a refusal, the key sent to the other front door,
 * and the recoverer's handle closed on shutdown.
 */
@DatabaseTest
class ChargeServiceTest {

    private static final TestDatabase DATABASE = TestDatabase.get();
    private static HikariDataSource pool;
    private static DSLContext dsl;

    /** A provider that charges each key once, refuses amounts over 1000, and finds charges by key. */
    static final class FakeProvider implements ChargeService.Provider {
        final Map<String, Charge> charged = new ConcurrentHashMap<>();
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public Remote.Reply<Charge> charge(ChargeRequest request, String key, Instant deadline) {
            calls.incrementAndGet();
            if (request.amount().compareTo(new BigDecimal("1000")) > 0) {
                return Remote.Reply.refused(Failure.of("declined", "over the limit"));
            }
            return Remote.Reply.applied(
                    charged.computeIfAbsent(key, k -> new Charge("ch_" + k.hashCode(), request.amount())));
        }

        @Override
        public Remote.Lookup<Charge> find(String key) {
            Charge c = charged.get(key);
            return c == null ? Remote.Lookup.absent() : Remote.Lookup.found(c);
        }
    }

    private final FakeProvider provider = new FakeProvider();
    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());
    private final String account = "account-" + UUID.randomUUID();

    @BeforeAll
    static void start() {
        try (HikariDataSource direct = DATABASE.newServerPool(2)) {
            IdempotencySchema.migrate(direct, DATABASE.schema());
        }
        pool = DATABASE.newPool(4);
        dsl = DSL.using(pool, SQLDialect.POSTGRES);
        ChargeService.createHoldTable(dsl, DATABASE.schema());
    }

    @AfterAll
    static void stop() {
        if (pool != null) {
            pool.close();
        }
    }

    @Test
    void chargesOnceAndReplaysTheRetry() throws Exception {
        try (ChargeService service = new ChargeService(dsl, DATABASE.schema(), provider)) {
            IdempotencyKey key = IdempotencyKey.random();
            ChargeRequest request = new ChargeRequest(account, new BigDecimal("12.50"));

            RemoteOutcome<Charge> first = service.charge(scope, key, request);
            RemoteOutcome<Charge> retry = service.charge(scope, key, request);

            assertThat(first).isInstanceOf(Outcome.Executed.class);
            assertThat(retry)
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class,
                            r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<?>) first).value()));
            assertThat(provider.calls).hasValue(1);
            assertThat(holds(account, "charged")).isEqualTo(1);
        }
    }

    @Test
    void aRefusalReleasesTheHoldAndIsReplayed() throws Exception {
        try (ChargeService service = new ChargeService(dsl, DATABASE.schema(), provider)) {
            IdempotencyKey key = IdempotencyKey.random();
            ChargeRequest request = new ChargeRequest(account, new BigDecimal("5000.00"));

            assertThat(service.charge(scope, key, request)).isInstanceOf(Outcome.Rejected.class);
            assertThat(service.charge(scope, key, request))
                    .isInstanceOfSatisfying(
                            Outcome.Rejected.class,
                            r -> assertThat(r.replayed()).isTrue());
            assertThat(provider.calls).hasValue(1);
            assertThat(holds(account, "released")).isEqualTo(1);
        }
    }

    @Test
    void theSameKeyOnBothFrontDoorsIsAFingerprintMismatch() throws Exception {
        try (ChargeService service = new ChargeService(dsl, DATABASE.schema(), provider)) {
            IdempotencyKey key = IdempotencyKey.random();
            ChargeRequest request = new ChargeRequest(account, new BigDecimal("1.00"));
            assertThat(service.charge(scope, key, request)).isInstanceOf(Outcome.Executed.class);

            IdempotentTransaction<String> transactions = IdempotentTransaction.builder(
                            dsl, io.github.idemtx.core.ResultCodec.utf8())
                    .schema(DATABASE.schema())
                    .build();
            AtomicInteger runs = new AtomicInteger();
            Outcome<String> other = transactions.run(
                    scope,
                    key,
                    io.github.idemtx.core.Fingerprint.sha256(account + "|1.00"),
                    tx -> "ran " + runs.incrementAndGet());

            assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
            assertThat(runs).hasValue(0);
        }
    }

    @Test
    void closingTheServiceStopsItsRecoverer() throws Exception {
        java.util.Set<Thread> before = recoverers();
        ChargeService service = new ChargeService(dsl, DATABASE.schema(), provider);
        java.util.Set<Thread> mine = recoverers();
        mine.removeAll(before);
        assertThat(mine).as("the service's recoverer runs").hasSize(1);
        service.close();
        // the pool's worker thread ends just after the pool reports itself terminated: give it the
        // moment it needs, not a reprieve (a recoverer close left running would still be alive then)
        for (Thread t : mine) {
            t.join(10_000);
        }
        assertThat(mine).as("closing the service stopped its recoverer").noneMatch(Thread::isAlive);
    }

    /** The holds of {@code account} in {@code state}. */
    private static int holds(String account, String state) {
        return dsl.resultQuery(
                        "SELECT count(*)::int FROM " + DATABASE.schema()
                                + ".charge_hold WHERE account = ? AND state = ?",
                        account,
                        state)
                .fetchSingle()
                .get(0, Integer.class);
    }

    private static java.util.Set<Thread> recoverers() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("idemtx-recover-charge") && t.isAlive())
                .collect(java.util.stream.Collectors.toCollection(java.util.HashSet::new));
    }
}
