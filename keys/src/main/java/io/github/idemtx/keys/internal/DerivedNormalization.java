package io.github.idemtx.keys.internal;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The field normalisers of derived keys. Each takes the field's name (for messages) and its value
 * and returns the normalised text. A message names the field and what was expected, and never
 * holds the value itself.
 */
public final class DerivedNormalization {

    /** The most digits an amount may have before the decimal point, once rounded. */
    public static final int MAX_AMOUNT_INTEGER_DIGITS = 100;

    private static final Pattern PLAIN_DECIMAL = Pattern.compile("[+-]?+(?:[0-9]++(?:\\.[0-9]*+)?+|\\.[0-9]++)");
    private static final String ZERO = "0.00";

    private DerivedNormalization() {}

    /**
     * AMOUNT: the value as a decimal with exactly two places, rounded half up (away from zero on a
     * tie); zero is always {@code "0.00"}, never {@code "-0.00"}.
     *
     * <p>Accepts a {@link String} in plain decimal notation, trimmed as {@link DerivedText#pythonStrip}:
     * an optional {@code +} or {@code -}, ASCII digits with at most one decimal point and at least
     * one digit ({@code "10"}, {@code "10."}, {@code ".5"}), no exponent, no grouping separators;
     * or a {@link BigDecimal}, {@link BigInteger}, {@link Long}, {@link Integer}, {@link Short} or
     * {@link Byte}. Refuses {@link Double} and {@link Float} (binary fractions cannot hold most
     * decimal amounts exactly) and any other type, and a result with more than
     * {@value #MAX_AMOUNT_INTEGER_DIGITS} digits before the point.
     */
    public static String amount(String field, Object value) {
        BigDecimal number;
        if (value instanceof String text) {
            String trimmed = DerivedText.pythonStrip(text);
            if (!PLAIN_DECIMAL.matcher(trimmed).matches()) {
                throw invalid(
                        field,
                        "AMOUNT must be a decimal number in plain notation: an optional sign, ASCII digits"
                                + " and at most one decimal point; no exponent, no grouping separators");
            }
            number = new BigDecimal(trimmed);
        } else if (value instanceof BigDecimal decimal) {
            number = decimal;
        } else if (value instanceof BigInteger integer) {
            number = new BigDecimal(integer);
        } else if (value instanceof Long
                || value instanceof Integer
                || value instanceof Short
                || value instanceof Byte) {
            number = BigDecimal.valueOf(((Number) value).longValue());
        } else if (value instanceof Double || value instanceof Float) {
            throw invalid(
                    field,
                    "AMOUNT does not accept a binary floating-point "
                            + value.getClass().getSimpleName()
                            + ", which cannot hold most decimal amounts exactly; pass a BigDecimal or a String");
        } else {
            throw invalid(
                    field,
                    "AMOUNT accepts a String, BigDecimal, BigInteger, Long, Integer, Short or Byte, not "
                            + value.getClass().getName());
        }
        // |number| < 10^magnitude; checked first, so that no huge power of ten is ever computed
        long magnitude = (long) number.precision() - number.scale();
        if (magnitude <= -3) {
            return ZERO; // below 0.001, so rounds to zero
        }
        if (magnitude > MAX_AMOUNT_INTEGER_DIGITS + 1) {
            throw tooLarge(field);
        }
        BigDecimal rounded = number.setScale(2, RoundingMode.HALF_UP);
        if (rounded.signum() == 0) {
            return ZERO;
        }
        if (rounded.precision() - 2 > MAX_AMOUNT_INTEGER_DIGITS) {
            throw tooLarge(field);
        }
        return rounded.toPlainString();
    }

    /**
     * CURRENCY: the {@link String}, trimmed as {@link DerivedText#pythonStrip}, in upper case by
     * {@link String#toUpperCase(Locale) toUpperCase(Locale.ROOT)} (full mapping: "ß" becomes "SS").
     */
    public static String currency(String field, Object value) {
        return DerivedText.pythonStrip(text(field, "CURRENCY", value)).toUpperCase(Locale.ROOT);
    }

    /**
     * CREDITOR_KEY: the {@link String} in NFC, trimmed; then, if it is only ASCII digits and the
     * characters {@code . - /}, with at least one digit (a formatted CPF or CNPJ), just its digits;
     * otherwise it is case-folded like {@link #freeText} (an e-mail address, a phone number, a
     * random key).
     */
    public static String creditorKey(String field, Object value) {
        String trimmed = DerivedText.pythonStrip(CaseFold.nfc(text(field, "CREDITOR_KEY", value)));
        return isDigitsAndSeparators(trimmed) ? digitsOf(trimmed) : CaseFold.fold(trimmed);
    }

    /**
     * FREE_TEXT: the {@link String} in NFC, then trimmed as {@link DerivedText#pythonStrip}, then
     * with full case folding ({@link CaseFold#fold}); the same as Python's
     * {@code unicodedata.normalize("NFC", s).strip().casefold()}.
     */
    public static String freeText(String field, Object value) {
        return CaseFold.fold(DerivedText.pythonStrip(CaseFold.nfc(text(field, "FREE_TEXT", value))));
    }

    private static String text(String field, String normalizer, Object value) {
        if (!(value instanceof String text)) {
            throw invalid(
                    field,
                    normalizer + " accepts a String, not " + value.getClass().getName());
        }
        if (!DerivedText.isWellFormed(text)) {
            throw invalid(field, normalizer + " value holds an unpaired surrogate, which cannot be written as UTF-8");
        }
        return text;
    }

    private static boolean isDigitsAndSeparators(String s) {
        boolean digit = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= '0' && c <= '9') {
                digit = true;
            } else if (c != '.' && c != '-' && c != '/') {
                return false;
            }
        }
        return digit;
    }

    private static String digitsOf(String s) {
        StringBuilder digits = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= '0' && c <= '9') {
                digits.append(c);
            }
        }
        return digits.toString();
    }

    private static IllegalArgumentException tooLarge(String field) {
        return invalid(
                field, "AMOUNT must have at most " + MAX_AMOUNT_INTEGER_DIGITS + " digits before the decimal point");
    }

    private static IllegalArgumentException invalid(String field, String message) {
        return new IllegalArgumentException("field '" + field + "': " + message);
    }
}
