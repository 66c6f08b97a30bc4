package io.github.idemtx.jooq.outbox;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/** The headers as the outbox table stores them: one {@code name: value} per line, readable by an operator. */
final class Headers {

    static final int MAX_STORED = 65_535;

    private Headers() {}

    static String requireName(String name) {
        Objects.requireNonNull(name, "header name must not be null");
        if (name.isEmpty() || !name.chars().allMatch(ch -> ch > 0x20 && ch < 0x7f && ch != ':')) {
            throw new IllegalArgumentException(
                    "header name must be printable ASCII without ':' or spaces, was '" + name + "'");
        }
        return name;
    }

    static String requireValue(String name, String value) {
        Objects.requireNonNull(value, "header " + name + "'s value must not be null");
        if (value.indexOf('\n') >= 0 || value.indexOf('\r') >= 0 || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("header " + name + "'s value must not contain a line break");
        }
        return value;
    }

    static @Nullable String encode(Map<String, String> headers) {
        if (headers.isEmpty()) {
            return null;
        }
        StringBuilder out = new StringBuilder();
        headers.forEach((k, v) -> out.append(k).append(": ").append(v).append('\n'));
        if (out.length() > MAX_STORED) {
            throw new IllegalArgumentException(
                    "headers must take at most " + MAX_STORED + " characters stored, took " + out.length());
        }
        return out.toString();
    }

    static Map<String, String> decode(@Nullable String stored) {
        if (stored == null || stored.isEmpty()) {
            return Map.of();
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (String line : stored.lines().toList()) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                headers.put(line.substring(0, colon), line.substring(Math.min(line.length(), colon + 2)));
            }
        }
        return Collections.unmodifiableMap(headers);
    }
}
