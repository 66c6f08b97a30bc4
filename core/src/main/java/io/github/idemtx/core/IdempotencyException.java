package io.github.idemtx.core;

import org.jspecify.annotations.Nullable;

/**
 * The root of every exception this library throws about a call, carrying the scope and key the
 * call was for. Unchecked.
 *
 * <p>Exceptions thrown by the work itself are not wrapped: a {@link RuntimeException} from the work
 * reaches the caller unchanged, and only a checked one is wrapped, once, in a
 * {@link WorkFailedException}. Invalid arguments are reported with the standard
 * {@link NullPointerException} and {@link IllegalArgumentException} before any SQL runs.
 */
public class IdempotencyException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient @Nullable Scope scope;
    private final transient @Nullable IdempotencyKey key;

    /**
     * Creates the exception; the message is completed with the scope and key when there are any.
     *
     * @param scope the call's scope; null only for an operation that is not one call (a purge)
     * @param key the call's key; null only when {@code scope} is
     * @param message what went wrong
     * @param cause the underlying exception, or null
     */
    public IdempotencyException(
            @Nullable Scope scope, @Nullable IdempotencyKey key, String message, @Nullable Throwable cause) {
        super(scope == null && key == null ? message : message + " (scope '" + scope + "', key '" + key + "')", cause);
        this.scope = scope;
        this.key = key;
    }

    /** {@return the scope of the call that failed; null for an operation that is not one call} */
    public @Nullable Scope scope() {
        return scope;
    }

    /** {@return the key of the call that failed; null for an operation that is not one call} */
    public @Nullable IdempotencyKey key() {
        return key;
    }
}
