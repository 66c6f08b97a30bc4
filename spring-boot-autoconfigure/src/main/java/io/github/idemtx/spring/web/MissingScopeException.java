package io.github.idemtx.spring.web;

/**
 * A handler asked for a {@link io.github.idemtx.core.Scope} but the request has no authenticated
 * principal: keys belong to a principal, never to a header. Answered 401 with a problem detail.
 */
public final class MissingScopeException extends RuntimeException {

    /** Refuses a request without an authenticated principal; the message says so. */
    public MissingScopeException() {
        super("the request has no authenticated principal, and idempotency keys belong to one");
    }
}
