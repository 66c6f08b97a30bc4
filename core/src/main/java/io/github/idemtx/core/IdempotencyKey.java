package io.github.idemtx.core;

import java.util.Objects;
import java.util.UUID;

/**
 * A client-chosen key naming one business intent; the client reuses it on every retry of that
 * intent.
 *
 * <p>A key is 1 to {@value #MAX_LENGTH} characters of printable ASCII (U+0020 to U+007E), not
 * blank. That is the alphabet of an {@code Idempotency-Key} header's string value, so any key a
 * client can send is representable, and nothing else is.
 *
 * @param value the key as stored; never null
 */
public record IdempotencyKey(String value) {

    /** The longest key accepted, in characters (the column is {@code varchar(255)}). */
    public static final int MAX_LENGTH = 255;

    /**
     * Validates the value.
     *
     * @throws NullPointerException if {@code value} is null
     * @throws IllegalArgumentException if {@code value} is blank, longer than {@value #MAX_LENGTH}
     *     characters, or holds a character outside printable ASCII; the message names it
     */
    public IdempotencyKey {
        Objects.requireNonNull(value, "key must not be null");
        if (value.isBlank()) {
            throw new IllegalArgumentException("key must not be blank");
        }
        if (value.length() > MAX_LENGTH) {
            throw new IllegalArgumentException(
                    "key must be at most " + MAX_LENGTH + " characters, was " + value.length());
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                throw new IllegalArgumentException("key must be printable ASCII (U+0020 to U+007E), found U+"
                        + String.format("%04X", (int) c) + " at index " + i);
            }
        }
    }

    /**
     * Same as {@code new IdempotencyKey(value)}.
     *
     * @param value the key; see {@link #IdempotencyKey(String) the constructor} for what is valid
     * @return the key
     * @throws NullPointerException if {@code value} is null
     * @throws IllegalArgumentException if {@code value} is not a valid key
     */
    public static IdempotencyKey of(String value) {
        return new IdempotencyKey(value);
    }

    /**
     * A fresh random key (a version 4 UUID), for a client to generate once per intent and reuse on
     * every retry of that intent.
     *
     * @return a new key, 36 characters long
     */
    public static IdempotencyKey random() {
        return new IdempotencyKey(UUID.randomUUID().toString());
    }

    @Override
    public String toString() {
        return value;
    }
}
