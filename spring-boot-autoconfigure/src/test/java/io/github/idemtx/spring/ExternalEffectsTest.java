package io.github.idemtx.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.EffectRecovery;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.micrometer.MicrometerRecoveryMetrics;
import io.github.idemtx.spring.autoconfigure.IdempotencyAutoConfiguration;
import io.github.idemtx.spring.autoconfigure.IdempotencyRecovery;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jooq.autoconfigure.JooqAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

/**
 * External effects declared as beans through {@link ExternalEffects}, and the recovery the starter
 * runs for them, against PostgreSQL with a fake payment provider.
 */
@DatabaseTest
class ExternalEffectsTest {

    private static final TestDatabase DB = TestDatabase.get();

    record ChargeRequest(String account, long amountCents) {}

    record Charge(String chargeId, long amountCents) {}

    /**
     * A payment provider: applies each call, or throws (the outcome unknown) while {@code failCalls};
     * a lookup finds the charge, after waiting at {@code gate} when one is set.
     */
    static final class FakeProvider implements Remote<ChargeRequest, Charge> {
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger lookups = new AtomicInteger();
        volatile boolean failCalls;
        volatile @Nullable CountDownLatch gate;
        final CountDownLatch enteredGate = new CountDownLatch(1);
        final AtomicBoolean interrupted = new AtomicBoolean();

        @Override
        public Reply<Charge> call(Intent<ChargeRequest> intent, Instant deadline) {
            calls.incrementAndGet();
            if (failCalls) {
                throw new IllegalStateException("connection reset: did the charge apply?");
            }
            return Reply.applied(
                    new Charge("ch-" + intent.downstreamKey(), intent.request().amountCents()));
        }

        @Override
        public Lookup<Charge> lookup(Intent<ChargeRequest> intent) throws InterruptedException {
            CountDownLatch g = gate;
            if (g != null && lookups.get() == 0) {
                lookups.incrementAndGet();
                enteredGate.countDown();
                try {
                    g.await();
                } catch (InterruptedException e) {
                    interrupted.set(true);
                    throw e;
                }
            } else {
                lookups.incrementAndGet();
            }
            return Lookup.found(new Charge("found-" + intent.downstreamKey(), 100));
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Effects {
        @Bean
        FakeProvider provider() {
            return new FakeProvider();
        }

        @Bean
        ExternalEffect<ChargeRequest, Charge> charge(ExternalEffects effects, FakeProvider provider) {
            return effects.jsonBuilder("charge", ChargeRequest.class, Charge.class, provider)
                    .lease(Duration.ofSeconds(5)) // the tests end leases by SQL (makeDue), not by waiting
                    .build();
        }
    }

    private static ApplicationContextRunner runner(String schema) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        JooqAutoConfiguration.class,
                        IdempotencyAutoConfiguration.class))
                .withPropertyValues(
                        "spring.datasource.url=" + DB.serverUrl()
                                + (DB.serverUrl().contains("?") ? "&" : "?") + "currentSchema=" + schema,
                        "spring.datasource.username=" + (DB.user() == null ? "" : DB.user()),
                        "spring.datasource.password=" + (DB.password() == null ? "" : DB.password()),
                        "spring.jooq.sql-dialect=POSTGRES",
                        "idemtx.schema=" + schema,
                        // passes in these tests run when a test asks (recoverNow, a restart), not on a clock
                        "idemtx.recovery.interval=1d");
    }

    private static String freshSchema() {
        return "idemtx_fx_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());

    private static RemoteOutcome<Charge> charge(ExternalEffect<ChargeRequest, Charge> effect, Scope scope, String key) {
        return effect.run(scope, IdempotencyKey.of(key), Fingerprint.sha256(key), new ChargeRequest("acc-1", 100));
    }

    /** Ends the leases of the effect's in-flight claims and makes their lookups due, as time would. */
    private static void makeDue(DSLContext dsl, String schema) {
        dsl.execute("update " + schema + ".idempotency_claim set lease_until = now() - interval '1 minute',"
                + " next_lookup_at = null where effect = 'charge' and state = 3");
    }

    private static long count(DSLContext dsl, String schema, String where) {
        return ((Number) dsl.fetchValue("select count(*) from " + schema + ".idempotency_claim where " + where))
                .longValue();
    }

    @Test
    void anEffectBeanAppliesTheContextsPolicySchemaListenersAndJsonMapper() {
        String schema = freshSchema();
        List<CallEvent> seen = new CopyOnWriteArrayList<>();
        runner(schema)
                .withUserConfiguration(Effects.class)
                .withPropertyValues("idemtx.ttl=7d")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(
                        JsonMapper.class,
                        () -> JsonMapper.builder()
                                .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
                                .build())
                .withBean(
                        ExternalEffectCustomizer.class,
                        () -> b -> b.listener(new IdempotencyListener<Void>() {
                            @Override
                            public void callFinished(CallEvent event, @Nullable Void started) {
                                seen.add(event);
                            }
                        }))
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ExternalEffects.class);
                    @SuppressWarnings("unchecked")
                    ExternalEffect<ChargeRequest, Charge> effect = context.getBean(ExternalEffect.class);
                    assertThat(charge(effect, scope, "k1")).isInstanceOf(Outcome.Executed.class);
                    assertThat(charge(effect, scope, "k1")).isInstanceOf(Outcome.Replayed.class);
                    assertThat(context.getBean(FakeProvider.class).calls).hasValue(1);

                    DSLContext dsl = context.getBean(DSLContext.class);
                    // the schema of idemtx.schema, the ttl of idemtx.ttl (the default would be 24h)
                    assertThat(count(dsl, schema, "effect = 'charge' and expires_at > now() + interval '6 days'"))
                            .isEqualTo(1L);
                    // the result went through the context's JsonMapper (snake_case)
                    assertThat((String) dsl.fetchValue(
                                    "select convert_from(result, 'UTF8') from " + schema + ".idempotency_claim"))
                            .contains("\"charge_id\"");
                    // the Micrometer listener and the application's customizer
                    assertThat(context.getBean(MeterRegistry.class)
                                    .get("idemtx.call")
                                    .tag("operation", "effect:charge")
                                    .tag("outcome", "executed")
                                    .timer()
                                    .count())
                            .isEqualTo(1);
                    assertThat(seen).extracting(CallEvent::operation).containsExactly("effect:charge", "effect:charge");
                });
    }

    @Test
    void aCallInsideATransactionalMethodIsRefusedBeforeAnythingIsClaimedOrSent() {
        String schema = freshSchema();
        runner(schema).withUserConfiguration(Effects.class).run(context -> {
            @SuppressWarnings("unchecked")
            ExternalEffect<ChargeRequest, Charge> effect = context.getBean(ExternalEffect.class);
            TransactionTemplate tx = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
            assertThatThrownBy(() -> tx.executeWithoutResult(status -> charge(effect, scope, "inside")))
                    .isInstanceOf(TransactionOwnershipException.class)
                    .hasMessageContaining("SpringTransactionDetector");
            assertThat(context.getBean(FakeProvider.class).calls).hasValue(0);
            assertThat(count(context.getBean(DSLContext.class), schema, "true")).isZero();
            // outside it, the same call runs
            assertThat(charge(effect, scope, "inside")).isInstanceOf(Outcome.Executed.class);
        });
    }

    @Test
    void badEffectNamesAreRefusedNamingTheName() {
        runner(freshSchema()).run(context -> {
            ExternalEffects effects = context.getBean(ExternalEffects.class);
            assertThatThrownBy(() -> effects.json("Charge!", ChargeRequest.class, Charge.class, new FakeProvider()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'Charge!'");
            assertThatThrownBy(() -> effects.json("charge", null, Charge.class, new FakeProvider()))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessageContaining("requestType");
        });
    }

    @Test
    void theRecoveryIsThereWithEffectsAndNotWithoutOrWhenDisabled() {
        runner(freshSchema()).withUserConfiguration(Effects.class).run(context -> {
            assertThat(context).hasSingleBean(IdempotencyRecovery.class);
            IdempotencyRecovery recovery = context.getBean(IdempotencyRecovery.class);
            assertThat(recovery.isRunning()).isTrue();
            assertThat(recovery.effects()).containsExactly("charge");
            assertThat(recovery.batch()).isEqualTo(100);
            assertThat(recovery.workers()).isEqualTo(2);
            assertThat(recovery.shutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
        });
        runner(freshSchema())
                .withUserConfiguration(Effects.class)
                .withPropertyValues(
                        "idemtx.recovery.interval=250ms",
                        "idemtx.recovery.batch=7",
                        "idemtx.recovery.workers=3",
                        "idemtx.recovery.shutdown-timeout=5s")
                .run(context -> {
                    IdempotencyRecovery recovery = context.getBean(IdempotencyRecovery.class);
                    assertThat(recovery.interval()).isEqualTo(Duration.ofMillis(250));
                    assertThat(recovery.batch()).isEqualTo(7);
                    assertThat(recovery.workers()).isEqualTo(3);
                    assertThat(recovery.shutdownTimeout()).isEqualTo(Duration.ofSeconds(5));
                });
        runner(freshSchema())
                .withUserConfiguration(Effects.class)
                .withPropertyValues("idemtx.recovery.enabled=false")
                .run(context -> assertThat(context)
                        .hasNotFailed()
                        .hasSingleBean(ExternalEffect.class)
                        .doesNotHaveBean(IdempotencyRecovery.class));
        runner(freshSchema())
                .run(context -> assertThat(context)
                        .hasNotFailed()
                        .hasSingleBean(ExternalEffects.class)
                        .doesNotHaveBean(IdempotencyRecovery.class));
    }

    @Test
    void anOutOfRangeRecoveryPropertyOrTwoEffectsOfOneNameStopTheStartSayingWhich() {
        for (String property : List.of(
                "idemtx.recovery.interval=0s",
                "idemtx.recovery.batch=0",
                "idemtx.recovery.batch=10001",
                "idemtx.recovery.workers=0",
                "idemtx.recovery.shutdown-timeout=0s")) {
            runner(freshSchema())
                    .withUserConfiguration(Effects.class)
                    .withPropertyValues(property)
                    .run(context -> assertThat(context.getStartupFailure())
                            .as(property)
                            .hasStackTraceContaining(property.substring(0, property.indexOf('='))));
        }
        runner(freshSchema())
                .withUserConfiguration(Effects.class)
                .withBean(
                        "secondCharge",
                        ExternalEffect.class,
                        () -> ExternalEffect.builder(
                                        org.jooq.impl.DSL.using(org.jooq.SQLDialect.POSTGRES),
                                        "charge",
                                        io.github.idemtx.core.ResultCodec.utf8(),
                                        io.github.idemtx.core.ResultCodec.utf8(),
                                        new Remote<String, String>() {
                                            @Override
                                            public Reply<String> call(Intent<String> intent, Instant deadline) {
                                                return Reply.applied("x");
                                            }

                                            @Override
                                            public Lookup<String> lookup(Intent<String> intent) {
                                                return Lookup.absent();
                                            }
                                        })
                                .build())
                .run(context -> assertThat(context.getStartupFailure())
                        .hasStackTraceContaining("two ExternalEffect beans are named 'charge'"));
    }

    @Test
    void recoveryPassesSettleUnknownOutcomesAndAreCountedByEffectAndOutcome() {
        String schema = freshSchema();
        runner(schema)
                .withUserConfiguration(Effects.class)
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> {
                    MeterRegistry meters = context.getBean(MeterRegistry.class);
                    // registered at start, before any claim was taken over
                    for (String outcome : MicrometerRecoveryMetrics.OUTCOMES) {
                        assertThat(meters.get(MicrometerRecoveryMetrics.CLAIMS)
                                        .tags("effect", "charge", "outcome", outcome)
                                        .counter()
                                        .count())
                                .as(outcome)
                                .isZero();
                    }
                    // the passes below are the test's own: the scheduled one (its first runs at start) stays out
                    context.getBean(IdempotencyRecovery.class).stop();
                    @SuppressWarnings("unchecked")
                    ExternalEffect<ChargeRequest, Charge> effect = context.getBean(ExternalEffect.class);
                    FakeProvider provider = context.getBean(FakeProvider.class);
                    provider.failCalls = true;
                    for (int i = 0; i < 3; i++) {
                        assertThat(charge(effect, scope, "u" + i)).isInstanceOf(RemoteOutcome.Unknown.class);
                    }
                    DSLContext dsl = context.getBean(DSLContext.class);
                    makeDue(dsl, schema);

                    IdempotencyRecovery recovery = context.getBean(IdempotencyRecovery.class);
                    assertThat(recovery.recoverNow().get("charge").count(EffectRecovery.Ending.FOUND))
                            .isEqualTo(3);
                    assertThat(meters.get(MicrometerRecoveryMetrics.CLAIMS)
                                    .tags("effect", "charge", "outcome", "found")
                                    .counter()
                                    .count())
                            .isEqualTo(3);
                    assertThat(meters.get(MicrometerRecoveryMetrics.PASS)
                                    .tags("effect", "charge", "outcome", "ok")
                                    .timer()
                                    .count())
                            .isPositive();
                    // what the lookup found is what a retry replays; the remote was not called again
                    assertThat(charge(effect, scope, "u0"))
                            .isInstanceOfSatisfying(
                                    Outcome.Replayed.class,
                                    r -> assertThat(((Charge) r.value()).chargeId())
                                            .startsWith("found-"));
                    assertThat(provider.calls).hasValue(3);
                });
    }

    @Test
    void theScheduledRecoveryRunsPassesOnItsOwn() {
        String schema = freshSchema();
        runner(schema)
                .withUserConfiguration(Effects.class)
                .withPropertyValues("idemtx.recovery.interval=20ms")
                .run(context -> {
                    @SuppressWarnings("unchecked")
                    ExternalEffect<ChargeRequest, Charge> effect = context.getBean(ExternalEffect.class);
                    FakeProvider provider = context.getBean(FakeProvider.class);
                    provider.failCalls = true;
                    assertThat(charge(effect, scope, "later")).isInstanceOf(RemoteOutcome.Unknown.class);
                    DSLContext dsl = context.getBean(DSLContext.class);
                    makeDue(dsl, schema);
                    // waits for the scheduler, however long it takes; a scheduler that never runs fails here
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (count(dsl, schema, "state = 1") == 0 && System.nanoTime() < deadline) {
                        Thread.sleep(10);
                    }
                    assertThat(count(dsl, schema, "state = 1"))
                            .as("settled by a scheduled pass")
                            .isEqualTo(1L);
                    assertThat(provider.lookups).hasValue(1);
                });
    }

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void aStopDuringAPassFinishesTheClaimItIsOnAndHandsTheRestBack(CapturedOutput output) {
        String schema = freshSchema();
        runner(schema)
                .withUserConfiguration(Effects.class)
                .withPropertyValues("idemtx.recovery.shutdown-timeout=5m")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> {
                    @SuppressWarnings("unchecked")
                    ExternalEffect<ChargeRequest, Charge> effect = context.getBean(ExternalEffect.class);
                    FakeProvider provider = context.getBean(FakeProvider.class);
                    IdempotencyRecovery recovery = context.getBean(IdempotencyRecovery.class);
                    recovery.stop();
                    provider.failCalls = true;
                    for (int i = 0; i < 5; i++) {
                        assertThat(charge(effect, scope, "s" + i)).isInstanceOf(RemoteOutcome.Unknown.class);
                    }
                    DSLContext dsl = context.getBean(DSLContext.class);
                    makeDue(dsl, schema);
                    CountDownLatch gate = new CountDownLatch(1);
                    provider.gate = gate;
                    recovery.start(); // its first pass runs at once: the first lookup waits at the gate
                    assertThat(provider.enteredGate.await(60, TimeUnit.SECONDS)).isTrue();

                    CompletableFuture<Void> stopped = CompletableFuture.runAsync(recovery::stop);
                    // the stop waits for the pass (the bound is 5 minutes): let the lookup answer once it is stopping
                    while (recovery.isRunning()) {
                        Thread.onSpinWait();
                    }
                    assertThat(stopped).isNotDone();
                    gate.countDown();
                    stopped.get(60, TimeUnit.SECONDS);

                    MeterRegistry meters = context.getBean(MeterRegistry.class);
                    assertThat(meters.get(MicrometerRecoveryMetrics.CLAIMS)
                                    .tags("effect", "charge", "outcome", "found")
                                    .counter()
                                    .count())
                            .as("the claim it was on is settled")
                            .isEqualTo(1);
                    assertThat(meters.get(MicrometerRecoveryMetrics.CLAIMS)
                                    .tags("effect", "charge", "outcome", "handed_back")
                                    .counter()
                                    .count())
                            .as("the rest of the batch is handed back")
                            .isEqualTo(4);
                    assertThat(provider.lookups).hasValue(1);
                    // handed back: still in flight, lease ended, nothing counted against them, due at once
                    assertThat(count(
                                    dsl,
                                    schema,
                                    "state = 3 and lease_until <= now() and lookups = 0 and next_lookup_at is null"))
                            .isEqualTo(4L);
                    assertThat(output.getAll()).contains("4 claim(s) handed back for the next recoverer");
                    // and the next recoverer takes them over at once
                    assertThat(effect.recovery().recover(10).count(EffectRecovery.Ending.FOUND))
                            .isEqualTo(4);
                });
    }

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void aStopReturnsAfterTheShutdownTimeoutWhenAPassDoesNotEnd(CapturedOutput output) {
        String schema = freshSchema();
        runner(schema)
                .withUserConfiguration(Effects.class)
                .withPropertyValues("idemtx.recovery.shutdown-timeout=100ms")
                .run(context -> {
                    @SuppressWarnings("unchecked")
                    ExternalEffect<ChargeRequest, Charge> effect = context.getBean(ExternalEffect.class);
                    FakeProvider provider = context.getBean(FakeProvider.class);
                    IdempotencyRecovery recovery = context.getBean(IdempotencyRecovery.class);
                    recovery.stop();
                    provider.failCalls = true;
                    for (int i = 0; i < 3; i++) {
                        assertThat(charge(effect, scope, "t" + i)).isInstanceOf(RemoteOutcome.Unknown.class);
                    }
                    DSLContext dsl = context.getBean(DSLContext.class);
                    makeDue(dsl, schema);
                    CountDownLatch never = new CountDownLatch(1);
                    provider.gate = never;
                    recovery.start();
                    assertThat(provider.enteredGate.await(60, TimeUnit.SECONDS)).isTrue();

                    // the lookup never answers by itself: the stop returns all the same, having interrupted it
                    CompletableFuture.runAsync(recovery::stop).get(60, TimeUnit.SECONDS);
                    assertThat(never.getCount()).isEqualTo(1);
                    assertThat(recovery.isRunning()).isFalse();
                    long waited = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (!provider.interrupted.get() && System.nanoTime() < waited) {
                        Thread.sleep(5);
                    }
                    assertThat(provider.interrupted).isTrue();
                    assertThat(output.getAll()).contains("idemtx.recovery.shutdown-timeout (PT0.1S); interrupting");
                    // nothing was settled wrongly: every claim is still in flight for a later recoverer
                    assertThat(count(dsl, schema, "state = 3")).isEqualTo(3L);
                });
    }
}
