package io.github.idemtx.http;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * An HTTP response as it is recorded for replay: status, the headers worth replaying, and body.
 * Record one as the result of an idempotent call with {@link StoredResponseCodec}, and a replay
 * sends the same status, headers and body again.
 *
 * <p>Immutable: the body is copied in and out.
 *
 * @param status the HTTP status, 100 to 599
 * @param headers the headers, in order; names keep their case but compare without it
 * @param body the body; empty for none, never null
 */
// the body is copied in and out, and equals, hashCode and toString below compare and show its contents
@SuppressWarnings("ArrayRecordComponent")
public record StoredResponse(int status, List<Header> headers, byte[] body) {

    /**
     * One header field.
     *
     * @param name the field name, an HTTP token; its case is kept
     * @param value the field value, without CR, LF or NUL
     */
    public record Header(String name, String value) {
        /**
         * Validates the name and value.
         *
         * @throws NullPointerException if either is null
         * @throws IllegalArgumentException if the name is not an HTTP token or the value holds CR, LF or NUL
         */
        public Header {
            Objects.requireNonNull(name, "header name must not be null");
            Objects.requireNonNull(value, "header value must not be null");
            if (name.isEmpty() || !name.chars().allMatch(Header::isTchar)) {
                throw new IllegalArgumentException("header name must be an HTTP token, was '" + name + "'");
            }
            if (value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("header value of " + name + " must not contain CR, LF or NUL");
            }
        }

        private static boolean isTchar(int c) {
            return (c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
        }
    }

    /**
     * Validates the status and copies the headers and body.
     *
     * @throws NullPointerException if {@code headers} or {@code body} is null
     * @throws IllegalArgumentException if {@code status} is not between 100 and 599
     */
    public StoredResponse {
        if (status < 100 || status > 599) {
            throw new IllegalArgumentException("status must be between 100 and 599, was " + status);
        }
        headers = List.copyOf(Objects.requireNonNull(headers, "headers must not be null"));
        body = Objects.requireNonNull(body, "body must not be null").clone();
    }

    /**
     * {@return a response with one {@code Content-Type} header}
     *
     * @param status the HTTP status, 100 to 599
     * @param contentType the {@code Content-Type} value
     * @param body the body; copied
     * @throws NullPointerException if {@code contentType} or {@code body} is null
     * @throws IllegalArgumentException if {@code status} is out of range or {@code contentType} holds CR, LF or NUL
     */
    public static StoredResponse of(int status, String contentType, byte[] body) {
        return new StoredResponse(status, List.of(new Header("Content-Type", contentType)), body);
    }

    /**
     * {@return a response with one {@code Content-Type} header and a UTF-8 body}
     *
     * @param status the HTTP status, 100 to 599
     * @param contentType the {@code Content-Type} value
     * @param body the body, stored as UTF-8
     * @throws NullPointerException if {@code contentType} or {@code body} is null
     * @throws IllegalArgumentException if {@code status} is out of range or {@code contentType} holds CR, LF or NUL
     */
    public static StoredResponse of(int status, String contentType, String body) {
        return of(status, contentType, body.getBytes(StandardCharsets.UTF_8));
    }

    /** {@return a copy of the body} */
    @Override
    public byte[] body() {
        return body.clone();
    }

    /** {@return the body decoded as UTF-8} */
    public String bodyText() {
        return new String(body, StandardCharsets.UTF_8);
    }

    /**
     * {@return the first value of header {@code name}, compared without case}
     *
     * @param name the header's name
     * @throws NullPointerException if {@code name} is null
     */
    public Optional<String> header(String name) {
        Objects.requireNonNull(name, "name must not be null");
        return headers.stream()
                .filter(h -> h.name().equalsIgnoreCase(name))
                .map(Header::value)
                .findFirst();
    }

    /**
     * {@return this response with one more header, replacing any of the same name}
     *
     * @param name the header's name, an HTTP token
     * @param value the header's value, without CR, LF or NUL
     * @throws NullPointerException if either is null
     * @throws IllegalArgumentException if {@link Header} refuses them
     */
    public StoredResponse withHeader(String name, String value) {
        List<Header> next = new ArrayList<>();
        for (Header h : headers) {
            if (!h.name().equalsIgnoreCase(name)) {
                next.add(h);
            }
        }
        next.add(new Header(name, value));
        return new StoredResponse(status, next, body);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredResponse other
                && status == other.status
                && headers.equals(other.headers)
                && Arrays.equals(body, other.body);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * status + headers.hashCode()) + Arrays.hashCode(body);
    }

    @Override
    public String toString() {
        return "StoredResponse[status=" + status + ", headers=" + headers + ", body=" + body.length + " bytes]";
    }

    static String lower(String name) {
        return name.toLowerCase(Locale.ROOT);
    }
}
