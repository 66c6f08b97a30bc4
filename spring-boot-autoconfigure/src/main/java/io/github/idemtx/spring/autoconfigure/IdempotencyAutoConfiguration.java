package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.spring.IdempotentTransactionCustomizer;
import io.github.idemtx.spring.IdempotentTransactions;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jooq.autoconfigure.JooqAutoConfiguration;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of idemtx: the {@link IdempotencyPolicy} from the {@code idemtx.*} properties,
 * the claim table migrated at start-up (after the application's own Flyway or Liquibase, with a
 * history table of its own), an {@link IdempotentTransactions} factory bound to the application's
 * {@code DSLContext}, and, when {@code idemtx.purge.enabled}, a scheduled purge of expired claims.
 * Every bean backs off when the application defines its own. {@link IdempotentTransactionCustomizer}
 * beans adjust every instance the factory makes; with {@code idemtx-micrometer} and a
 * {@code MeterRegistry} in the context, one of them adds the {@code MicrometerIdempotencyListener}
 * (observations in the application's {@code ObservationRegistry} when there is one).
 */
@AutoConfiguration(after = JooqAutoConfiguration.class)
@ConditionalOnClass({DSLContext.class, IdempotentTransactions.class})
@ConditionalOnBean(DSLContext.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
public class IdempotencyAutoConfiguration {

    /** Created by Spring Boot's auto-configuration, not by applications. */
    public IdempotencyAutoConfiguration() {}

    @Bean
    @ConditionalOnMissingBean
    IdempotencyPolicy idempotencyPolicy(IdempotencyProperties properties) {
        return properties.toPolicy();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "idemtx.migration", name = "enabled", havingValue = "true", matchIfMissing = true)
    @DependsOnDatabaseInitialization
    IdempotencySchemaMigration idempotencySchemaMigration(DataSource dataSource, IdempotencyProperties properties) {
        return new IdempotencySchemaMigration(dataSource, checkedSchema(properties));
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotentTransactions idempotentTransactions(
            DSLContext dsl,
            IdempotencyPolicy policy,
            IdempotencyProperties properties,
            ObjectProvider<IdempotencySchemaMigration> migration,
            BeanFactory beans,
            ObjectProvider<IdempotentTransactionCustomizer> customizers) {
        migration.ifAvailable(m -> {}); // the table is there before the first call
        ClaimMode claimMode = properties.getClaimMode();
        if (claimMode == null) {
            throw new IllegalArgumentException("idemtx.claim-mode: must be READ_FIRST or WORK_FIRST");
        }
        List<IdempotentTransactionCustomizer> all = new ArrayList<>();
        all.add(builder -> builder.claimMode(claimMode)); // first, so an application's customizer can override it
        all.addAll(customizers.orderedStream().toList());
        return new IdempotentTransactions(dsl, policy, checkedSchema(properties), beans, all);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "idemtx.purge", name = "enabled", havingValue = "true")
    IdempotencyPurge idempotencyPurge(IdempotentTransactions transactions, IdempotencyProperties properties) {
        return new IdempotencyPurge(
                transactions.strings(),
                properties.getPurge().getInterval(),
                properties.getPurge().getLimit());
    }

    /**
     * With idemtx-micrometer and a {@code MeterRegistry} (Spring Boot's actuator makes one), every
     * instance the factory makes reports to it, through the application's {@code ObservationRegistry}
     * when there is one (so calls are also spans with Micrometer Tracing).
     */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "io.github.idemtx.micrometer.MicrometerIdempotencyListener",
                "io.micrometer.core.instrument.MeterRegistry"
            })
    static class Metrics {

        @Bean
        @ConditionalOnProperty(prefix = "idemtx.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
        IdempotentTransactionCustomizer idempotencyMetrics(
                ObjectProvider<io.micrometer.core.instrument.MeterRegistry> meters,
                ObjectProvider<io.micrometer.observation.ObservationRegistry> observations) {
            java.util.concurrent.atomic.AtomicReference<io.github.idemtx.micrometer.MicrometerIdempotencyListener>
                    listener = new java.util.concurrent.atomic.AtomicReference<>();
            return builder -> {
                io.micrometer.core.instrument.MeterRegistry registry = meters.getIfUnique();
                if (registry == null) {
                    return;
                }
                builder.listener(listener.updateAndGet(l -> {
                    if (l != null) {
                        return l;
                    }
                    io.github.idemtx.micrometer.MicrometerIdempotencyListener.Builder b =
                            io.github.idemtx.micrometer.MicrometerIdempotencyListener.builder(registry);
                    observations.ifUnique(b::observations);
                    return b.build();
                }));
            };
        }
    }

    private static String checkedSchema(IdempotencyProperties properties) {
        try {
            return IdempotencySchema.requireSchemaName(properties.getSchema());
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalArgumentException("idemtx.schema: " + e.getMessage(), e);
        }
    }
}
