package io.github.idemtx.core;

import org.jspecify.annotations.Nullable;

/**
 * Every attempt of the call failed with a serialization failure (SQLSTATE 40001) or a deadlock
 * (40P01), and the policy's attempt budget is spent. Each attempt was rolled back whole: nothing was
 * committed, and the key is free again. The cause is the last attempt's failure.
 */
public final class RetriesExhaustedException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /** How many attempts were made. */
    private final int attempts;

    /**
     * Reports a spent attempt budget.
     *
     * @param scope the call's scope; null for a unit of no one call (an external effect's recovery pass)
     * @param key the call's key; null likewise
     * @param attempts how many attempts were made
     * @param cause the last attempt's failure
     */
    public RetriesExhaustedException(
            @Nullable Scope scope, @Nullable IdempotencyKey key, int attempts, Throwable cause) {
        super(
                scope,
                key,
                "gave up after " + attempts + " attempts, each ended by a serialization failure or deadlock"
                        + " (IdempotencyPolicy.maxAttempts = " + attempts + "); nothing was committed",
                cause);
        this.attempts = attempts;
    }

    /** {@return how many attempts were made} */
    public int attempts() {
        return attempts;
    }
}
