package io.github.idemtx.spring.web;

import io.github.idemtx.core.Scope;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Objects;
import java.util.Optional;
import org.springframework.util.ClassUtils;

/**
 * Tells the {@link Scope} of a request: the namespace its {@code Idempotency-Key} lives in, resolved
 * for every controller parameter of type {@code Scope}. Keys are unique per scope, so the scope must
 * name whoever the request acts for (a user, a tenant), as authentication established it, never a
 * value the client chooses.
 *
 * <p>The web auto-configuration registers one unless the application defines its own bean of this
 * type: {@link #jwtClaim(String) a JWT claim} when {@code idemtx.web.scope.jwt-claim} is set,
 * otherwise {@link #principal() the authenticated principal's name} when Spring Security is on the
 * class path, otherwise {@link #unconfigured()}, which refuses every request that asks for a scope and
 * names this fix. An application's own bean (a lambda will do) always wins.
 *
 * <p><b>Contract.</b> {@link #resolve} is called on the request's thread, after the servlet filters
 * (Spring Security's included), concurrently for many requests: an implementation must be
 * thread-safe. It never receives null and must not return null (an {@code IllegalStateException}
 * naming the implementation then fails the request). {@link Optional#empty()} means the request has
 * no scope: the argument is refused with {@link MissingScopeException}, answered 401. A value that
 * is there but is not a valid scope should be refused with {@link InvalidScopeException}, answered
 * 400 with what was wrong; any other exception reaches Spring MVC's exception handling unchanged.
 * {@code toString()} should say where the scope comes from: refusals quote it.
 */
@FunctionalInterface
public interface IdempotencyScopeResolver {

    /**
     * {@return the request's scope, or empty when it has none}
     *
     * @param request the request whose handler asks for a {@link Scope}; never null
     * @throws InvalidScopeException if the request carries a value that is not a valid scope
     */
    Optional<Scope> resolve(HttpServletRequest request);

    /**
     * The authenticated principal's name, {@code HttpServletRequest.getUserPrincipal().getName()}:
     * the default with Spring Security, whose servlet API integration (on by default) sets it for an
     * authenticated request and not for an anonymous one; container authentication and an
     * application's own filter set it too. No principal, or one with an empty name: empty (401).
     *
     * @return the resolver; stateless and thread-safe
     */
    static IdempotencyScopeResolver principal() {
        return PrincipalScopeResolver.INSTANCE;
    }

    /**
     * The value of a request header. <b>Only safe when a trusted gateway sets the header</b> after
     * authenticating the request and removes any copy the client sent: a client that can set it
     * chooses its own scope, and with it can replay, or block, another tenant's keys. Never use a
     * header the client controls. No such header: empty (401); the header sent more than once, or a
     * value that is not a valid scope (blank, over {@value Scope#MAX_LENGTH} characters, a control
     * character): {@link InvalidScopeException} (400) naming the header.
     *
     * @param headerName the header, e.g. {@code X-Tenant-Id}: an HTTP field name (RFC 9110 token)
     * @return the resolver; immutable and thread-safe
     * @throws NullPointerException if {@code headerName} is null
     * @throws IllegalArgumentException if {@code headerName} is not a valid header name
     */
    static IdempotencyScopeResolver trustedHeader(String headerName) {
        return new TrustedHeaderScopeResolver(headerName);
    }

    /**
     * A claim of the request's JWT, such as a tenant id: the principal must be a Spring Security
     * {@code Authentication} whose principal is a {@code Jwt} (what {@code oauth2ResourceServer().jwt()}
     * sets: a {@code JwtAuthenticationToken}). Needs Spring Security's JWT support on the class path
     * ({@code spring-boot-starter-security-oauth2-resource-server}). No such principal, or the token
     * has no such claim: empty (401). A claim that is a string or an integer is the scope; another
     * type (a list, an object, a decimal), or a value that is not a valid scope:
     * {@link InvalidScopeException} (400) naming the claim.
     *
     * @param claim the claim's name, e.g. {@code tenant_id}; not blank
     * @return the resolver; immutable and thread-safe
     * @throws NullPointerException if {@code claim} is null
     * @throws IllegalArgumentException if {@code claim} is blank
     * @throws IllegalStateException if Spring Security's {@code Jwt} is not on the class path
     */
    static IdempotencyScopeResolver jwtClaim(String claim) {
        Objects.requireNonNull(claim, "claim must not be null");
        if (claim.isBlank()) {
            throw new IllegalArgumentException("the JWT claim naming the scope must not be blank");
        }
        if (!ClassUtils.isPresent(JwtClaimScopeResolver.JWT, IdempotencyScopeResolver.class.getClassLoader())) {
            throw new IllegalStateException(JwtClaimScopeResolver.MISSING_JWT);
        }
        return new JwtClaimScopeResolver(claim);
    }

    /**
     * Refuses every request that asks for a scope, with {@link ScopeNotConfiguredException}
     * (answered 500) naming the fix: define a bean of this type. The auto-configuration's default
     * when Spring Security is not on the class path, where nothing tells who a request acts for; an
     * application has no reason to call it.
     *
     * @return the resolver; thread-safe
     */
    static IdempotencyScopeResolver unconfigured() {
        return UnconfiguredScopeResolver.INSTANCE;
    }
}
