package io.github.idemtx.http.internal;

import java.math.BigDecimal;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A strict parser for one Structured Field Item (RFC 9651, section 4.2.3): a bare item and its
 * parameters, surrounded by optional spaces. Nothing else is accepted; every failure says where
 * and why. Stateless apart from the cursor; one instance per parse.
 */
public final class StructuredFieldParser {

    /** A token (as opposed to a string, which is a plain {@link String}). */
    public record Token(String value) {}

    /** A date (RFC 9651), in seconds since the epoch. */
    public record Date(long epochSeconds) {}

    /** A display string (RFC 9651): Unicode text. */
    public record DisplayString(String value) {}

    /**
     * A parsed item. {@code value} is a {@link String} (sf-string), {@link Token}, {@link Long}
     * (sf-integer), {@link BigDecimal} (sf-decimal), {@link Boolean}, {@code byte[]} (sf-binary),
     * {@link Date} or {@link DisplayString}; parameter values likewise, in order.
     */
    public record Item(Object value, Map<String, Object> parameters) {}

    /** Why the input is not an Item, and at which index. */
    public static final class ParseException extends Exception {
        private static final long serialVersionUID = 1L;
        private final int index;

        ParseException(String message, int index) {
            super(message + " at index " + index);
            this.index = index;
        }

        public int index() {
            return index;
        }
    }

    private final String in;
    private int pos;

    private StructuredFieldParser(String input) {
        this.in = input;
    }

    /** Parses {@code input} as an Item (leading and trailing spaces allowed, nothing else). */
    public static Item parseItem(String input) throws ParseException {
        StructuredFieldParser p = new StructuredFieldParser(input);
        p.skipSpaces();
        Item item = new Item(p.bareItem(), p.parameters());
        p.skipSpaces();
        if (p.pos < p.in.length()) {
            throw new ParseException("unexpected character " + describe(p.in.charAt(p.pos)) + " after the item", p.pos);
        }
        return item;
    }

    private void skipSpaces() {
        while (pos < in.length() && in.charAt(pos) == ' ') {
            pos++;
        }
    }

    private Object bareItem() throws ParseException {
        if (pos >= in.length()) {
            throw new ParseException("empty item", pos);
        }
        char c = in.charAt(pos);
        if (c == '-' || isDigit(c)) {
            return number();
        }
        if (c == '"') {
            return string();
        }
        if (isAlpha(c) || c == '*') {
            return token();
        }
        if (c == ':') {
            return byteSequence();
        }
        if (c == '?') {
            return bool();
        }
        if (c == '@') {
            return date();
        }
        if (c == '%') {
            return displayString();
        }
        throw new ParseException("no item starts with " + describe(c), pos);
    }

    private Map<String, Object> parameters() throws ParseException {
        Map<String, Object> params = new LinkedHashMap<>();
        while (pos < in.length() && in.charAt(pos) == ';') {
            pos++;
            skipSpaces();
            String key = key();
            Object value = true;
            if (pos < in.length() && in.charAt(pos) == '=') {
                pos++;
                value = bareItem();
            }
            params.remove(key); // a repeated key keeps its last value, in its first position's stead
            params.put(key, value);
        }
        return params;
    }

    private String key() throws ParseException {
        if (pos >= in.length() || !(isLcAlpha(in.charAt(pos)) || in.charAt(pos) == '*')) {
            throw new ParseException("a parameter key must start with a lowercase letter or '*'", pos);
        }
        int start = pos;
        while (pos < in.length()) {
            char c = in.charAt(pos);
            if (!(isLcAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*')) {
                break;
            }
            pos++;
        }
        return in.substring(start, pos);
    }

    private Object number() throws ParseException {
        int start = pos;
        boolean negative = false;
        // a date's '@' may be the last character: number() is not only reached with a character in hand
        if (pos < in.length() && in.charAt(pos) == '-') {
            negative = true;
            pos++;
        }
        if (pos >= in.length() || !isDigit(in.charAt(pos))) {
            throw new ParseException("a number needs a digit", pos);
        }
        int digitsStart = pos;
        int dot = -1;
        while (pos < in.length()) {
            char c = in.charAt(pos);
            if (isDigit(c)) {
                pos++;
            } else if (c == '.' && dot < 0) {
                if (pos - digitsStart > 12) {
                    throw new ParseException("a decimal has at most 12 integer digits", pos);
                }
                dot = pos;
                pos++;
            } else {
                break;
            }
            if (dot < 0 && pos - digitsStart > 15) {
                throw new ParseException("an integer has at most 15 digits", pos);
            }
            if (dot >= 0 && pos - digitsStart > 16) {
                throw new ParseException("a decimal has at most 16 characters", pos);
            }
        }
        String text = in.substring(digitsStart, pos);
        if (dot < 0) {
            long value = Long.parseLong(text);
            return negative ? -value : value;
        }
        if (dot == pos - 1) {
            throw new ParseException("a decimal needs a digit after '.'", pos);
        }
        if (pos - dot - 1 > 3) {
            throw new ParseException("a decimal has at most 3 fractional digits", start);
        }
        BigDecimal value = new BigDecimal(text);
        return negative ? value.negate() : value;
    }

    private String string() throws ParseException {
        pos++; // opening quote
        StringBuilder out = new StringBuilder();
        while (pos < in.length()) {
            char c = in.charAt(pos++);
            if (c == '\\') {
                if (pos >= in.length()) {
                    throw new ParseException("a string ends inside an escape", pos);
                }
                char next = in.charAt(pos++);
                if (next != '"' && next != '\\') {
                    throw new ParseException(
                            "only \\\" and \\\\ may be escaped in a string, found \\" + describe(next), pos - 1);
                }
                out.append(next);
            } else if (c == '"') {
                return out.toString();
            } else if (c < 0x20 || c > 0x7E) {
                throw new ParseException("a string holds only printable ASCII, found " + describe(c), pos - 1);
            } else {
                out.append(c);
            }
        }
        throw new ParseException("a string is not closed", pos);
    }

    private Token token() {
        int start = pos;
        while (pos < in.length()) {
            char c = in.charAt(pos);
            if (!(isTchar(c) || c == ':' || c == '/')) {
                break;
            }
            pos++;
        }
        return new Token(in.substring(start, pos));
    }

    private byte[] byteSequence() throws ParseException {
        int start = ++pos;
        while (pos < in.length() && in.charAt(pos) != ':') {
            char c = in.charAt(pos);
            if (!(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=')) {
                throw new ParseException("a byte sequence holds only base64 characters, found " + describe(c), pos);
            }
            pos++;
        }
        if (pos >= in.length()) {
            throw new ParseException("a byte sequence is not closed", pos);
        }
        String base64 = in.substring(start, pos++);
        try {
            return Base64.getDecoder().decode(base64);
        } catch (IllegalArgumentException e) {
            throw new ParseException("a byte sequence is not valid base64", start);
        }
    }

    private Boolean bool() throws ParseException {
        pos++;
        if (pos < in.length() && (in.charAt(pos) == '0' || in.charAt(pos) == '1')) {
            return in.charAt(pos++) == '1';
        }
        throw new ParseException("a boolean is ?0 or ?1", pos);
    }

    private Date date() throws ParseException {
        pos++;
        Object n = number();
        if (!(n instanceof Long seconds)) {
            throw new ParseException("a date is an integer", pos);
        }
        return new Date(seconds);
    }

    private DisplayString displayString() throws ParseException {
        pos++;
        if (pos >= in.length() || in.charAt(pos) != '"') {
            throw new ParseException("a display string starts with %\"", pos);
        }
        pos++;
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        while (pos < in.length()) {
            char c = in.charAt(pos++);
            if (c < 0x20 || c > 0x7E) {
                throw new ParseException("a display string holds only printable ASCII, found " + describe(c), pos - 1);
            }
            if (c == '%') {
                if (pos + 2 > in.length() || !isLcHex(in.charAt(pos)) || !isLcHex(in.charAt(pos + 1))) {
                    throw new ParseException("'%' in a display string is followed by two lowercase hex digits", pos);
                }
                bytes.write(Integer.parseInt(in.substring(pos, pos + 2), 16));
                pos += 2;
            } else if (c == '"') {
                try {
                    return new DisplayString(java.nio.charset.StandardCharsets.UTF_8
                            .newDecoder()
                            .decode(java.nio.ByteBuffer.wrap(bytes.toByteArray()))
                            .toString());
                } catch (java.nio.charset.CharacterCodingException e) {
                    throw new ParseException("a display string is not valid UTF-8", pos);
                }
            } else {
                bytes.write(c);
            }
        }
        throw new ParseException("a display string is not closed", pos);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static boolean isAlpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    private static boolean isLcAlpha(char c) {
        return c >= 'a' && c <= 'z';
    }

    private static boolean isLcHex(char c) {
        return isDigit(c) || (c >= 'a' && c <= 'f');
    }

    /** RFC 9110 tchar. */
    private static boolean isTchar(char c) {
        return isAlpha(c) || isDigit(c) || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }

    static String describe(char c) {
        return c >= 0x21 && c <= 0x7E ? "'" + c + "'" : String.format("U+%04X", (int) c);
    }
}
