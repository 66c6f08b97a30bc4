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

    /** The bytes to store for {@code value}; never called with null. */
    byte[] encode(T value) throws Exception;

    /** The value stored as {@code bytes}; never called with null. */
    T decode(byte[] bytes) throws Exception;

    /** Strings as UTF-8. */
    static ResultCodec<String> utf8() {
        return Utf8Codec.INSTANCE;
    }

    /** Byte arrays as they are (copied on the way in and out). */
    static ResultCodec<byte[]> bytes() {
        return BytesCodec.INSTANCE;
    }

    /**
     * JSON through Jackson, with a default {@code ObjectMapper} that registers the modules found on
     * the class path. Needs Jackson 2's {@code jackson-databind} on the class path (without it:
     * an {@link IllegalStateException} naming the fix); see {@link JsonCodec} for generic types and
     * custom mappers.
     */
    static <T> ResultCodec<T> json(Class<T> type) {
        try {
            return JsonCodec.of(type);
        } catch (NoClassDefFoundError e) {
            if (e.getMessage() == null || !e.getMessage().contains("com/fasterxml/jackson")) {
                throw e;
            }
            throw new IllegalStateException("ResultCodec.json needs Jackson 2 (com.fasterxml.jackson.core:jackson-databind)"
                    + " on the class path, and it is not there (Spring Boot 4 brings Jackson 3, tools.jackson, instead):"
                    + " add jackson-databind 2.x, or on Spring Boot use IdempotentTransactions.json(...) or JsonMapperCodec"
                    + " from idemtx-spring-boot-autoconfigure, which store through Jackson 3", e);
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
