package io.github.idemtx.spring.docs.scope;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Scope;
import io.github.idemtx.spring.web.IdempotencyScopeResolver;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;

/** docs/spring-boot.md's own resolver does what the page says. */
class TenantScopeTest {

    private final IdempotencyScopeResolver scopes = new TenantScope()
            .idempotencyScopeResolver(user ->
                    Optional.ofNullable(Map.of("alice", "acme", "bob", "acme").get(user)));

    private static MockHttpServletRequest as(String user) {
        MockHttpServletRequest request = new MockHttpServletRequest("POST", "/payments");
        if (user != null) {
            request.setUserPrincipal(() -> user);
        }
        return request;
    }

    @Test
    void usersOfOneTenantShareTheirScope() {
        assertThat(scopes.resolve(as("alice"))).contains(Scope.of("acme"));
        assertThat(scopes.resolve(as("bob"))).contains(Scope.of("acme"));
    }

    @Test
    void noPrincipalOrNoTenantIsNoScope() {
        assertThat(scopes.resolve(as(null))).isEmpty();
        assertThat(scopes.resolve(as("mallory"))).isEmpty();
    }
}
