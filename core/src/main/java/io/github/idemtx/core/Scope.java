package io.github.idemtx.core;

import java.util.Objects;

/**
 * The namespace an idempotency key lives in: normally the authenticated principal or tenant.
 *
 * <p>Keys are unique per scope, never globally: the same key sent by two tenants names two
 * different intents, and one tenant can never see the other's stored result. The scope must come
 * from authentication, never from a value the client chooses.
 *
 * <p>A scope is 1 to {@value #MAX_LENGTH} Unicode code points, not blank, without control
 * characters (NUL included) and without unpaired surrogates, so that it is stored exactly as given.
 *
 * @param value the scope as stored; never null
 */
public record Scope(String value) {

    /** The longest scope accepted, in Unicode code points (the column is {@code varchar(255)}). */
    public static final int MAX_LENGTH = 255;

    /**
     * Validates the value.
     *
     * @throws NullPointerException if {@code value} is null
     * @throws IllegalArgumentException if {@code value} is blank, too long, or holds a control
     *     character or an unpaired surrogate; the message names what was wrong
     */
    public Scope {
        Objects.requireNonNull(value, "scope must not be null");
        if (value.isBlank()) {
            throw new IllegalArgumentException("scope must not be blank");
        }
        int length = value.codePointCount(0, value.length());
        if (length > MAX_LENGTH) {
            throw new IllegalArgumentException("scope must be at most " + MAX_LENGTH + " characters, was " + length);
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c)) {
                throw new IllegalArgumentException("scope must not contain control characters, found U+"
                        + String.format("%04X", (int) c) + " at index " + i);
            }
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                    i++;
                    continue;
                }
                throw new IllegalArgumentException(
                        "scope must not contain an unpaired surrogate, found one at index " + i);
            }
            if (Character.isLowSurrogate(c)) {
                throw new IllegalArgumentException(
                        "scope must not contain an unpaired surrogate, found one at index " + i);
            }
        }
    }

    /**
     * Same as {@code new Scope(value)}.
     *
     * @param value the scope; see {@link #Scope(String) the constructor} for what is valid
     * @return the scope
     * @throws NullPointerException if {@code value} is null
     * @throws IllegalArgumentException if {@code value} is not a valid scope
     */
    public static Scope of(String value) {
        return new Scope(value);
    }

    @Override
    public String toString() {
        return value;
    }
}
