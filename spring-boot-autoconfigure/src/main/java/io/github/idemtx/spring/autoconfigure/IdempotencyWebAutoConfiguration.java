package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.spring.web.IdempotencyArgumentResolver;
import io.github.idemtx.spring.web.IdempotencyExceptionHandler;
import io.github.idemtx.spring.web.IdempotencyKeyBodyFilter;
import io.github.idemtx.spring.web.IdempotencyScopeResolver;
import java.util.List;
import java.util.Objects;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.ClassUtils;
import org.springframework.web.method.support.HandlerMethodArgumentResolver;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Spring MVC support, in a servlet web application with idemtx-http on the class path: controller
 * parameters of type {@code IdempotencyKey}, {@code Scope} and {@code Fingerprint}, the
 * {@code IdempotencyScopeResolver} the scope comes from (unless the application defines one), the body
 * filter the fingerprint needs, and problem details for a missing or malformed key or scope.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({WebMvcConfigurer.class, IdempotencyKeyHeader.class})
@EnableConfigurationProperties(IdempotencyProperties.class)
public class IdempotencyWebAutoConfiguration {

    /** Spring Security's servlet support, which sets the principal of an authenticated request. */
    private static final String SPRING_SECURITY_WEB = "org.springframework.security.web.SecurityFilterChain";

    private static final String JWT = "org.springframework.security.oauth2.jwt.Jwt";

    /** Created by Spring Boot's auto-configuration, not by applications. */
    public IdempotencyWebAutoConfiguration() {}

    @Bean
    @ConditionalOnMissingBean
    IdempotencyArgumentResolver idempotencyArgumentResolver(IdempotencyScopeResolver scopes) {
        return new IdempotencyArgumentResolver(scopes);
    }

    /**
     * The default scope resolver, when neither the application nor {@link JwtClaimScope} made one: the
     * principal's name with Spring Security, a refusal naming the fix without it. A JWT claim asked
     * for without the JWT support stops the start rather than silently scoping by the principal.
     */
    @Bean
    @ConditionalOnMissingBean
    IdempotencyScopeResolver idempotencyScopeResolver(IdempotencyProperties properties, ApplicationContext context) {
        String claim = properties.getWeb().getScope().getJwtClaim();
        if (claim != null && ClassUtils.isPresent(JWT, context.getClassLoader())) {
            // a claim named "false", which @ConditionalOnProperty reads as switched off
            return jwtClaim(claim);
        }
        if (claim != null) {
            throw new IllegalStateException(
                    "idemtx.web.scope.jwt-claim is set (" + claim + "), but a scope from a JWT claim needs Spring"
                            + " Security's JWT support on the class path (" + JWT
                            + ": add spring-boot-starter-security-oauth2-resource-server), or remove the property");
        }
        return ClassUtils.isPresent(SPRING_SECURITY_WEB, context.getClassLoader())
                ? IdempotencyScopeResolver.principal()
                : IdempotencyScopeResolver.unconfigured();
    }

    /** {@code idemtx.web.scope.jwt-claim}, with Spring Security's JWT support on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = JWT)
    @ConditionalOnProperty(prefix = "idemtx.web.scope", name = "jwt-claim")
    static class JwtClaimScope {

        @Bean
        @ConditionalOnMissingBean
        IdempotencyScopeResolver jwtClaimScopeResolver(IdempotencyProperties properties) {
            return jwtClaim(
                    Objects.requireNonNullElse(properties.getWeb().getScope().getJwtClaim(), ""));
        }
    }

    private static IdempotencyScopeResolver jwtClaim(String claim) {
        try {
            return IdempotencyScopeResolver.jwtClaim(claim);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("idemtx.web.scope.jwt-claim: " + e.getMessage(), e);
        }
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
