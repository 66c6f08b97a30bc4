package io.github.idemtx.spring.web;

/**
 * A handler asked for a {@link io.github.idemtx.core.Scope}, but the application has not said where
 * scopes come from: there is no {@link IdempotencyScopeResolver} bean of its own and Spring Security
 * is not on the class path, so the auto-configuration's {@link IdempotencyScopeResolver#unconfigured()}
 * refuses. A server error (answered 500), not the client's: the message names the fix.
 */
public final class ScopeNotConfiguredException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    /** Refuses, naming the fix. */
    public ScopeNotConfiguredException() {
        super("a handler asks for a Scope, but nothing tells the scope of a request: Spring Security is not on the"
                + " class path and the application defines no IdempotencyScopeResolver bean. Define one (e.g."
                + " IdempotencyScopeResolver.principal() over the application's own authentication,"
                + " IdempotencyScopeResolver.trustedHeader(...) behind a trusted gateway, or the application's own),"
                + " or add Spring Security");
    }
}
