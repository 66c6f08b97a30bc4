package io.github.idemtx.http;

import io.github.idemtx.core.IdempotencyKey;
import java.util.Objects;

/**
 * An {@code Idempotency-Key} header that cannot be used, with the reason (HTTP: 400). The message
 * says what is wrong and where, without echoing the value the client sent.
 */
public final class InvalidIdempotencyKeyException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /** Why a header value was refused. */
    public enum Reason {
        /** The request has no {@code Idempotency-Key} header. */
        MISSING,
        /** The header is present but empty (or only spaces, or an empty string {@code ""}). */
        EMPTY,
        /** More than one {@code Idempotency-Key} header; the draft allows exactly one. */
        MULTIPLE,
        /** The key is longer than {@value IdempotencyKey#MAX_LENGTH} characters. */
        TOO_LONG,
        /** A character outside printable ASCII, or one an unquoted key may not contain. */
        INVALID_CHARACTER,
        /** The value is a Structured Field Item with parameters, which are not accepted. */
        PARAMETERS,
        /** The value is a Structured Field Item of another type than a string (boolean, byte sequence, ...). */
        NOT_A_STRING,
        /** The value starts as a quoted string but is not a valid one. */
        MALFORMED
    }

    /** Why the value was refused. */
    private final Reason reason;

    /**
     * Refuses a header value.
     *
     * @param reason why the value was refused
     * @param message what is wrong and where; must not echo the value the client sent
     * @throws NullPointerException if either is null
     */
    public InvalidIdempotencyKeyException(Reason reason, String message) {
        super(Objects.requireNonNull(message, "message"));
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** {@return why the value was refused} */
    public Reason reason() {
        return reason;
    }
}
