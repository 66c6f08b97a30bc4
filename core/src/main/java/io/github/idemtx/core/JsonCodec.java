package io.github.idemtx.core;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.Objects;

/**
 * A {@link ResultCodec} that stores results as JSON through Jackson ({@code jackson-databind} must
 * be on the class path; the core module declares it optional).
 *
 * <p>Thread-safe as long as the given {@code ObjectMapper} is not reconfigured after use.
 *
 * @param <T> the type of the result
 */
// Jackson is optional (requires static in module-info): a module that passes an ObjectMapper reads Jackson itself
@SuppressWarnings("exports")
public final class JsonCodec<T> implements ResultCodec<T> {

    private static final class DefaultMapper {
        static final ObjectMapper INSTANCE =
                JsonMapper.builder().findAndAddModules().build();
    }

    private final ObjectMapper mapper;
    private final JavaType type;

    private JsonCodec(ObjectMapper mapper, JavaType type) {
        this.mapper = mapper;
        this.type = type;
    }

    /**
     * {@return JSON for {@code type}, with a default mapper that registers the modules on the class path}
     *
     * @param <T> the type of the result
     * @param type the result's class
     * @throws NullPointerException if {@code type} is null
     */
    public static <T> JsonCodec<T> of(Class<T> type) {
        return of(DefaultMapper.INSTANCE, type);
    }

    /**
     * {@return JSON for {@code type} through {@code mapper}}
     *
     * @param <T> the type of the result
     * @param mapper the mapper to encode and decode with; not reconfigured afterwards
     * @param type the result's class
     * @throws NullPointerException if either is null
     */
    public static <T> JsonCodec<T> of(ObjectMapper mapper, Class<T> type) {
        Objects.requireNonNull(mapper, "mapper must not be null");
        Objects.requireNonNull(type, "type must not be null");
        return new JsonCodec<>(mapper, mapper.constructType(type));
    }

    /**
     * {@return JSON for a generic type such as {@code new TypeReference<List<Transfer>>() {}}}
     *
     * @param <T> the type of the result
     * @param mapper the mapper to encode and decode with; not reconfigured afterwards
     * @param type the result's type
     * @throws NullPointerException if either is null
     */
    public static <T> JsonCodec<T> of(ObjectMapper mapper, TypeReference<T> type) {
        Objects.requireNonNull(mapper, "mapper must not be null");
        Objects.requireNonNull(type, "type must not be null");
        return new JsonCodec<>(mapper, mapper.constructType(type));
    }

    @Override
    public byte[] encode(T value) throws Exception {
        return mapper.writerFor(type).writeValueAsBytes(value);
    }

    @Override
    public T decode(byte[] bytes) throws Exception {
        return mapper.readValue(bytes, type);
    }
}
