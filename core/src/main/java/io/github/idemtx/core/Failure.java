package io.github.idemtx.core;

import java.util.Objects;

/**
 * A deterministic failure as it is recorded and replayed: a machine-readable code and a message
 * for people.
 *
 * @param code what kind of failure, e.g. {@code "insufficient_funds"}; 1 to {@value #MAX_CODE_LENGTH}
 *     characters, not blank
 * @param message details for people, at most {@value #MAX_MESSAGE_LENGTH} characters; may be empty,
 *     never null
 */
public record Failure(String code, String message) {

    /** The longest code accepted. */
    public static final int MAX_CODE_LENGTH = 200;

    /** The longest message accepted; {@link #of(Throwable)} truncates longer exception messages. */
    public static final int MAX_MESSAGE_LENGTH = 4000;

    /**
     * Validates both components.
     *
     * @throws NullPointerException if {@code code} or {@code message} is null
     * @throws IllegalArgumentException if {@code code} is blank or either is too long
     */
    public Failure {
        Objects.requireNonNull(code, "code must not be null");
        Objects.requireNonNull(message, "message must not be null");
        if (code.isBlank()) {
            throw new IllegalArgumentException("code must not be blank");
        }
        if (code.length() > MAX_CODE_LENGTH) {
            throw new IllegalArgumentException(
                    "code must be at most " + MAX_CODE_LENGTH + " characters, was " + code.length());
        }
        if (message.length() > MAX_MESSAGE_LENGTH) {
            throw new IllegalArgumentException(
                    "message must be at most " + MAX_MESSAGE_LENGTH + " characters, was " + message.length());
        }
    }

    /**
     * Same as {@code new Failure(code, message)}.
     *
     * @param code what kind of failure; see {@link #code()}
     * @param message details for people; see {@link #message()}
     * @return the failure
     * @throws NullPointerException if either is null
     * @throws IllegalArgumentException if {@code code} is blank or either is too long
     */
    public static Failure of(String code, String message) {
        return new Failure(code, message);
    }

    /**
     * The default recording of an exception: its class's simple name as the code (the full name for
     * an anonymous class) and its message (empty if none) as the message, each cut to its maximum
     * length without splitting a surrogate pair.
     *
     * @param exception the exception to record; not null
     * @return the failure to record
     * @throws NullPointerException if {@code exception} is null
     */
    public static Failure of(Throwable exception) {
        Objects.requireNonNull(exception, "exception must not be null");
        String name = exception.getClass().getSimpleName();
        if (name.isEmpty()) {
            name = exception.getClass().getName();
        }
        String message = exception.getMessage() == null ? "" : exception.getMessage();
        return new Failure(truncate(name, MAX_CODE_LENGTH), truncate(message, MAX_MESSAGE_LENGTH));
    }

    /** Cuts to at most {@code max} chars without splitting a surrogate pair. */
    private static String truncate(String s, int max) {
        if (s.length() <= max) {
            return s;
        }
        int end = Character.isHighSurrogate(s.charAt(max - 1)) ? max - 1 : max;
        return s.substring(0, end);
    }
}
