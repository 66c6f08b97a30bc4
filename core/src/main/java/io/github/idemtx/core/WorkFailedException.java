package io.github.idemtx.core;

/**
 * The work threw a checked exception (the cause) that the policy does not call deterministic. The
 * call was rolled back whole; the key is free again. Unchecked exceptions from the work are never
 * wrapped.
 */
public final class WorkFailedException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /**
     * Wraps the work's checked exception.
     *
     * @param scope the call's scope
     * @param key the call's key
     * @param cause the work's checked exception
     */
    public WorkFailedException(Scope scope, IdempotencyKey key, Exception cause) {
        super(scope, key, "the work failed: " + cause, cause);
    }
}
