package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.EffectRecovery;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.TransactionDetector;
import io.github.idemtx.spring.ExternalEffectCustomizer;
import io.github.idemtx.spring.ExternalEffects;
import io.github.idemtx.spring.IdempotentTransactionCustomizer;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.SpringTransactionDetector;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jooq.DSLContext;
import org.jooq.impl.DataSourceConnectionProvider;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
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
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.util.ClassUtils;

/**
 * Auto-configuration of idemtx: the {@link IdempotencyPolicy} from the {@code idemtx.*} properties,
 * the claim table migrated at start-up (after the application's own Flyway or Liquibase, with a
 * history table of its own), an {@link IdempotentTransactions} factory bound to the application's
 * {@code DSLContext}, an {@link ExternalEffects} factory for the application's effect beans, a
 * {@link ClaimAdmin} over the claim table and those effects (behind the idempotency endpoint), the
 * {@link IdempotencyRecovery} of every {@link ExternalEffect} bean (unless
 * {@code idemtx.recovery.enabled=false}) and, when {@code idemtx.purge.enabled}, a scheduled purge of
 * expired claims. Every bean backs off when the application defines its own.
 * {@link IdempotentTransactionCustomizer} and {@link ExternalEffectCustomizer} beans adjust every
 * instance the factories make; with {@code idemtx-micrometer} and a {@code MeterRegistry} in the
 * context, one of each adds the {@code MicrometerIdempotencyListener} (observations in the
 * application's {@code ObservationRegistry} when there is one), and the recovery's passes are counted
 * ({@code MicrometerRecoveryMetrics}). When it
 * creates the factory it logs one INFO line (logger {@code io.github.idemtx.spring.autoconfigure})
 * with the claim mode, the policy, the schema, whether Spring's transactions are detected and
 * whether metrics are on.
 */
@AutoConfiguration(after = JooqAutoConfiguration.class)
@ConditionalOnClass({DSLContext.class, IdempotentTransactions.class})
@ConditionalOnBean(DSLContext.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
public class IdempotencyAutoConfiguration {

    private static final Log LOG = LogFactory.getLog(IdempotencyAutoConfiguration.class);

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
        ClaimMode configured = properties.getClaimMode();
        if (configured == null) {
            throw new IllegalArgumentException("idemtx.claim-mode: must be CLAIM_FIRST, WORK_FIRST or ADAPTIVE");
        }
        ClaimMode claimMode = canonical(configured);
        List<IdempotentTransactionCustomizer> all = new ArrayList<>();
        all.add(builder -> builder.claimMode(claimMode)); // first, so an application's customizer can override it
        all.addAll(customizers.orderedStream().toList());
        String schema = checkedSchema(properties);
        IdempotentTransactions transactions = new IdempotentTransactions(dsl, policy, schema, beans, all);
        if (LOG.isInfoEnabled()) {
            LOG.info(startupLine(claimMode, policy, schema, migration.getIfAvailable() != null, dsl, beans));
        }
        return transactions;
    }

    /** The deprecated {@code READ_FIRST} is {@code CLAIM_FIRST}, said once with a warning. */
    @SuppressWarnings("removal")
    private static ClaimMode canonical(ClaimMode configured) {
        if (configured != ClaimMode.READ_FIRST) {
            return configured;
        }
        LOG.warn("idemtx.claim-mode=READ_FIRST is deprecated since 1.0 and will be removed in 2.0:"
                + " it is CLAIM_FIRST (the default), write that or remove the property");
        return ClaimMode.CLAIM_FIRST;
    }

    /**
     * The one line the starter logs when it creates its factory: what every call will do, so that a
     * user can see it without reading the properties back.
     */
    static String startupLine(
            ClaimMode claimMode,
            IdempotencyPolicy policy,
            String schema,
            boolean migrated,
            DSLContext dsl,
            BeanFactory beans) {
        return "idemtx: claim mode " + claimMode
                + (claimMode == ClaimMode.CLAIM_FIRST ? "" : " (calls inside a Spring transaction claim first)")
                + ", ttl " + policy.ttl()
                + ", duplicate wait " + policy.duplicateWait()
                + ", retry after " + policy.retryAfter()
                + ", max attempts " + policy.maxAttempts()
                + ", backoff " + policy.initialBackoff() + ".." + policy.maxBackoff()
                + ", max result bytes " + policy.maxResultBytes()
                + ", schema " + schema
                + (migrated ? " (migrated at start-up)" : " (not migrated: idemtx.migration.enabled=false)")
                + ", Spring transaction detector " + detector(dsl)
                + ", metrics " + metrics(beans);
    }

    private static String detector(DSLContext dsl) {
        boolean loaded =
                java.util.ServiceLoader.load(TransactionDetector.class, TransactionDetector.class.getClassLoader())
                        .stream()
                        .anyMatch(p -> p.type() == SpringTransactionDetector.class);
        if (!loaded) {
            return "not found (calls own their transactions)";
        }
        if (dsl.configuration().connectionProvider() instanceof DataSourceConnectionProvider provider
                && provider.dataSource() instanceof TransactionAwareDataSourceProxy) {
            return "active (calls join a Spring transaction open on the thread)";
        }
        return "inactive (the DSLContext is not over Spring's TransactionAwareDataSourceProxy)";
    }

    private static String metrics(BeanFactory beans) {
        if (!beans.containsBean("idempotencyMetrics")) {
            return "off (idemtx-micrometer absent or idemtx.metrics.enabled=false)";
        }
        String registry = "io.micrometer.core.instrument.MeterRegistry";
        if (beans instanceof ListableBeanFactory listable
                && ClassUtils.isPresent(registry, IdempotencyAutoConfiguration.class.getClassLoader())
                && listable.getBeanNamesForType(
                                        ClassUtils.resolveClassName(
                                                registry, IdempotencyAutoConfiguration.class.getClassLoader()),
                                        true,
                                        false)
                                .length
                        == 1) {
            return "on (MicrometerIdempotencyListener)";
        }
        return "off (no single MeterRegistry in the context)";
    }

    @Bean
    @ConditionalOnMissingBean
    ExternalEffects externalEffects(
            DSLContext dsl,
            IdempotencyPolicy policy,
            IdempotencyProperties properties,
            ObjectProvider<IdempotencySchemaMigration> migration,
            BeanFactory beans,
            ObjectProvider<ExternalEffectCustomizer> customizers) {
        migration.ifAvailable(m -> {}); // the table is there before the first call
        return new ExternalEffects(
                dsl,
                policy,
                checkedSchema(properties),
                beans,
                customizers.orderedStream().toList());
    }

    /**
     * The operators' API (behind the idempotency endpoint): every claim of the table, and the claims of
     * every {@code ExternalEffect} bean resolved with the effect's own local writes.
     */
    @Bean
    @ConditionalOnMissingBean
    ClaimAdmin idempotencyClaimAdmin(
            DSLContext dsl,
            IdempotencyPolicy policy,
            IdempotencyProperties properties,
            ObjectProvider<IdempotencySchemaMigration> migration,
            ObjectProvider<ExternalEffect<?, ?>> effects,
            ObjectProvider<ClaimAdminCustomizer> customizers) {
        migration.ifAvailable(m -> {}); // the table is there before the first action
        ClaimAdmin.Builder builder =
                ClaimAdmin.builder(dsl).schema(checkedSchema(properties)).policy(policy);
        IdempotencyRecovery.distinct(effects.orderedStream().toList()).forEach(builder::effect);
        customizers.orderedStream().forEach(c -> c.customize(builder));
        return builder.build();
    }

    /** Adjusts the {@code ClaimAdmin} bean's builder (the metrics' listener); not API. */
    @FunctionalInterface
    interface ClaimAdminCustomizer {
        void customize(ClaimAdmin.Builder builder);
    }

    /**
     * The recovery of every {@code ExternalEffect} bean the application declares: without one there is
     * nothing to recover and no thread is started.
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(ExternalEffect.class)
    @ConditionalOnProperty(prefix = "idemtx.recovery", name = "enabled", havingValue = "true", matchIfMissing = true)
    IdempotencyRecovery idempotencyRecovery(
            ObjectProvider<ExternalEffect<?, ?>> effects,
            IdempotencyProperties properties,
            ObjectProvider<IdempotencyRecoveryListener> listeners) {
        IdempotencyProperties.Recovery recovery = properties.getRecovery();
        return new IdempotencyRecovery(
                effects.orderedStream().toList(),
                recovery.getInterval(),
                recovery.getBatch(),
                recovery.getWorkers(),
                recovery.getShutdownTimeout(),
                listeners.orderedStream().toList());
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
     * instance the factories make reports to it, through the application's {@code ObservationRegistry}
     * when there is one (so calls are also spans with Micrometer Tracing), and the recovery's passes
     * are counted.
     */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "io.github.idemtx.micrometer.MicrometerIdempotencyListener",
                "io.micrometer.core.instrument.MeterRegistry"
            })
    @ConditionalOnProperty(prefix = "idemtx.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class Metrics {

        @Bean
        IdempotencyMeters idempotencyMeters(
                ObjectProvider<io.micrometer.core.instrument.MeterRegistry> meters,
                ObjectProvider<io.micrometer.observation.ObservationRegistry> observations) {
            return new IdempotencyMeters(meters, observations);
        }

        @Bean
        IdempotentTransactionCustomizer idempotencyMetrics(IdempotencyMeters meters) {
            return builder -> {
                io.github.idemtx.micrometer.MicrometerIdempotencyListener listener = meters.listener();
                if (listener != null) {
                    builder.listener(listener);
                }
            };
        }

        @Bean
        ExternalEffectCustomizer idempotencyEffectMetrics(IdempotencyMeters meters) {
            return builder -> {
                io.github.idemtx.micrometer.MicrometerIdempotencyListener listener = meters.listener();
                if (listener != null) {
                    builder.listener(listener);
                }
            };
        }

        @Bean
        ClaimAdminCustomizer idempotencyAdminMetrics(IdempotencyMeters meters) {
            return builder -> {
                io.github.idemtx.micrometer.MicrometerIdempotencyListener listener = meters.listener();
                if (listener != null) {
                    builder.listener(listener); // resolutions and forgets counted
                }
            };
        }

        @Bean
        IdempotencyRecoveryListener idempotencyRecoveryMetrics(IdempotencyMeters meters) {
            return new IdempotencyRecoveryListener() {
                @Override
                public void started(String effect) {
                    io.github.idemtx.micrometer.MicrometerRecoveryMetrics m = meters.recovery();
                    if (m != null) {
                        m.register(effect);
                    }
                }

                @Override
                public void passed(String effect, EffectRecovery.Pass pass, java.time.Duration took) {
                    io.github.idemtx.micrometer.MicrometerRecoveryMetrics m = meters.recovery();
                    if (m != null) {
                        Map<String, Integer> counts = new LinkedHashMap<>();
                        pass.counts().forEach((how, n) -> counts.put(how.tag(), n));
                        m.passed(effect, counts, took);
                    }
                }

                @Override
                public void failed(String effect, java.time.Duration took, Throwable exception) {
                    io.github.idemtx.micrometer.MicrometerRecoveryMetrics m = meters.recovery();
                    if (m != null) {
                        m.failed(effect, took, exception);
                    }
                }
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
