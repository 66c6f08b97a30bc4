package io.github.idemtx.core;

/**
 * The connection was lost while the commit of the call was in flight: the claim, the work and the
 * result either all committed or none did, and this process cannot tell which. Retry with the same
 * key: the retry replays the committed result, or runs the work exactly once. The cause is the
 * driver's connection error.
 */
public final class CommitOutcomeUnknownException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /**
     * Reports a commit whose outcome is unknown.
     *
     * @param scope the call's scope
     * @param key the call's key
     * @param cause the driver's connection error
     */
    public CommitOutcomeUnknownException(Scope scope, IdempotencyKey key, Throwable cause) {
        super(
                scope,
                key,
                "the connection was lost while the commit was in flight; it may or may not have committed:"
                        + " retry with the same key, which replays or runs exactly once",
                cause);
    }
}
