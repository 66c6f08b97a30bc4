package io.github.idemtx.keys.internal;

import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * Text rules shared by derived keys, each matching its Python counterpart exactly: whitespace as
 * Python's {@code str.isspace()}, trimming as {@code str.strip()}, and key order as Python's
 * {@code sorted()} of {@code str} (by Unicode code point).
 */
public final class DerivedText {

    /**
     * Orders strings by Unicode code point, as Python sorts {@code str} (and so as
     * {@code json.dumps(..., sort_keys=True)} orders object members). {@link String#compareTo}
     * orders by UTF-16 code unit instead, which differs when a supplementary character (a
     * surrogate pair, U+D800 to U+DFFF) meets a character from U+E000 to U+FFFF.
     */
    public static final Comparator<String> CODE_POINT_ORDER = DerivedText::compareCodePoints;

    private DerivedText() {}

    /**
     * Whether Python's {@code str.isspace()} is true for {@code c}: the characters whose
     * bidirectional class is WS, B or S, or whose category is Zs. As of Unicode 14 (Python 3.11)
     * these are U+0009 to U+000D, U+001C to U+0020, U+0085, U+00A0, U+1680, U+2000 to U+200A,
     * U+2028, U+2029, U+202F, U+205F and U+3000; no supplementary character is among them.
     * Unlike {@link Character#isWhitespace}, no-break spaces count; unlike {@link String#strip},
     * so does U+0085.
     */
    public static boolean isPythonSpace(char c) {
        return switch (c) {
            case '\t',
                    '\n',
                    '\u000B',
                    '\f',
                    '\r',
                    '\u001C',
                    '\u001D',
                    '\u001E',
                    '\u001F',
                    ' ',
                    '\u0085',
                    '\u00A0',
                    '\u1680',
                    '\u2028',
                    '\u2029',
                    '\u202F',
                    '\u205F',
                    '\u3000' -> true;
            default -> c >= '\u2000' && c <= '\u200A';
        };
    }

    /** {@code s} without its leading and trailing {@linkplain #isPythonSpace Python whitespace}, as {@code str.strip()}. */
    public static String pythonStrip(String s) {
        int start = 0;
        int end = s.length();
        while (start < end && isPythonSpace(s.charAt(start))) {
            start++;
        }
        while (end > start && isPythonSpace(s.charAt(end - 1))) {
            end--;
        }
        return s.substring(start, end);
    }

    /** Whether every surrogate in {@code s} is part of a pair, so that it can be written as UTF-8. */
    public static boolean isWellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code s} holds a control character ({@link Character#isISOControl}). */
    public static boolean hasControl(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (Character.isISOControl(s.charAt(i))) {
                return true;
            }
        }
        return false;
    }

    /** {@code names} sorted in {@linkplain #CODE_POINT_ORDER code-point order}, as a new list. */
    public static List<String> sorted(Collection<String> names) {
        return names.stream().sorted(CODE_POINT_ORDER).toList();
    }

    private static int compareCodePoints(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) {
                return Integer.compare(x, y);
            }
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }
}
