package io.github.idemtx.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.util.UUID;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Real calls against PostgreSQL, observed: timers and counters by outcome, bounded tags, no scope by default. */
@DatabaseTest
class MicrometerIdempotencyListenerTest {

    static final TestDatabase DB = TestDatabase.get();
    static com.zaxxer.hikari.HikariDataSource pool;

    @BeforeAll
    static void migrate() {
        pool = DB.newPool(4);
        IdempotencySchema.migrate(DB.dataSource(), DB.schema());
    }

    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());
    private final Fingerprint fingerprint = Fingerprint.sha256("request");

    private IdempotentTransaction<String> idem(MicrometerIdempotencyListener listener) {
        return IdempotentTransaction.builder(DSL.using(pool, SQLDialect.POSTGRES), ResultCodec.utf8())
                .schema(DB.schema())
                .listener(listener)
                .build();
    }

    @Test
    void callsAreTimedByOutcomeWithBoundedTagsAndNoScope() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        IdempotentTransaction<String> idem = idem(MicrometerIdempotencyListener.of(meters));
        IdempotencyKey key = IdempotencyKey.of(UUID.randomUUID().toString());
        idem.run(scope, key, fingerprint, tx -> "one");
        idem.run(scope, key, fingerprint, tx -> "never");
        idem.run(scope, key, fingerprint, tx -> "never");
        idem.run(scope, key, Fingerprint.sha256("other"), tx -> "never");
        idem.run(scope, IdempotencyKey.of(UUID.randomUUID().toString()), fingerprint, tx -> {
            throw new Rejection("no", "refused");
        });

        assertThat(meters.get("idemtx.call").tag("outcome", "executed").timer().count())
                .isEqualTo(1);
        assertThat(meters.get("idemtx.call").tag("outcome", "replayed").timer().count())
                .isEqualTo(2);
        assertThat(meters.get("idemtx.call")
                        .tag("outcome", "fingerprint_mismatch")
                        .timer()
                        .count())
                .isEqualTo(1);
        assertThat(meters.get("idemtx.call").tag("outcome", "rejected").timer().count())
                .isEqualTo(1);
        assertThat(meters.get("idemtx.claims.changed")
                        .tag("operation", "transaction")
                        .tag("kind", "created")
                        .counter()
                        .count())
                .as("the executed call and the first rejection recorded claims; replays did not")
                .isEqualTo(2);
        assertThat(meters.get("idemtx.call.wait")
                        .tag("outcome", "executed")
                        .timer()
                        .count())
                .as("no call waited")
                .isZero();
        for (Meter m : meters.getMeters()) {
            assertThat(m.getId().getTags()).allSatisfy(t -> {
                assertThat(t.getValue()).doesNotContain(scope.value()).doesNotContain(key.value());
                assertThat(t.getKey()).isIn("operation", "outcome", "joined", "exception", "error", "kind", "order");
            });
        }
    }

    @Test
    void aScopeTagOnlyWhenMappedOnPurposeAndPurgesCounted() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        MicrometerIdempotencyListener listener = MicrometerIdempotencyListener.builder(meters)
                .scopeTag(s -> "plan-a")
                .build();
        IdempotentTransaction<String> idem = idem(listener);
        idem.run(scope, IdempotencyKey.of(UUID.randomUUID().toString()), fingerprint, tx -> "v");
        assertThat(meters.get("idemtx.call").tag("scope", "plan-a").timer().count())
                .isEqualTo(1);
        idem.purgeExpired(10);
        assertThat(meters.get("idemtx.purge").tag("outcome", "ok").timer().count())
                .isEqualTo(1);
        assertThat(meters.find("idemtx.purge.deleted").counter()).isNotNull();
    }

    @Test
    void changesOfTheAdaptiveOrderAreCountedAndTheTransactionsReadingFirstGauged() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        MicrometerIdempotencyListener listener = MicrometerIdempotencyListener.of(meters);
        assertThat(meters.get("idemtx.claim.order.claim.first").gauge().value()).isZero();

        listener.claimOrderChanged(io.github.idemtx.core.ClaimOrderEvent.toClaimFirst(0.3, 0.15));
        listener.claimOrderChanged(
                io.github.idemtx.core.ClaimOrderEvent.toClaimFirst(0.2, 0.1)); // a second transaction
        assertThat(meters.get("idemtx.claim.order.claim.first").gauge().value()).isEqualTo(2);
        listener.claimOrderChanged(io.github.idemtx.core.ClaimOrderEvent.toWorkFirst(0.01, 0.15));

        assertThat(meters.get("idemtx.claim.order.claim.first").gauge().value()).isEqualTo(1);
        assertThat(meters.get("idemtx.claim.order.changes")
                        .tag("order", "claim-first")
                        .counter()
                        .count())
                .isEqualTo(2);
        assertThat(meters.get("idemtx.claim.order.changes")
                        .tag("order", "work-first")
                        .counter()
                        .count())
                .isEqualTo(1);

        MicrometerIdempotencyListener second = MicrometerIdempotencyListener.of(meters);
        second.claimOrderChanged(io.github.idemtx.core.ClaimOrderEvent.toClaimFirst(0.4, 0.15));
        assertThat(meters.get("idemtx.claim.order.claim.first").gauge().value())
                .as("a second listener on the same registry counts in the same gauge")
                .isEqualTo(2);
    }

    @Test
    void eachCallIsOneObservationForTracing() {
        TestObservationRegistry observations = TestObservationRegistry.create();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        IdempotentTransaction<String> idem = idem(MicrometerIdempotencyListener.builder(meters)
                .observations(observations)
                .build());
        idem.run(scope, IdempotencyKey.of(UUID.randomUUID().toString()), fingerprint, tx -> "traced");
        TestObservationRegistryAssert.assertThat(observations)
                .hasObservationWithNameEqualTo("idemtx.call")
                .that()
                .hasLowCardinalityKeyValue("outcome", "executed")
                .hasLowCardinalityKeyValue("operation", "transaction")
                .hasBeenStarted()
                .hasBeenStopped();
    }
}
