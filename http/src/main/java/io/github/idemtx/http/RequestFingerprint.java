package io.github.idemtx.http;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.http.internal.JsonDepth;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.erdtman.jcs.JsonCanonicalizer;
import org.jspecify.annotations.Nullable;

/**
 * The fingerprint of an HTTP request: SHA-256 over its method, path, query (parameters sorted) and
 * body, so that a retry of the same request has the same fingerprint and a different request with
 * the same key does not.
 *
 * <ul>
 *   <li>{@link #raw}: the body as bytes; any change of a byte is another request.
 *   <li>{@link #json}: the body as JSON, in the JSON Canonicalization Scheme (RFC 8785): a retry
 *       that re-serialises the same JSON with other spacing, member order or number spelling is
 *       the same request.
 * </ul>
 *
 * <p>The digest covers a length-prefixed encoding of each part (a version tag, the method, the
 * path, the sorted query, the body kind and the body), so no two different requests share an
 * encoding. The query is split on {@code &}, empty parameters are dropped, and the rest are sorted
 * as strings, still percent-encoded; the path is taken as given. Stateless and thread-safe.
 */
public final class RequestFingerprint {

    /** The deepest JSON nesting {@link #json} accepts. */
    public static final int MAX_JSON_DEPTH = 256;

    private static final byte[] VERSION = "idemtx-request-v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] RAW = {'r'};
    private static final byte[] JSON = {'j'};

    private RequestFingerprint() {}

    /**
     * The fingerprint with the body taken byte for byte.
     *
     * @param method the HTTP method, e.g. {@code POST}
     * @param path the request path, e.g. {@code /transfers}
     * @param query the raw query string without {@code ?}; null or empty for none
     * @param body the body; null or empty for none
     * @return the fingerprint
     * @throws NullPointerException if {@code method} or {@code path} is null
     * @throws IllegalArgumentException if {@code method} is blank, or a part holds an unpaired surrogate
     */
    public static Fingerprint raw(String method, String path, @Nullable String query, byte @Nullable [] body) {
        return digest(method, path, query, RAW, body == null ? new byte[0] : body);
    }

    /**
     * The fingerprint with the body taken as JSON in its RFC 8785 canonical form. The body must be
     * UTF-8 JSON whose top level is an object or an array, without duplicate member names, with
     * finite numbers, nested at most {@value #MAX_JSON_DEPTH} levels.
     *
     * @param method the HTTP method, e.g. {@code POST}
     * @param path the request path, e.g. {@code /transfers}
     * @param query the raw query string without {@code ?}; null or empty for none
     * @param body the body, UTF-8 JSON
     * @return the fingerprint
     * @throws NullPointerException if {@code method}, {@code path} or {@code body} is null
     * @throws IllegalArgumentException if {@code method} is blank, or a part holds an unpaired surrogate
     * @throws InvalidJsonException naming the problem, if the body is not such JSON
     */
    public static Fingerprint json(String method, String path, @Nullable String query, byte[] body) {
        Objects.requireNonNull(body, "body must not be null");
        return digest(method, path, query, JSON, canonicalJson(body));
    }

    /**
     * {@return the RFC 8785 canonical form of a JSON text, as UTF-8}
     *
     * @param json UTF-8 JSON
     * @throws NullPointerException if {@code json} is null
     * @throws InvalidJsonException naming the problem, if it is not acceptable JSON (see {@link #json})
     */
    public static byte[] canonicalJson(byte[] json) {
        Objects.requireNonNull(json, "json must not be null");
        String text;
        try {
            text = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(json))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new InvalidJsonException("body is not valid UTF-8", e);
        }
        if (text.isBlank()) {
            throw new InvalidJsonException("body is empty, not JSON", null);
        }
        int depth = JsonDepth.of(text);
        if (depth > MAX_JSON_DEPTH) {
            throw new InvalidJsonException(
                    "JSON is nested " + depth + " levels deep, more than " + MAX_JSON_DEPTH, null);
        }
        try {
            return new JsonCanonicalizer(text).getEncodedUTF8();
        } catch (IOException | RuntimeException e) {
            throw new InvalidJsonException("body is not acceptable JSON: " + e.getMessage(), e);
        }
    }

    private static Fingerprint digest(String method, String path, @Nullable String query, byte[] kind, byte[] body) {
        Objects.requireNonNull(method, "method must not be null");
        Objects.requireNonNull(path, "path must not be null");
        if (method.isBlank()) {
            throw new IllegalArgumentException("method must not be blank");
        }
        MessageDigest sha256 = sha256();
        part(sha256, VERSION);
        part(sha256, utf8(method, "method"));
        part(sha256, utf8(path, "path"));
        part(sha256, utf8(sortedQuery(query), "query"));
        part(sha256, kind);
        part(sha256, body);
        return Fingerprint.of(sha256.digest());
    }

    /** The query's parameters, empty ones dropped, sorted and joined with {@code &}. */
    static String sortedQuery(@Nullable String query) {
        if (query == null || query.isEmpty()) {
            return "";
        }
        List<String> params = new ArrayList<>();
        for (String p : query.split("&", -1)) {
            if (!p.isEmpty()) {
                params.add(p);
            }
        }
        params.sort(null);
        return String.join("&", params);
    }

    private static void part(MessageDigest digest, byte[] bytes) {
        digest.update(ByteBuffer.allocate(8).putLong(bytes.length).array());
        digest.update(bytes);
    }

    private static byte[] utf8(String s, String name) {
        try {
            ByteBuffer encoded = StandardCharsets.UTF_8
                    .newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(s));
            byte[] bytes = new byte[encoded.remaining()];
            encoded.get(bytes);
            return bytes;
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(name + " holds an unpaired surrogate and cannot be encoded", e);
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform must provide SHA-256", e);
        }
    }
}
