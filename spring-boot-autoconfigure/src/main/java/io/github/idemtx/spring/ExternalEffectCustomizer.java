package io.github.idemtx.spring;

import io.github.idemtx.jooq.ExternalEffect;

/**
 * Adjusts every {@link ExternalEffect} that {@link ExternalEffects} makes, after the policy and schema
 * are set: declare beans of this type (a listener, a detector of another transaction manager). The
 * auto-configuration declares one itself when {@code idemtx-micrometer} and a {@code MeterRegistry}
 * are there: it adds the {@code MicrometerIdempotencyListener} that {@link IdempotentTransactions}'
 * instances report to ({@code idemtx.metrics.enabled=false} turns it off). Applied in
 * {@link org.springframework.core.annotation.Order} order.
 */
@FunctionalInterface
public interface ExternalEffectCustomizer {

    /**
     * Adjusts one builder, on the thread that asks the factory for an effect.
     *
     * @param builder preset with the application's {@code DSLContext}, policy and schema
     */
    void customize(ExternalEffect.Builder<?, ?> builder);
}
