package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.spring.actuate.IdempotencyEndpoint;
import io.github.idemtx.spring.actuate.IdempotencyHealthIndicator;
import java.time.Clock;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * With Spring Boot Actuator: the {@code idempotency} endpoint (read-only unless
 * {@code management.endpoint.idempotency.access=unrestricted}; exposed like any endpoint, through
 * {@code management.endpoints.web.exposure.include}) and the {@code idempotency} health indicator
 * ({@code management.health.idempotency.enabled}, thresholds in {@code idemtx.health.*}), both over
 * the starter's {@link ClaimAdmin}.
 */
@AutoConfiguration(after = IdempotencyAutoConfiguration.class)
@ConditionalOnClass(ClaimAdmin.class)
@ConditionalOnBean(ClaimAdmin.class)
public class IdempotencyActuatorAutoConfiguration {

    /** Created by Spring Boot's auto-configuration, not by applications. */
    public IdempotencyActuatorAutoConfiguration() {}

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
    static class EndpointConfiguration {
        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnAvailableEndpoint(IdempotencyEndpoint.class)
        IdempotencyEndpoint idempotencyEndpoint(ClaimAdmin admin) {
            return new IdempotencyEndpoint(admin, Clock.systemUTC());
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    static class HealthConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "idempotencyHealthIndicator")
        @ConditionalOnEnabledHealthIndicator("idempotency")
        IdempotencyHealthIndicator idempotencyHealthIndicator(ClaimAdmin admin, IdempotencyProperties properties) {
            IdempotencyProperties.Health health = properties.getHealth();
            return new IdempotencyHealthIndicator(
                    admin,
                    health.getMaxNeedingReconciliation(),
                    health.getMaxInFlightAge(),
                    health.getExceededStatus(),
                    Clock.systemUTC());
        }
    }
}
