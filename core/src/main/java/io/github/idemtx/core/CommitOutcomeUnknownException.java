package io.github.idemtx.core;

/**
 * The connection was lost while the commit of the call was in flight: the claim, the work and the
 * result either all committed or none did, and this process cannot tell which. Retry with the same
 * key: the retry replays the committed result, or runs the work exactly once. The cause chain holds
 * the driver's connection error. Also thrown when the server committed but its synchronous standby had
 * not confirmed the commit (a cancel request ended the wait): a failover could still lose it.
 */
public final class CommitOutcomeUnknownException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /**
     * Reports a commit whose outcome is unknown.
     *
     * @param scope the call's scope
     * @param key the call's key
     * @param cause what reported the lost connection (the driver's error, or one that holds it)
     */
    public CommitOutcomeUnknownException(Scope scope, IdempotencyKey key, Throwable cause) {
        super(
                scope,
                key,
                "the connection was lost while the commit was in flight; it may or may not have committed:"
                        + " retry with the same key, which replays or runs exactly once",
                cause);
    }

    /**
     * Reports a commit whose outcome is unknown for another reason than a lost connection.
     *
     * @param scope the call's scope
     * @param key the call's key
     * @param why what happened to the commit, and what a retry does
     * @param cause the error or warning that says so
     */
    public CommitOutcomeUnknownException(Scope scope, IdempotencyKey key, String why, Throwable cause) {
        super(scope, key, why, cause);
    }
}
