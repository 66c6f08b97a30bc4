package io.github.idemtx.spring;

import io.github.idemtx.jooq.IdempotentTransaction;

/**
 * Adjusts every {@link IdempotentTransaction} that {@link IdempotentTransactions} makes, after the
 * policy and schema are set: declare beans of this type (a detector of another transaction manager,
 * a stated transaction mode, a listener). The auto-configuration declares one itself when
 * {@code idemtx-micrometer} and a {@code MeterRegistry} are there: it adds the
 * {@code MicrometerIdempotencyListener} ({@code idemtx.metrics.enabled=false} turns it off). Applied
 * in {@link org.springframework.core.annotation.Order} order.
 */
@FunctionalInterface
public interface IdempotentTransactionCustomizer {

    /**
     * Adjusts one builder, on the thread that asks the factory for an instance.
     *
     * @param builder preset with the application's {@code DSLContext}, policy and schema
     */
    void customize(IdempotentTransaction.Builder<?> builder);
}
