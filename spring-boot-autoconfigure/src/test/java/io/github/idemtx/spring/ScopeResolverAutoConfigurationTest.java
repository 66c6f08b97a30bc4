package io.github.idemtx.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.spring.autoconfigure.IdempotencyWebAutoConfiguration;
import io.github.idemtx.spring.web.IdempotencyScopeResolver;
import jakarta.servlet.Filter;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.http.converter.autoconfigure.HttpMessageConvertersAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.oauth2.jwt.Jwt;
import org.springframework.security.oauth2.jwt.JwtDecoder;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.DefaultMockMvcBuilder;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.WebApplicationContext;

/**
 * Where a controller's {@link Scope} comes from, through Spring MVC (MockMvc, no server, no
 * database): the default with Spring Security on the class path (it is on this module's test class
 * path) and without it (hidden by a {@link FilteredClassLoader}), a JWT claim through Spring
 * Security's real resource-server filter chain, the application's own resolver, and the refusals.
 */
class ScopeResolverAutoConfigurationTest {

    /** Hides Spring Security from the context, as in an application that does not have it. */
    private static final FilteredClassLoader WITHOUT_SPRING_SECURITY =
            new FilteredClassLoader("org.springframework.security");

    private static WebApplicationContextRunner runner() {
        return new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        JacksonAutoConfiguration.class,
                        HttpMessageConvertersAutoConfiguration.class,
                        WebMvcAutoConfiguration.class,
                        IdempotencyWebAutoConfiguration.class))
                .withUserConfiguration(ScopeController.class);
    }

    private static MockMvc mvc(AssertableWebApplicationContext context) {
        WebApplicationContext web = (WebApplicationContext) context.getSourceApplicationContext();
        DefaultMockMvcBuilder builder = MockMvcBuilders.webAppContextSetup(web);
        if (context.containsBean("springSecurityFilterChain")) {
            builder.addFilters(context.getBean("springSecurityFilterChain", Filter.class));
        }
        return builder.build();
    }

    @RestController
    static class ScopeController {
        @PostMapping("/scope")
        String scope(Scope scope) {
            return scope.value();
        }

        @PostMapping("/key")
        String key(IdempotencyKey key) {
            return key.value();
        }
    }

    @Test
    void withSpringSecurityTheDefaultIsThePrincipalsNameAndNoPrincipalIs401() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(IdempotencyScopeResolver.class)).isSameAs(IdempotencyScopeResolver.principal());
            MockMvc mvc = mvc(context);
            mvc.perform(post("/scope").principal(() -> "alice"))
                    .andExpect(status().isOk())
                    .andExpect(content().string("alice"));
            mvc.perform(post("/scope"))
                    .andExpect(status().isUnauthorized())
                    .andExpect(content().contentTypeCompatibleWith("application/problem+json"))
                    .andExpect(jsonPath("$.type").value("urn:idemtx:problem:unauthenticated"));
        });
    }

    @Test
    void withoutSpringSecurityTheContextStartsAndAScopeIsRefusedNamingTheFix() {
        runner().withClassLoader(WITHOUT_SPRING_SECURITY).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(IdempotencyScopeResolver.class))
                    .isSameAs(IdempotencyScopeResolver.unconfigured());
            MockMvc mvc = mvc(context);
            // even with a principal: without Spring Security the starter does not guess where scopes come from
            mvc.perform(post("/scope").principal(() -> "alice"))
                    .andExpect(status().isInternalServerError())
                    .andExpect(content().contentTypeCompatibleWith("application/problem+json"))
                    .andExpect(jsonPath("$.type").value("urn:idemtx:problem:scope-not-configured"))
                    .andExpect(jsonPath("$.detail")
                            .value(org.hamcrest.Matchers.containsString(
                                    "defines no IdempotencyScopeResolver bean. Define one")));
            // handlers that ask for no scope are not affected
            mvc.perform(post("/key").header("Idempotency-Key", "\"k-1\""))
                    .andExpect(status().isOk())
                    .andExpect(content().string("k-1"));
        });
    }

    @Test
    void theApplicationsOwnResolverWinsWithAndWithoutSpringSecurity() {
        for (ClassLoader loader :
                List.of(WITHOUT_SPRING_SECURITY, ScopeResolverAutoConfigurationTest.class.getClassLoader())) {
            runner().withClassLoader(loader)
                    .withPropertyValues("idemtx.web.scope.jwt-claim=tenant_id")
                    .withBean(
                            IdempotencyScopeResolver.class, () -> IdempotencyScopeResolver.trustedHeader("X-Tenant-Id"))
                    .run(context -> {
                        assertThat(context).hasNotFailed().hasSingleBean(IdempotencyScopeResolver.class);
                        MockMvc mvc = mvc(context);
                        mvc.perform(post("/scope").header("X-Tenant-Id", "acme").principal(() -> "alice"))
                                .andExpect(status().isOk())
                                .andExpect(content().string("acme"));
                        mvc.perform(post("/scope").principal(() -> "alice")).andExpect(status().isUnauthorized());
                        mvc.perform(post("/scope").header("X-Tenant-Id", "acme", "globex"))
                                .andExpect(status().isBadRequest())
                                .andExpect(jsonPath("$.type").value("urn:idemtx:problem:invalid-scope"))
                                .andExpect(jsonPath("$.detail")
                                        .value("the scope from the header X-Tenant-Id is not valid: it was sent 2"
                                                + " times, and a trusted gateway sets it once"));
                    });
        }
    }

    @Test
    void aResolverThatReturnsNullFailsTheRequestNamingIt() {
        runner().withBean(IdempotencyScopeResolver.class, () -> request -> null).run(context -> {
            MockMvc mvc = mvc(context);
            assertThatThrownBy(() -> mvc.perform(post("/scope")))
                    .rootCause()
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(
                            "returned null; it must return Optional.empty() for a request without a" + " scope");
        });
    }

    @Test
    void aJwtClaimAsksForSpringSecuritysJwtSupportOrTheStartStops() {
        runner().withClassLoader(new FilteredClassLoader(Jwt.class))
                .withPropertyValues("idemtx.web.scope.jwt-claim=tenant_id")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("idemtx.web.scope.jwt-claim is set (tenant_id)")
                        .hasMessageContaining("spring-boot-starter-security-oauth2-resource-server"));
        // a claim named like a switch is still a claim
        runner().withPropertyValues("idemtx.web.scope.jwt-claim=false")
                .run(context -> assertThat(context.getBean(IdempotencyScopeResolver.class))
                        .hasToString("the JWT claim false (IdempotencyScopeResolver.jwtClaim)"));
        runner().withPropertyValues("idemtx.web.scope.jwt-claim= ")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasStackTraceContaining(
                                "idemtx.web.scope.jwt-claim: the JWT claim naming the scope must not be blank"));
    }

    /**
     * Spring Security's resource server over JWTs, with a decoder that trusts any token (no server to
     * sign one): {@code Bearer alice.acme} is subject alice of tenant acme; {@code Bearer alice} has no
     * tenant; {@code Bearer alice.acme~globex} a list of tenants. Every request is permitted, so an
     * anonymous one reaches the controller.
     */
    @Configuration(proxyBeanMethods = false)
    @EnableWebSecurity
    static class JwtResourceServer {
        @Bean
        SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(requests -> requests.anyRequest().permitAll())
                    .csrf(csrf -> csrf.disable())
                    .oauth2ResourceServer(server -> server.jwt(jwt -> {}))
                    .build();
        }

        @Bean
        JwtDecoder jwtDecoder() {
            return token -> {
                String[] parts = token.split("\\.", 2);
                Jwt.Builder jwt =
                        Jwt.withTokenValue(token).header("alg", "none").subject(parts[0]);
                if (parts.length == 2) {
                    jwt.claim("tenant_id", parts[1].contains("~") ? List.of(parts[1].split("~")) : parts[1]);
                }
                return jwt.build();
            };
        }
    }

    @Test
    void throughSpringSecuritysResourceServerTheDefaultIsTheSubjectAndAJwtClaimIsTheTenant() {
        runner().withUserConfiguration(JwtResourceServer.class).run(context -> {
            assertThat(context).hasNotFailed();
            MockMvc mvc = mvc(context);
            mvc.perform(post("/scope").header("Authorization", "Bearer alice.acme"))
                    .andExpect(status().isOk())
                    .andExpect(content().string("alice"));
            mvc.perform(post("/scope")).andExpect(status().isUnauthorized());
        });
        runner().withUserConfiguration(JwtResourceServer.class)
                .withPropertyValues("idemtx.web.scope.jwt-claim=tenant_id")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(IdempotencyScopeResolver.class))
                            .hasToString("the JWT claim tenant_id (IdempotencyScopeResolver.jwtClaim)");
                    MockMvc mvc = mvc(context);
                    mvc.perform(post("/scope").header("Authorization", "Bearer alice.acme"))
                            .andExpect(status().isOk())
                            .andExpect(content().string("acme"));
                    mvc.perform(post("/scope").header("Authorization", "Bearer bob.acme"))
                            .andExpect(content().string("acme"));
                    // a token without the claim, and no token
                    mvc.perform(post("/scope").header("Authorization", "Bearer alice"))
                            .andExpect(status().isUnauthorized());
                    mvc.perform(post("/scope")).andExpect(status().isUnauthorized());
                    mvc.perform(post("/scope").header("Authorization", "Bearer alice.acme~globex"))
                            .andExpect(status().isBadRequest())
                            .andExpect(jsonPath("$.detail")
                                    .value("the scope from the JWT claim tenant_id is not valid: it is a list, not a"
                                            + " string or an integer"));
                });
    }
}
