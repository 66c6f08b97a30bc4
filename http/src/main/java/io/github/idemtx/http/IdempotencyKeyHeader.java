package io.github.idemtx.http;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.http.InvalidIdempotencyKeyException.Reason;
import io.github.idemtx.http.internal.StructuredFieldParser;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Reads and writes the {@code Idempotency-Key} request header (IETF draft
 * draft-ietf-httpapi-idempotency-key-header).
 *
 * <p>The draft defines the value as a Structured Field Item whose bare item is a string
 * (RFC 9651): {@code Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"}. Most clients send the
 * key unquoted, often a bare UUID, which is not a valid Item when it starts with a digit. So:
 * <ul>
 *   <li>a value that starts with {@code "} must be exactly one sf-string, without parameters; its
 *       content is the key;
 *   <li>any other value is the key itself, literally, when it consists of printable ASCII without
 *       spaces, quotes, backslashes, commas or semicolons, and does not start with a character
 *       that marks another Structured Field type ({@code ?} boolean, {@code :} byte sequence,
 *       {@code @} date, {@code %} display string, {@code (} inner list).
 * </ul>
 * So {@code "abc"} and {@code abc} are the same key. Leading and trailing spaces are ignored.
 * Everything else is refused with an {@link InvalidIdempotencyKeyException} whose
 * {@link InvalidIdempotencyKeyException.Reason} says why: missing, empty, several header
 * instances, longer than {@value IdempotencyKey#MAX_LENGTH} characters, characters outside
 * printable ASCII, parameters, another item type, or a malformed string.
 *
 * <p>Stateless and thread-safe.
 */
public final class IdempotencyKeyHeader {

    /** The header's name. */
    public static final String NAME = "Idempotency-Key";

    private IdempotencyKeyHeader() {}

    /**
     * The key of a request, given every value of its {@code Idempotency-Key} header (as a servlet
     * container or {@code HttpExchange} reports them; null or empty when there is none).
     *
     * @param values the header's values; null or empty means the header is missing
     * @return the key
     * @throws InvalidIdempotencyKeyException if the header is missing, repeated or invalid
     */
    public static IdempotencyKey parse(@Nullable List<String> values) {
        if (values == null || values.isEmpty()) {
            throw new InvalidIdempotencyKeyException(Reason.MISSING, "the " + NAME + " header is missing");
        }
        if (values.size() > 1) {
            throw new InvalidIdempotencyKeyException(
                    Reason.MULTIPLE,
                    "the " + NAME + " header must appear once, it appeared " + values.size() + " times");
        }
        return parse(values.get(0));
    }

    /**
     * The key in one header value.
     *
     * @param value the header's value; null means the header is missing
     * @return the key
     * @throws InvalidIdempotencyKeyException if it is not a usable key
     */
    public static IdempotencyKey parse(@Nullable String value) {
        if (value == null) {
            throw new InvalidIdempotencyKeyException(Reason.MISSING, "the " + NAME + " header is missing");
        }
        String trimmed = trimSpaces(value);
        if (trimmed.isEmpty()) {
            throw new InvalidIdempotencyKeyException(Reason.EMPTY, "the " + NAME + " header is empty");
        }
        String key = trimmed.charAt(0) == '"' ? quoted(trimmed) : unquoted(trimmed);
        if (key.isBlank()) {
            throw new InvalidIdempotencyKeyException(Reason.EMPTY, "the " + NAME + " header holds an empty key");
        }
        if (key.length() > IdempotencyKey.MAX_LENGTH) {
            throw new InvalidIdempotencyKeyException(
                    Reason.TOO_LONG,
                    "the key in the " + NAME + " header must be at most " + IdempotencyKey.MAX_LENGTH
                            + " characters, was " + key.length());
        }
        return new IdempotencyKey(key);
    }

    /**
     * The header value for {@code key}, as the draft defines it: an sf-string, quoted, with
     * {@code "} and {@code \} escaped. For clients.
     *
     * @param key the key to send
     * @return the header value, quoted
     * @throws NullPointerException if {@code key} is null
     */
    public static String format(IdempotencyKey key) {
        Objects.requireNonNull(key, "key must not be null");
        StringBuilder out = new StringBuilder(key.value().length() + 2).append('"');
        for (int i = 0; i < key.value().length(); i++) {
            char c = key.value().charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\');
            }
            out.append(c);
        }
        return out.append('"').toString();
    }

    private static String quoted(String value) {
        StructuredFieldParser.Item item;
        try {
            item = StructuredFieldParser.parseItem(value);
        } catch (StructuredFieldParser.ParseException e) {
            Reason reason = nonPrintableAt(value) >= 0 ? Reason.INVALID_CHARACTER : Reason.MALFORMED;
            throw new InvalidIdempotencyKeyException(
                    reason, "the " + NAME + " header is not a valid Structured Field string: " + e.getMessage());
        }
        if (!item.parameters().isEmpty()) {
            throw new InvalidIdempotencyKeyException(
                    Reason.PARAMETERS,
                    "the " + NAME + " header must not carry parameters, found "
                            + item.parameters().keySet());
        }
        return (String) item.value(); // a value starting with '"' can only parse as a string
    }

    private static String unquoted(String value) {
        char first = value.charAt(0);
        @Nullable
        String type = switch (first) {
            case '?' -> "a boolean";
            case ':' -> "a byte sequence";
            case '@' -> "a date";
            case '%' -> "a display string";
            case '(' -> "an inner list";
            default -> null;
        };
        if (type != null) {
            throw new InvalidIdempotencyKeyException(
                    Reason.NOT_A_STRING,
                    "the " + NAME + " header must be a string, but starts like " + type + " ('" + first + "')");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x21 || c > 0x7E) {
                throw new InvalidIdempotencyKeyException(
                        Reason.INVALID_CHARACTER,
                        "the " + NAME
                                + " header must be printable ASCII without spaces unless quoted, found "
                                + String.format("U+%04X", (int) c) + " at index " + i);
            }
            if (c == ';') {
                throw new InvalidIdempotencyKeyException(
                        Reason.PARAMETERS,
                        "the " + NAME + " header must not carry parameters (';' at index " + i
                                + "); quote a key that contains ';'");
            }
            if (c == ',') {
                throw new InvalidIdempotencyKeyException(
                        Reason.MULTIPLE,
                        "the " + NAME + " header must hold one key, but ',' at index " + i
                                + " joins several; quote a key that contains ','");
            }
            if (c == '"' || c == '\\') {
                throw new InvalidIdempotencyKeyException(
                        Reason.INVALID_CHARACTER,
                        "the " + NAME + " header must quote a key containing '" + c + "' (index " + i + ")");
            }
        }
        return value;
    }

    private static int nonPrintableAt(String value) {
        for (int i = 0; i < value.length(); i++) {
            if (value.charAt(i) < 0x20 || value.charAt(i) > 0x7E) {
                return i;
            }
        }
        return -1;
    }

    private static String trimSpaces(String value) {
        int start = 0;
        int end = value.length();
        while (start < end && value.charAt(start) == ' ') {
            start++;
        }
        while (end > start && value.charAt(end - 1) == ' ') {
            end--;
        }
        return value.substring(start, end);
    }
}
