package io.github.idemtx.core.internal;

/**
 * Writes JSON text the way Python's {@code json.dumps(..., ensure_ascii=False)} does: only the
 * quotation mark, the reverse solidus and the C0 controls are escaped ({@code \b \f \n \r \t} by
 * name, the rest as {@code \}{@code u00XX}); everything else, non-ASCII included, is written as
 * it is. Unpaired surrogates cannot be encoded as UTF-8 and are refused.
 */
public final class JsonText {

    private JsonText() {}

    /** Appends {@code value} as a JSON string literal, quotes included. */
    public static StringBuilder appendString(StringBuilder out, String value) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else if (Character.isSurrogate(c)) {
                        if (Character.isHighSurrogate(c)
                                && i + 1 < value.length()
                                && Character.isLowSurrogate(value.charAt(i + 1))) {
                            out.append(c).append(value.charAt(++i));
                        } else {
                            throw new IllegalArgumentException(
                                    "unpaired surrogate at index " + i + " cannot be written as UTF-8");
                        }
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"');
    }

    /** {@code value} as a JSON string literal. */
    public static String string(String value) {
        return appendString(new StringBuilder(value.length() + 2), value).toString();
    }
}
