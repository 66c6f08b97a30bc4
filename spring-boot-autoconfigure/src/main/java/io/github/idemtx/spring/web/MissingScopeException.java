package io.github.idemtx.spring.web;

import java.util.Objects;

/**
 * A handler asked for a {@link io.github.idemtx.core.Scope} but the {@link IdempotencyScopeResolver}
 * found none in the request (no authenticated principal, by default): keys belong to a scope that
 * authentication established, never to one the client chooses. Answered 401 with a problem detail.
 */
public final class MissingScopeException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * Refuses a request without a scope; the message names where the resolver looked.
     *
     * @param resolver the resolver that found none; its {@code toString()} says where it looked
     * @throws NullPointerException if {@code resolver} is null
     */
    public MissingScopeException(IdempotencyScopeResolver resolver) {
        super("the request has no scope: none in "
                + Objects.requireNonNull(resolver, "resolver must not be null")
                + "; idempotency keys belong to a scope that authentication established");
    }
}
