package io.github.idemtx.keys.internal;

import io.github.idemtx.core.internal.JsonText;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The bytes that derived keys are MACs of: compact JSON, byte-equal to Python's
 * {@code json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")}.
 * Strings are written by {@link JsonText}; callers pass object members already in
 * {@linkplain DerivedText#CODE_POINT_ORDER code-point order}.
 */
public final class DerivedMaterial {

    private DerivedMaterial() {}

    /**
     * {@code [tenant, action, {names[i]: values[i], ...}, bucket]}.
     *
     * @param names the object's member names, in code-point order, without duplicates
     * @param values the members' values, in the same order
     */
    public static byte[] derived(String tenant, String action, List<String> names, List<String> values, long bucket) {
        if (names.size() != values.size()) {
            throw new IllegalArgumentException("names and values differ in size");
        }
        StringBuilder json = new StringBuilder(64 + 32 * names.size());
        json.append('[');
        JsonText.appendString(json, tenant).append(',');
        JsonText.appendString(json, action).append(",{");
        for (int i = 0; i < names.size(); i++) {
            if (i > 0) {
                json.append(',');
            }
            JsonText.appendString(json, names.get(i)).append(':');
            JsonText.appendString(json, values.get(i));
        }
        json.append("},").append(bucket).append(']');
        return json.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** {@code [scope, key, step]}. */
    public static byte[] downstream(String scope, String key, String step) {
        StringBuilder json = new StringBuilder(16 + scope.length() + key.length() + step.length());
        json.append('[');
        JsonText.appendString(json, scope).append(',');
        JsonText.appendString(json, key).append(',');
        JsonText.appendString(json, step).append(']');
        return json.toString().getBytes(StandardCharsets.UTF_8);
    }
}
