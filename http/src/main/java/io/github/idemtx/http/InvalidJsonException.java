package io.github.idemtx.http;

import org.jspecify.annotations.Nullable;

/**
 * A request body given to {@link RequestFingerprint#json} is not JSON that can be canonicalised
 * (HTTP: 400). The message names the problem.
 */
public final class InvalidJsonException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /**
     * Refuses a body.
     *
     * @param message what is wrong and where
     * @param cause the parser's exception, or null
     */
    public InvalidJsonException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
