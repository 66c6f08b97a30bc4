package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.TransactionDetector;
import io.github.idemtx.spring.IdempotentTransactionCustomizer;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.SpringTransactionDetector;
import java.util.ArrayList;
import java.util.List;
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
 * {@code DSLContext}, and, when {@code idemtx.purge.enabled}, a scheduled purge of expired claims.
 * Every bean backs off when the application defines its own. {@link IdempotentTransactionCustomizer}
 * beans adjust every instance the factory makes; with {@code idemtx-micrometer} and a
 * {@code MeterRegistry} in the context, one of them adds the {@code MicrometerIdempotencyListener}
 * (observations in the application's {@code ObservationRegistry} when there is one). When it
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
        ClaimMode claimMode = properties.getClaimMode();
        if (claimMode == null) {
            throw new IllegalArgumentException("idemtx.claim-mode: must be READ_FIRST or WORK_FIRST");
        }
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
                + (claimMode == ClaimMode.READ_FIRST ? "" : " (calls inside a Spring transaction read first)")
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
