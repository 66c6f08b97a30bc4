package io.github.idemtx.spring.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Scope;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.oauth2.jwt.Jwt;
import org.springframework.security.oauth2.server.resource.authentication.JwtAuthenticationToken;

/** The resolvers the library provides, on requests built in memory: no server, no database. */
class IdempotencyScopeResolverTest {

    private static MockHttpServletRequest request() {
        return new MockHttpServletRequest("POST", "/payments");
    }

    private static MockHttpServletRequest withJwt(Map<String, Object> claims) {
        Jwt.Builder jwt = Jwt.withTokenValue("token").header("alg", "none").subject("alice");
        claims.forEach(jwt::claim);
        MockHttpServletRequest request = request();
        request.setUserPrincipal(new JwtAuthenticationToken(jwt.build()));
        return request;
    }

    @Test
    void thePrincipalResolverTakesTheAuthenticatedPrincipalsName() {
        MockHttpServletRequest request = request();
        request.setUserPrincipal(() -> "alice");
        assertThat(IdempotencyScopeResolver.principal().resolve(request)).contains(Scope.of("alice"));
    }

    @Test
    void withoutAPrincipalOrWithAnEmptyNameThereIsNoScope() {
        assertThat(IdempotencyScopeResolver.principal().resolve(request())).isEmpty();
        MockHttpServletRequest unnamed = request();
        unnamed.setUserPrincipal(() -> "");
        assertThat(IdempotencyScopeResolver.principal().resolve(unnamed)).isEmpty();
    }

    @Test
    void aPrincipalNameThatIsNoScopeIsRefusedNamingWhereItCameFrom() {
        MockHttpServletRequest request = request();
        request.setUserPrincipal(() -> "a".repeat(Scope.MAX_LENGTH + 1));
        assertThatThrownBy(() -> IdempotencyScopeResolver.principal().resolve(request))
                .isInstanceOfSatisfying(
                        InvalidScopeException.class,
                        e -> assertThat(e.source()).isEqualTo("the authenticated principal's name"))
                .hasMessageContaining("the authenticated principal's name")
                .hasMessageContaining("at most 255 characters, was 256");
    }

    @Test
    void theTrustedHeaderResolverTakesTheHeadersValue() {
        MockHttpServletRequest request = request();
        request.addHeader("X-Tenant-Id", "acme");
        assertThat(IdempotencyScopeResolver.trustedHeader("X-Tenant-Id").resolve(request))
                .contains(Scope.of("acme"));
        assertThat(IdempotencyScopeResolver.trustedHeader("X-Tenant-Id").resolve(request()))
                .as("no header, no scope")
                .isEmpty();
    }

    @Test
    void theTrustedHeaderSentTwiceOrBlankOrWithAControlCharacterIsRefusedNamingIt() {
        IdempotencyScopeResolver header = IdempotencyScopeResolver.trustedHeader("X-Tenant-Id");
        MockHttpServletRequest twice = request();
        twice.addHeader("X-Tenant-Id", "acme");
        twice.addHeader("X-Tenant-Id", "globex");
        assertThatThrownBy(() -> header.resolve(twice))
                .isInstanceOf(InvalidScopeException.class)
                .hasMessage("the scope from the header X-Tenant-Id is not valid: it was sent 2 times, and a trusted"
                        + " gateway sets it once");
        MockHttpServletRequest blank = request();
        blank.addHeader("X-Tenant-Id", " ");
        assertThatThrownBy(() -> header.resolve(blank))
                .isInstanceOf(InvalidScopeException.class)
                .hasMessage("the scope from the header X-Tenant-Id is not valid: scope must not be blank");
        MockHttpServletRequest control = request();
        control.addHeader("X-Tenant-Id", "ac\u0001me");
        assertThatThrownBy(() -> header.resolve(control))
                .isInstanceOfSatisfying(
                        InvalidScopeException.class,
                        e -> assertThat(e.reason())
                                .contains("control characters")
                                .contains("U+0001"));
    }

    @Test
    void aHeaderNameThatIsNoHttpFieldNameIsRefusedAtOnce() {
        assertThatThrownBy(() -> IdempotencyScopeResolver.trustedHeader(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("headerName must not be null");
        assertThatThrownBy(() -> IdempotencyScopeResolver.trustedHeader(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("headerName must not be empty");
        assertThatThrownBy(() -> IdempotencyScopeResolver.trustedHeader("X-Tenant-Id:"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("headerName must be an HTTP field name (RFC 9110 token), but 'X-Tenant-Id:' has ':' at"
                        + " index 11");
        assertThatThrownBy(() -> IdempotencyScopeResolver.trustedHeader("X Tenant"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("' ' at index 1");
    }

    @Test
    void theJwtClaimResolverTakesAStringOrIntegerClaim() {
        IdempotencyScopeResolver tenant = IdempotencyScopeResolver.jwtClaim("tenant_id");
        assertThat(tenant.resolve(withJwt(Map.of("tenant_id", "acme")))).contains(Scope.of("acme"));
        assertThat(tenant.resolve(withJwt(Map.of("tenant_id", 42L)))).contains(Scope.of("42"));
        assertThat(tenant.resolve(withJwt(Map.of("tenant_id", 7)))).contains(Scope.of("7"));
    }

    @Test
    void withoutTheClaimOrWithoutAJwtThereIsNoScope() {
        IdempotencyScopeResolver tenant = IdempotencyScopeResolver.jwtClaim("tenant_id");
        assertThat(tenant.resolve(withJwt(Map.of("org", "acme"))))
                .as("no such claim")
                .isEmpty();
        assertThat(tenant.resolve(request())).as("no principal").isEmpty();
        MockHttpServletRequest password = request();
        password.setUserPrincipal(UsernamePasswordAuthenticationToken.authenticated("alice", null, List.of()));
        assertThat(tenant.resolve(password))
                .as("authenticated, but not by a JWT")
                .isEmpty();
        MockHttpServletRequest plain = request();
        plain.setUserPrincipal(() -> "alice");
        assertThat(tenant.resolve(plain))
                .as("not a Spring Security Authentication")
                .isEmpty();
    }

    @Test
    void aClaimOfAnotherTypeOrABlankOneIsRefusedNamingTheClaim() {
        IdempotencyScopeResolver tenant = IdempotencyScopeResolver.jwtClaim("tenant_id");
        assertThatThrownBy(() -> tenant.resolve(withJwt(Map.of("tenant_id", List.of("acme", "globex")))))
                .isInstanceOf(InvalidScopeException.class)
                .hasMessage("the scope from the JWT claim tenant_id is not valid: it is a list, not a string or an"
                        + " integer");
        assertThatThrownBy(() -> tenant.resolve(withJwt(Map.of("tenant_id", Map.of("id", "acme")))))
                .hasMessageContaining("it is an object");
        assertThatThrownBy(() -> tenant.resolve(withJwt(Map.of("tenant_id", 1.5))))
                .hasMessageContaining("it is a decimal number");
        assertThatThrownBy(() -> tenant.resolve(withJwt(Map.of("tenant_id", true))))
                .hasMessageContaining("it is a boolean");
        assertThatThrownBy(() -> tenant.resolve(withJwt(Map.of("tenant_id", ""))))
                .isInstanceOf(InvalidScopeException.class)
                .hasMessage("the scope from the JWT claim tenant_id is not valid: scope must not be blank");
    }

    @Test
    void aBlankClaimNameIsRefusedAtOnce() {
        assertThatThrownBy(() -> IdempotencyScopeResolver.jwtClaim(" "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the JWT claim naming the scope must not be blank");
        assertThatThrownBy(() -> IdempotencyScopeResolver.jwtClaim(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("claim must not be null");
    }

    @Test
    void theUnconfiguredResolverRefusesEveryRequestNamingTheFix() {
        MockHttpServletRequest request = request();
        request.setUserPrincipal(() -> "alice");
        assertThatThrownBy(() -> IdempotencyScopeResolver.unconfigured().resolve(request))
                .isInstanceOf(ScopeNotConfiguredException.class)
                .hasMessageContaining("Spring Security is not on the class path")
                .hasMessageContaining("defines no IdempotencyScopeResolver bean. Define one");
    }

    @Test
    void eachResolverSaysWhereItLooks() {
        assertThat(IdempotencyScopeResolver.principal())
                .hasToString("the authenticated principal's name (IdempotencyScopeResolver.principal())");
        assertThat(IdempotencyScopeResolver.trustedHeader("X-Tenant-Id"))
                .hasToString("the header X-Tenant-Id (IdempotencyScopeResolver.trustedHeader)");
        assertThat(IdempotencyScopeResolver.jwtClaim("tenant_id"))
                .hasToString("the JWT claim tenant_id (IdempotencyScopeResolver.jwtClaim)");
        assertThat(new MissingScopeException(IdempotencyScopeResolver.jwtClaim("tenant_id")))
                .hasMessage("the request has no scope: none in the JWT claim tenant_id"
                        + " (IdempotencyScopeResolver.jwtClaim); idempotency keys belong to a scope that"
                        + " authentication established");
    }
}
