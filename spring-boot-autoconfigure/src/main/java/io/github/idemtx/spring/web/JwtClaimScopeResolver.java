package io.github.idemtx.spring.web;

import io.github.idemtx.core.Scope;
import jakarta.servlet.http.HttpServletRequest;
import java.math.BigInteger;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import org.springframework.security.core.Authentication;
import org.springframework.security.oauth2.jwt.Jwt;

/**
 * {@link IdempotencyScopeResolver#jwtClaim(String)}. The only class of the module that names Spring
 * Security's types: it is loaded only once {@code jwtClaim} found {@code Jwt} on the class path.
 */
final class JwtClaimScopeResolver implements IdempotencyScopeResolver {

    static final String JWT = "org.springframework.security.oauth2.jwt.Jwt";

    static final String MISSING_JWT = "a scope from a JWT claim needs Spring Security's JWT support on the class"
            + " path (" + JWT + ": add spring-boot-starter-security-oauth2-resource-server)";

    private final String claim;

    JwtClaimScopeResolver(String claim) {
        this.claim = claim;
    }

    @Override
    public Optional<Scope> resolve(HttpServletRequest request) {
        if (!(request.getUserPrincipal() instanceof Authentication authentication)
                || !(authentication.getPrincipal() instanceof Jwt jwt)) {
            return Optional.empty();
        }
        Object value = jwt.getClaims().get(claim);
        String source = "the JWT claim " + claim;
        return switch (value) {
            case null -> Optional.empty();
            case String s -> Optional.of(Scopes.of(s, source));
            case Integer i -> Optional.of(Scopes.of(i.toString(), source));
            case Long l -> Optional.of(Scopes.of(l.toString(), source));
            case BigInteger b -> Optional.of(Scopes.of(b.toString(), source));
            default -> throw new InvalidScopeException(source, "it is " + kind(value) + ", not a string or an integer");
        };
    }

    private static String kind(Object value) {
        return switch (value) {
            case Collection<?> c -> "a list";
            case Map<?, ?> m -> "an object";
            case Number n -> "a decimal number";
            case Boolean b -> "a boolean";
            default -> "a " + value.getClass().getSimpleName();
        };
    }

    @Override
    public String toString() {
        return "the JWT claim " + claim + " (IdempotencyScopeResolver.jwtClaim)";
    }
}
