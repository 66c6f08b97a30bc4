package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.jooq.outbox.Outbox;
import io.github.idemtx.jooq.outbox.OutboxRelay;
import io.github.idemtx.jooq.outbox.OutboxTransport;
import io.github.idemtx.spring.actuate.OutboxHealthIndicator;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The outbox in Spring Boot: an {@link Outbox} bean over the application's {@code DSLContext} (in
 * {@code idemtx.schema}, which the starter migrates, the outbox table included); given an
 * {@link OutboxTransport} bean (the application's, e.g. {@code RabbitMqOutboxTransport} or
 * {@code HttpOutboxTransport}), an {@link OutboxRelay} configured by {@code idemtx.outbox.relay.*},
 * run with the context and stopped gracefully before it closes ({@link IdempotencyOutboxRelay};
 * {@code idemtx.outbox.relay.enabled=false} leaves it out); with idemtx-micrometer and a
 * {@code MeterRegistry}, the outbox's meters ({@code MicrometerOutboxMetrics}); with Actuator, the
 * {@code outbox} health indicator ({@code management.health.outbox.enabled}, thresholds in
 * {@code idemtx.outbox.health.*}). Every bean backs off when the application defines its own.
 */
@AutoConfiguration(after = IdempotencyAutoConfiguration.class)
@ConditionalOnClass({DSLContext.class, Outbox.class})
@ConditionalOnBean(DSLContext.class)
@EnableConfigurationProperties({IdempotencyProperties.class, IdempotencyOutboxProperties.class})
public class IdempotencyOutboxAutoConfiguration {

    /** Created by Spring Boot's auto-configuration, not by applications. */
    public IdempotencyOutboxAutoConfiguration() {}

    @Bean
    @ConditionalOnMissingBean
    Outbox idempotencyOutbox(
            DSLContext dsl, IdempotencyProperties properties, ObjectProvider<OutboxListener> listeners) {
        Outbox.Builder b = Outbox.builder(dsl).schema(properties.getSchema());
        listeners.orderedStream().forEach(l -> listen(l, b::listener));
        return b.build();
    }

    private static void listen(OutboxListener l, java.util.function.Consumer<IdempotencyListener<?>> to) {
        IdempotencyListener<?> listener = l.listener();
        if (listener != null) {
            to.accept(listener);
        }
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(OutboxTransport.class)
    @ConditionalOnProperty(
            prefix = "idemtx.outbox.relay",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    OutboxRelay idempotencyOutboxRelay(
            DSLContext dsl,
            OutboxTransport transport,
            IdempotencyProperties properties,
            IdempotencyOutboxProperties outbox,
            ObjectProvider<OutboxListener> listeners) {
        IdempotencyOutboxProperties.Relay r = outbox.getRelay();
        OutboxRelay.Builder b = OutboxRelay.builder(dsl, transport)
                .schema(properties.getSchema())
                .batchSize(r.getBatchSize())
                .pollInterval(r.getPollInterval())
                .lease(r.getLease())
                .maxAttempts(r.getMaxAttempts())
                .initialBackoff(r.getInitialBackoff())
                .maxBackoff(r.getMaxBackoff())
                .retention(r.getRetention())
                .purgeInterval(r.getPurgeInterval())
                .shutdownTimeout(r.getShutdownTimeout());
        if (!r.getOwner().isBlank()) {
            b.owner(r.getOwner());
        }
        listeners.orderedStream().forEach(l -> listen(l, b::listener));
        return b.build();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(OutboxRelay.class)
    IdempotencyOutboxRelay idempotencyOutboxRelayLifecycle(OutboxRelay relay, IdempotencyOutboxProperties outbox) {
        return new IdempotencyOutboxRelay(relay, outbox.getRelay().getShutdownTimeout());
    }

    /** A listener the outbox and its relay are given: how the metrics below reach them. */
    @FunctionalInterface
    interface OutboxListener {
        /** {@return the listener; null when there is none after all (no single MeterRegistry)} */
        @Nullable
        IdempotencyListener<?> listener();
    }

    /** With idemtx-micrometer and a {@code MeterRegistry}: the outbox's meters. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {"io.github.idemtx.micrometer.MicrometerOutboxMetrics", "io.micrometer.core.instrument.MeterRegistry"
            })
    @ConditionalOnProperty(prefix = "idemtx.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class Metrics {
        // the registry is looked up when the outbox and relay are made, not when conditions are
        // evaluated: this configuration need not come after the one that defines the registry
        @Bean
        OutboxListener idempotencyOutboxMetrics(ObjectProvider<io.micrometer.core.instrument.MeterRegistry> meters) {
            io.micrometer.core.instrument.MeterRegistry registry = meters.getIfUnique();
            io.github.idemtx.micrometer.MicrometerOutboxMetrics metrics =
                    registry == null ? null : io.github.idemtx.micrometer.MicrometerOutboxMetrics.of(registry);
            return () -> metrics;
        }
    }

    /** With Actuator: the {@code outbox} health indicator. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    static class HealthConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "outboxHealthIndicator")
        @ConditionalOnEnabledHealthIndicator("outbox")
        OutboxHealthIndicator outboxHealthIndicator(Outbox outbox, IdempotencyOutboxProperties properties) {
            IdempotencyOutboxProperties.Health health = properties.getHealth();
            return new OutboxHealthIndicator(
                    outbox, health.getMaxFailed(), health.getMaxPendingAge(), health.getExceededStatus());
        }
    }
}
