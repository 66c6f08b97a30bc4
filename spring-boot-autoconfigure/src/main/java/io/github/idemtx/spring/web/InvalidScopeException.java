package io.github.idemtx.spring.web;

import java.util.Objects;

/**
 * The request carries a scope that is not a valid {@link io.github.idemtx.core.Scope} (blank, too
 * long, a control character; a header sent twice; a JWT claim of the wrong type). Answered 400 with a
 * problem detail whose detail is this message. {@link IdempotencyScopeResolver} implementations throw
 * it for a value that is there but unusable.
 */
public final class InvalidScopeException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** Where the value came from. */
    private final String source;

    /** What is wrong with it. */
    private final String reason;

    /**
     * Refuses a value, naming its source and what is wrong.
     *
     * @param source where the value came from, e.g. "the header X-Tenant-Id"
     * @param reason what is wrong with it, e.g. "scope must not be blank"
     * @throws NullPointerException if an argument is null
     */
    public InvalidScopeException(String source, String reason) {
        super("the scope from " + Objects.requireNonNull(source, "source must not be null") + " is not valid: "
                + Objects.requireNonNull(reason, "reason must not be null"));
        this.source = source;
        this.reason = reason;
    }

    /** {@return where the value came from, e.g. "the header X-Tenant-Id"} */
    public String source() {
        return source;
    }

    /** {@return what is wrong with it} */
    public String reason() {
        return reason;
    }
}
