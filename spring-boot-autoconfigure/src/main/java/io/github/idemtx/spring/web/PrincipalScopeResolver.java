package io.github.idemtx.spring.web;

import io.github.idemtx.core.Scope;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.Optional;

/** {@link IdempotencyScopeResolver#principal()}. */
final class PrincipalScopeResolver implements IdempotencyScopeResolver {

    static final PrincipalScopeResolver INSTANCE = new PrincipalScopeResolver();

    private PrincipalScopeResolver() {}

    @Override
    public Optional<Scope> resolve(HttpServletRequest request) {
        Principal principal = request.getUserPrincipal();
        String name = principal == null ? null : principal.getName();
        if (name == null || name.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(Scopes.of(name, "the authenticated principal's name"));
    }

    @Override
    public String toString() {
        return "the authenticated principal's name (IdempotencyScopeResolver.principal())";
    }
}
