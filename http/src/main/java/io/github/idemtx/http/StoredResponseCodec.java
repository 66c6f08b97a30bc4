package io.github.idemtx.http;

import io.github.idemtx.core.ResultCodec;
import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Stores a {@link StoredResponse} for replay: its status, its body, and only the headers on an
 * allow-list. Per-request headers (dates, trace ids, cookies, lengths) must never be replayed, so
 * they are left out; some can never be allowed at all.
 *
 * <p>The stored form is compact binary: a version byte, the status, the headers (length-prefixed
 * UTF-8) and the body. Immutable and thread-safe.
 */
public final class StoredResponseCodec implements ResultCodec<StoredResponse> {

    /** The headers replayed by default. */
    public static final Set<String> DEFAULT_HEADERS =
            Set.of("content-type", "content-language", "content-location", "location", "etag", "last-modified");

    /** Headers that describe one transmission or one client, never a result: they cannot be allowed. */
    public static final Set<String> NEVER_REPLAYED = Set.of(
            "content-length",
            "transfer-encoding",
            "connection",
            "keep-alive",
            "date",
            "set-cookie",
            "authorization",
            "traceparent",
            "tracestate",
            "x-request-id",
            "idempotent-replayed",
            "retry-after");

    private static final byte VERSION = 1;
    private static final StoredResponseCodec DEFAULT = new StoredResponseCodec(DEFAULT_HEADERS);

    private final Set<String> allowed;

    private StoredResponseCodec(Set<String> allowed) {
        this.allowed = Set.copyOf(allowed);
    }

    /** {@return the codec that replays {@link #DEFAULT_HEADERS}} */
    public static StoredResponseCodec defaults() {
        return DEFAULT;
    }

    /**
     * {@return a codec that replays this codec's headers ({@link #DEFAULT_HEADERS} for
     * {@link #defaults()}) and {@code more}} This codec is unchanged.
     *
     * @param more header names, in any case
     * @throws NullPointerException if a name is null
     * @throws IllegalArgumentException if one of them is in {@link #NEVER_REPLAYED}
     */
    public StoredResponseCodec allowing(String... more) {
        Set<String> next = new LinkedHashSet<>(allowed);
        for (String name : more) {
            String lower = StoredResponse.lower(Objects.requireNonNull(name, "header name must not be null"));
            if (NEVER_REPLAYED.contains(lower)) {
                throw new IllegalArgumentException(
                        "header " + name + " belongs to one request or transmission and is never replayed");
            }
            next.add(lower);
        }
        return new StoredResponseCodec(next);
    }

    /** {@return the header names (lower case) this codec keeps} */
    public Set<String> allowedHeaders() {
        return allowed;
    }

    @Override
    public byte[] encode(StoredResponse response) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64 + response.body().length);
        out.write(VERSION);
        writeShort(out, response.status());
        List<StoredResponse.Header> kept = new ArrayList<>();
        for (StoredResponse.Header h : response.headers()) {
            if (allowed.contains(StoredResponse.lower(h.name()))) {
                kept.add(h);
            }
        }
        writeShort(out, kept.size());
        for (StoredResponse.Header h : kept) {
            writeString(out, h.name());
            writeString(out, h.value());
        }
        out.writeBytes(response.body());
        return out.toByteArray();
    }

    @Override
    public StoredResponse decode(byte[] stored) {
        try {
            ByteBuffer in = ByteBuffer.wrap(stored);
            if (in.get() != VERSION) {
                throw new IllegalArgumentException("not a stored response of version " + VERSION);
            }
            int status = Short.toUnsignedInt(in.getShort());
            int count = Short.toUnsignedInt(in.getShort());
            List<StoredResponse.Header> headers = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                headers.add(new StoredResponse.Header(readString(in), readString(in)));
            }
            byte[] body = new byte[in.remaining()];
            in.get(body);
            return new StoredResponse(status, headers, body);
        } catch (BufferUnderflowException e) {
            throw new IllegalArgumentException("stored response is truncated", e);
        }
    }

    private static void writeShort(ByteArrayOutputStream out, int value) {
        out.write(value >>> 8);
        out.write(value);
    }

    private static void writeString(ByteArrayOutputStream out, String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > 0xFFFF) {
            throw new IllegalArgumentException("a header is longer than 65535 bytes");
        }
        writeShort(out, bytes.length);
        out.writeBytes(bytes);
    }

    private static String readString(ByteBuffer in) {
        byte[] bytes = new byte[Short.toUnsignedInt(in.getShort())];
        in.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "StoredResponseCodec" + allowed;
    }
}
