package io.github.idemtx.core;

import java.nio.charset.StandardCharsets;

/**
 * Turns the work's result into the bytes stored with the claim, and back for a replay.
 *
 * <p>Implementations must be thread-safe and deterministic enough that {@code decode(encode(v))}
 * is equal to {@code v} for the purposes of the caller. They never see null: a null result is
 * stored as null and replayed as null without calling the codec. An exception thrown by
 * {@link #encode} rolls the whole call back (nothing is recorded) and reaches the caller, unchecked
 * ones unchanged and checked ones wrapped in an {@link IdempotencyException}; one thrown by
 * {@link #decode} is reported as an {@link IdempotencyException}.
 *
 * @param <T> the type of the result
 */
public interface ResultCodec<T> {

    /**
     * {@return the bytes to store for {@code value}}
     *
     * @param value the work's result; never null
     * @throws Exception if the value cannot be encoded; the call is rolled back
     */
    byte[] encode(T value) throws Exception;

    /**
     * {@return the value stored as {@code bytes}}
     *
     * @param bytes what {@link #encode} returned, as stored; never null
     * @throws Exception if the bytes cannot be decoded; reported as an {@link IdempotencyException}
     */
    T decode(byte[] bytes) throws Exception;

    /** {@return a codec for strings, as UTF-8} */
    static ResultCodec<String> utf8() {
        return Utf8Codec.INSTANCE;
    }

    /** {@return a codec for byte arrays as they are (copied on the way in and out)} */
    static ResultCodec<byte[]> bytes() {
        return BytesCodec.INSTANCE;
    }

    /**
     * JSON through Jackson, with a default {@code ObjectMapper} that registers the modules found on
     * the class path. Needs Jackson 2's {@code jackson-databind} on the class path (without it:
     * an {@link IllegalStateException} naming the fix); see {@link JsonCodec} for generic types and
     * custom mappers.
     *
     * @param <T> the type of the result
     * @param type the result's class
     * @return the codec
     * @throws NullPointerException if {@code type} is null
     * @throws IllegalStateException if Jackson 2 is not on the class path
     */
    static <T> ResultCodec<T> json(Class<T> type) {
        try {
            return JsonCodec.of(type);
        } catch (NoClassDefFoundError e) {
            if (e.getMessage() == null || !e.getMessage().contains("com/fasterxml/jackson")) {
                throw e;
            }
            throw new IllegalStateException(
                    "ResultCodec.json needs Jackson 2 (com.fasterxml.jackson.core:jackson-databind)"
                            + " on the class path, and it is not there (Spring Boot 4 brings Jackson 3, tools.jackson, instead):"
                            + " add jackson-databind 2.x, or on Spring Boot use IdempotentTransactions.json(...) or JsonMapperCodec"
                            + " from idemtx-spring-boot-autoconfigure, which store through Jackson 3",
                    e);
        }
    }
}

enum Utf8Codec implements ResultCodec<String> {
    INSTANCE;

    @Override
    public byte[] encode(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String decode(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}

enum BytesCodec implements ResultCodec<byte[]> {
    INSTANCE;

    @Override
    public byte[] encode(byte[] value) {
        return value.clone();
    }

    @Override
    public byte[] decode(byte[] bytes) {
        return bytes.clone();
    }
}
