package io.github.idemtx.spring.sample;

import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.spring.web.IdempotencyScopeResolver;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.Principal;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The sample service of the Spring tests: payments (POST with an Idempotency-Key, GET), on Spring
 * Boot's own jOOQ, Flyway, Jackson 3 and MVC auto-configuration plus idemtx's starter. JPA is on the
 * test class path for {@code io.github.idemtx.spring.jpa}'s application; this one leaves it out, so
 * its transactions are {@code DataSourceTransactionManager}'s, as in an application without JPA.
 */
@SpringBootApplication(
        excludeName = {
            "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
            "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration"
        })
public class PaymentsApplication {

    /** The test database's coordinates as Spring Boot properties; the app's tables and the claim table share its schema. */
    public static Map<String, Object> databaseProperties() {
        TestDatabase db = TestDatabase.get();
        String url = db.serverUrl() + (db.serverUrl().contains("?") ? "&" : "?") + "currentSchema=" + db.schema();
        return Map.of(
                "spring.datasource.url",
                url,
                "spring.datasource.username",
                db.user() == null ? "" : db.user(),
                "spring.datasource.password",
                db.password() == null ? "" : db.password(),
                "spring.flyway.schemas",
                db.schema(),
                "spring.flyway.locations",
                "classpath:sample/migration",
                "idemtx.schema",
                db.schema(),
                "spring.jooq.sql-dialect",
                "POSTGRES");
    }

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(PaymentsApplication.class);
        app.setDefaultProperties(databaseProperties());
        app.run(args);
    }

    /**
     * Scopes are the principal's name, which {@link #bearerAuthentication()} sets. Without Spring
     * Security the starter does not assume so: an application that authenticates by other means says
     * where scopes come from.
     */
    @Bean
    IdempotencyScopeResolver idempotencyScopeResolver() {
        return IdempotencyScopeResolver.principal();
    }

    /**
     * Stands in for Spring Security: a request with {@code Authorization: Bearer <name>} is
     * authenticated as {@code name}. Scopes come from here, never from a header of the client's choosing.
     */
    @Bean
    @Order(Ordered.HIGHEST_PRECEDENCE)
    OncePerRequestFilter bearerAuthentication() {
        return new OncePerRequestFilter() {
            @Override
            protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
                    throws ServletException, IOException {
                String authorization = request.getHeader("Authorization");
                if (authorization == null || !authorization.startsWith("Bearer ")) {
                    chain.doFilter(request, response);
                    return;
                }
                Principal user = authorization.substring(7)::trim;
                chain.doFilter(
                        new HttpServletRequestWrapper(request) {
                            @Override
                            public Principal getUserPrincipal() {
                                return user;
                            }
                        },
                        response);
            }
        };
    }
}
