package io.github.idemtx.spring;

import io.github.idemtx.core.ResultCodec;
import java.util.Objects;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.json.JsonMapper;

/**
 * Stores results as JSON through a Jackson 3 {@link JsonMapper}, typically the application's own
 * (Spring Boot 4 configures Jackson 3); {@code ResultCodec.json} in core is its Jackson 2
 * counterpart. Thread-safe.
 *
 * @param <T> the result type
 */
public final class JsonMapperCodec<T> implements ResultCodec<T> {

    private final JsonMapper mapper;
    private final JavaType type;

    private JsonMapperCodec(JsonMapper mapper, JavaType type) {
        this.mapper = mapper;
        this.type = type;
    }

    /**
     * {@return a codec for results of class {@code type}, written and read by {@code mapper}}
     *
     * @param <T> the result type
     * @param mapper the mapper; not reconfigured afterwards
     * @param type the result's class
     * @throws NullPointerException if either is null
     */
    public static <T> JsonMapperCodec<T> of(JsonMapper mapper, Class<T> type) {
        Objects.requireNonNull(mapper, "mapper must not be null");
        Objects.requireNonNull(type, "type must not be null");
        return new JsonMapperCodec<>(mapper, mapper.constructType(type));
    }

    /**
     * {@return a codec for results of a generic type, e.g. {@code new TypeReference<List<Payment>>() {}}}
     *
     * @param <T> the result type
     * @param mapper the mapper; not reconfigured afterwards
     * @param type the result's type
     * @throws NullPointerException if either is null
     */
    public static <T> JsonMapperCodec<T> of(JsonMapper mapper, TypeReference<T> type) {
        Objects.requireNonNull(mapper, "mapper must not be null");
        Objects.requireNonNull(type, "type must not be null");
        return new JsonMapperCodec<>(mapper, mapper.constructType(type));
    }

    @Override
    public byte[] encode(T value) {
        return mapper.writeValueAsBytes(value);
    }

    @Override
    public T decode(byte[] bytes) {
        return mapper.readValue(bytes, type);
    }

    @Override
    public String toString() {
        return "JsonMapperCodec[" + type + "]";
    }
}
