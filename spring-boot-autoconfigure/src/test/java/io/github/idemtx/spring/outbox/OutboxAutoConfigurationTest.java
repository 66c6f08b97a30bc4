package io.github.idemtx.spring.outbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.outbox.DeliveryRefusedException;
import io.github.idemtx.jooq.outbox.Outbox;
import io.github.idemtx.jooq.outbox.OutboxDelivery;
import io.github.idemtx.jooq.outbox.OutboxRelay;
import io.github.idemtx.jooq.outbox.OutboxStatus;
import io.github.idemtx.jooq.outbox.OutboxTransport;
import io.github.idemtx.micrometer.MicrometerOutboxMetrics;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.actuate.OutboxHealthIndicator;
import io.github.idemtx.spring.autoconfigure.IdempotencyAutoConfiguration;
import io.github.idemtx.spring.autoconfigure.IdempotencyOutboxAutoConfiguration;
import io.github.idemtx.spring.autoconfigure.IdempotencyOutboxRelay;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jooq.autoconfigure.JooqAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The outbox in a Boot context: the beans, the relay run with the context and stopped with it, its properties, meters and health. */
@DatabaseTest
class OutboxAutoConfigurationTest {

    private static final TestDatabase DB = TestDatabase.get();

    /** The transport the application defines: records, or refuses while told to. */
    static final class Recording implements OutboxTransport {
        final List<OutboxDelivery> sent = new CopyOnWriteArrayList<>();
        volatile boolean refuse;

        @Override
        public void send(OutboxDelivery delivery) {
            if (refuse) {
                throw new DeliveryRefusedException("422: unknown account");
            }
            sent.add(delivery);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class WithTransport {
        @Bean
        Recording transport() {
            return new Recording();
        }

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    private static ApplicationContextRunner runner(String schema) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        JooqAutoConfiguration.class,
                        IdempotencyAutoConfiguration.class,
                        IdempotencyOutboxAutoConfiguration.class))
                .withPropertyValues(
                        "spring.datasource.url=" + DB.serverUrl()
                                + (DB.serverUrl().contains("?") ? "&" : "?") + "currentSchema=" + schema,
                        "spring.datasource.username=" + (DB.user() == null ? "" : DB.user()),
                        "spring.datasource.password=" + (DB.password() == null ? "" : DB.password()),
                        "spring.jooq.sql-dialect=POSTGRES",
                        "idemtx.schema=" + schema);
    }

    private static String freshSchema() {
        return "idemtx_outbox_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    private static UUID commit(IdempotentTransactions transactions, Outbox outbox, String name) {
        Scope scope = Scope.of("tenant");
        IdempotencyKey key = IdempotencyKey.random();
        transactions.strings().run(scope, key, Fingerprint.sha256(name), tx -> {
            outbox.add(tx, name, "ledger.events", name.getBytes(UTF_8));
            return "ok";
        });
        return Outbox.messageId(scope, key, name);
    }

    private static void await(java.util.function.BooleanSupplier condition) throws InterruptedException {
        Instant deadline = Instant.now().plusSeconds(30);
        while (!condition.getAsBoolean() && Instant.now().isBefore(deadline)) {
            Thread.sleep(50);
        }
    }

    @Test
    void withoutATransportThereIsAnOutboxButNoRelay() {
        runner(freshSchema()).run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(Outbox.class);
            assertThat(context).doesNotHaveBean(OutboxRelay.class).doesNotHaveBean(IdempotencyOutboxRelay.class);
            assertThat(context).hasSingleBean(OutboxHealthIndicator.class);
        });
    }

    @Test
    void theRelayRunsWithTheContextDeliversWhatCommitsAndStopsWithIt() throws Exception {
        IdempotencyOutboxRelay[] lifecycle = new IdempotencyOutboxRelay[1];
        runner(freshSchema())
                .withUserConfiguration(WithTransport.class)
                .withPropertyValues(
                        "idemtx.outbox.relay.poll-interval=50ms",
                        "idemtx.outbox.relay.owner=boot-relay-1",
                        "idemtx.outbox.relay.batch-size=10")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(OutboxRelay.class);
                    lifecycle[0] = context.getBean(IdempotencyOutboxRelay.class);
                    assertThat(lifecycle[0].isRunning()).isTrue();
                    assertThat(context.getBean(OutboxRelay.class).owner()).isEqualTo("boot-relay-1");
                    Outbox outbox = context.getBean(Outbox.class);
                    Recording transport = context.getBean(Recording.class);

                    UUID id = commit(context.getBean(IdempotentTransactions.class), outbox, "applied");
                    await(() -> outbox.find(id).orElseThrow().status() == OutboxStatus.DELIVERED);

                    assertThat(transport.sent)
                            .extracting(OutboxDelivery::messageId)
                            .containsExactly(id);
                    MeterRegistry meters = context.getBean(MeterRegistry.class);
                    assertThat(meters.get(MicrometerOutboxMetrics.DELIVERY)
                                    .tags("destination", "ledger.events", "outcome", "delivered")
                                    .timer()
                                    .count())
                            .isEqualTo(1);
                    assertThat(meters.get(MicrometerOutboxMetrics.BACKLOG)
                                    .gauge()
                                    .value())
                            .isZero();
                });
        assertThat(lifecycle[0].isRunning())
                .as("stopped when the context closed")
                .isFalse();
        assertThat(lifecycle[0].relay().isRunning()).isFalse();
    }

    @Test
    void theRelayCanBeLeftOut() {
        runner(freshSchema())
                .withUserConfiguration(WithTransport.class)
                .withPropertyValues("idemtx.outbox.relay.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(Outbox.class);
                    assertThat(context).doesNotHaveBean(OutboxRelay.class);
                });
    }

    @Test
    void theHealthShowsTheBacklogAndAFailedMessagePastItsThreshold() throws Exception {
        runner(freshSchema())
                .withUserConfiguration(WithTransport.class)
                .withPropertyValues(
                        "idemtx.outbox.relay.poll-interval=50ms", "idemtx.outbox.health.max-pending-age=10m")
                .run(context -> {
                    OutboxHealthIndicator indicator = context.getBean(OutboxHealthIndicator.class);
                    Health healthy = indicator.health(true);
                    assertThat(healthy.getStatus()).isEqualTo(Status.UP);
                    assertThat(healthy.getDetails())
                            .containsEntry("pending", 0L)
                            .containsEntry("failed", 0L);

                    context.getBean(Recording.class).refuse = true;
                    Outbox outbox = context.getBean(Outbox.class);
                    UUID id = commit(context.getBean(IdempotentTransactions.class), outbox, "refused");
                    await(() -> outbox.find(id).orElseThrow().status() == OutboxStatus.FAILED);

                    Health warned = indicator.health(true);
                    assertThat(warned.getStatus()).isEqualTo(new Status("WARNING"));
                    assertThat(warned.getDetails()).containsEntry("failed", 1L);
                    assertThat((String) warned.getDetails().get("failedMessages"))
                            .contains("wait for an operator");
                    assertThat(outbox.find(id).orElseThrow().lastError()).contains("422: unknown account");
                });
        runner(freshSchema())
                .withPropertyValues("management.health.outbox.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(OutboxHealthIndicator.class));
    }

    @Test
    void badRelayPropertiesFailTheStartNamingTheSetting() {
        runner(freshSchema())
                .withUserConfiguration(WithTransport.class)
                .withPropertyValues("idemtx.outbox.relay.batch-size=0")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("batchSize must be between 1 and 1000"));
    }

    @Test
    void everyOutboxPropertyHasMetadataForIdes() throws Exception {
        String metadata;
        try (var in = getClass().getClassLoader().getResourceAsStream("META-INF/spring-configuration-metadata.json")) {
            assertThat(in).isNotNull();
            metadata = new String(in.readAllBytes(), UTF_8);
        }
        for (String property : List.of(
                "idemtx.outbox.relay.enabled",
                "idemtx.outbox.relay.owner",
                "idemtx.outbox.relay.batch-size",
                "idemtx.outbox.relay.poll-interval",
                "idemtx.outbox.relay.lease",
                "idemtx.outbox.relay.max-attempts",
                "idemtx.outbox.relay.initial-backoff",
                "idemtx.outbox.relay.max-backoff",
                "idemtx.outbox.relay.retention",
                "idemtx.outbox.relay.purge-interval",
                "idemtx.outbox.relay.shutdown-timeout",
                "idemtx.outbox.health.max-failed",
                "idemtx.outbox.health.max-pending-age",
                "idemtx.outbox.health.exceeded-status")) {
            assertThat(metadata).as(property).contains("\"name\": \"" + property + "\"");
        }
        assertThat(Duration.parse("PT5M")).isEqualTo(Duration.ofMinutes(5));
    }
}
