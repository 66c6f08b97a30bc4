package io.github.idemtx.core;

import org.jspecify.annotations.Nullable;

/**
 * The library cannot tell, or was told something that contradicts what it sees, whether the call
 * owns its transaction or joins the caller's: committing could split the caller's transaction and
 * joining could leave an acknowledged result uncommitted, so it refuses before any SQL of the call
 * runs and before the work runs. Nothing was written. The message names the fix (state the
 * transaction mode on the builder, or put the framework's detector on the class path).
 */
public final class TransactionOwnershipException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /**
     * Reports a refusal over transaction ownership.
     *
     * @param scope the call's scope, or null for a purge
     * @param key the call's key, or null for a purge
     * @param message what was seen and how to fix it
     */
    public TransactionOwnershipException(@Nullable Scope scope, @Nullable IdempotencyKey key, String message) {
        super(scope, key, message, null);
    }
}
