package io.github.idemtx.keys;

import io.github.idemtx.keys.internal.DerivedNormalization;

/**
 * How {@link DerivedKeys} turns one payload field into the text that enters a derived key, so that
 * spellings of the same intent give the same key. Every normaliser has an exact Python equivalent
 * (see {@link DerivedKeys}); a value it does not accept is an {@link IllegalArgumentException}
 * naming the field, never quoting the value.
 *
 * <p>"Trimmed" means: without the leading and trailing characters for which Python's
 * {@code str.isspace()} is true (as {@code str.strip()}), which include U+00A0 NO-BREAK SPACE,
 * U+3000 IDEOGRAPHIC SPACE and U+0085, but not U+200B ZERO WIDTH SPACE or U+FEFF.
 */
public enum FieldNormalizer {

    /**
     * A money amount, as a decimal with exactly two places, rounded half up (a tie rounds away
     * from zero): {@code "10"}, {@code "10.0"}, {@code 10} and {@code new BigDecimal("10.004")}
     * all give {@code "10.00"}; {@code "10.005"} gives {@code "10.01"}; {@code "-0.001"} gives
     * {@code "0.00"} (zero never has a sign).
     *
     * <p>Accepts a {@link String} in plain decimal notation, trimmed: an optional {@code +} or
     * {@code -}, then ASCII digits with at most one decimal point and at least one digit
     * ({@code ".5"} and {@code "5."} are fine). Exponents ({@code "1e3"}), grouping separators
     * ({@code "1,000"}, {@code "1_000"}), decimal commas, non-ASCII digits, {@code NaN} and
     * {@code Infinity} are refused: an amount written so is most likely a bug upstream, and
     * refusing it keeps a key from silently meaning something else. Also accepts a
     * {@link java.math.BigDecimal} (any scale or exponent), {@link java.math.BigInteger},
     * {@link Long}, {@link Integer}, {@link Short} or {@link Byte}. Refuses {@link Double} and
     * {@link Float}, whose binary fractions cannot hold most amounts exactly ({@code 10.005} as a
     * double is slightly less than 10.005), and a result with more than 100 digits before the
     * decimal point.
     *
     * <p>Python: {@code Decimal(s.strip()).quantize(Decimal("0.01"), ROUND_HALF_UP)}, written in
     * fixed-point notation, {@code -0.00} written as {@code 0.00}.
     */
    AMOUNT,

    /**
     * A currency code: the {@link String} trimmed and in upper case by
     * {@code toUpperCase(Locale.ROOT)} ({@code " brl "} gives {@code "BRL"}). The code itself is
     * not checked against ISO 4217. Upper-casing uses the JDK's Unicode data and, unlike case
     * folding, is not stable across Unicode versions for letters that gain a capital later (two
     * such letters between Python 3.11's Unicode 14 and Java 25's Unicode 16); ISO codes are ASCII
     * and never affected. Needs no ICU4J.
     *
     * <p>Python: {@code s.strip().upper()}.
     */
    CURRENCY,

    /**
     * The key of a creditor or counterparty (a Pix key, an account, a tax id). The
     * {@link String} is put in Unicode normalisation form C and trimmed; if what is left is only
     * ASCII digits and the characters {@code . - /}, with at least one digit, only its digits are
     * kept, so that a formatted Brazilian CPF or CNPJ equals the bare number
     * ({@code "123.456.789-09"} gives {@code "12345678909"}, {@code "12.345.678/0001-95"} gives
     * {@code "12345678000195"}). Anything else (an e-mail address, a phone number such as
     * {@code "+5511912345678"}, a random key) is case-folded exactly like {@link #FREE_TEXT}.
     * Needs ICU4J.
     *
     * <p>Python: {@code t = unicodedata.normalize("NFC", s).strip()}; the digits of {@code t} if
     * it fully matches {@code [0-9./-]*[0-9][0-9./-]*}, else {@code t.casefold()}.
     */
    CREDITOR_KEY,

    /**
     * Free text (a description, a name): the {@link String} in Unicode normalisation form C, then
     * trimmed, then with full Unicode case folding, so that letter case and composed or
     * decomposed accents do not matter: {@code "Straße"} and {@code "STRASSE"} both give
     * {@code "strasse"}, {@code "e"} + U+0301 equals {@code "é"}, and {@code "ﬁ"} gives
     * {@code "fi"}. Folding is not locale-sensitive: Turkish {@code "İ"} gives {@code "i"} +
     * U+0307 and dotless {@code "ı"} stays. Inner whitespace is kept as it is. Needs ICU4J
     * ({@code com.ibm.icu:icu4j}), which does the normalisation and the folding.
     *
     * <p>Python: {@code unicodedata.normalize("NFC", s).strip().casefold()}.
     */
    FREE_TEXT;

    /** Whether this normaliser needs ICU4J. */
    boolean needsCaseFolding() {
        return this == CREDITOR_KEY || this == FREE_TEXT;
    }

    /**
     * {@code value} normalised; the value is not null.
     *
     * @throws IllegalArgumentException naming {@code field} if the value is not accepted
     */
    String normalize(String field, Object value) {
        return switch (this) {
            case AMOUNT -> DerivedNormalization.amount(field, value);
            case CURRENCY -> DerivedNormalization.currency(field, value);
            case CREDITOR_KEY -> DerivedNormalization.creditorKey(field, value);
            case FREE_TEXT -> DerivedNormalization.freeText(field, value);
        };
    }
}
