package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.spring.web.IdempotencyArgumentResolver;
import io.github.idemtx.spring.web.IdempotencyExceptionHandler;
import io.github.idemtx.spring.web.IdempotencyKeyBodyFilter;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.web.method.support.HandlerMethodArgumentResolver;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Spring MVC support, in a servlet web application with idemtx-http on the class path: controller
 * parameters of type {@code IdempotencyKey}, {@code Scope} and {@code Fingerprint}, the body filter
 * the fingerprint needs, and problem details for a missing or malformed key.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({WebMvcConfigurer.class, IdempotencyKeyHeader.class})
@EnableConfigurationProperties(IdempotencyProperties.class)
public class IdempotencyWebAutoConfiguration {

    /** Created by Spring Boot's auto-configuration, not by applications. */
    public IdempotencyWebAutoConfiguration() {}

    @Bean
    @ConditionalOnMissingBean
    IdempotencyArgumentResolver idempotencyArgumentResolver() {
        return new IdempotencyArgumentResolver();
    }

    @Bean
    WebMvcConfigurer idempotencyWebMvcConfigurer(IdempotencyArgumentResolver resolver) {
        return new WebMvcConfigurer() {
            @Override
            public void addArgumentResolvers(List<HandlerMethodArgumentResolver> resolvers) {
                resolvers.add(resolver);
            }
        };
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotencyKeyBodyFilter idempotencyKeyBodyFilter(IdempotencyProperties properties) {
        return new IdempotencyKeyBodyFilter(properties.getWeb().getMaxBodyBytes());
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotencyExceptionHandler idempotencyExceptionHandler() {
        return new IdempotencyExceptionHandler();
    }
}
