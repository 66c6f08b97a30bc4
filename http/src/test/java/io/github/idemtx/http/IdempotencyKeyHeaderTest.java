package io.github.idemtx.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.http.InvalidIdempotencyKeyException.Reason;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotencyKeyHeaderTest {

    @Test
    void takesAQuotedAndAnUnquotedKeyAsTheSameKey() {
        assertThat(IdempotencyKeyHeader.parse("\"abc\"")).isEqualTo(IdempotencyKeyHeader.parse("abc"));
    }

    @Test
    void acceptsABareUuidAsStripesClientsSendIt() {
        String uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assertThat(IdempotencyKeyHeader.parse(uuid).value()).isEqualTo(uuid);
        assertThat(IdempotencyKeyHeader.parse("\"" + uuid + "\"").value()).isEqualTo(uuid);
    }

    @Test
    void ignoresLeadingAndTrailingSpaces() {
        assertThat(IdempotencyKeyHeader.parse("   \"k 1\"  ").value()).isEqualTo("k 1");
        assertThat(IdempotencyKeyHeader.parse("  k1 ").value()).isEqualTo("k1");
    }

    @Test
    void unescapesQuotesAndBackslashesInAQuotedKey() {
        assertThat(IdempotencyKeyHeader.parse("\"a \\\"b\\\" \\\\ c\"").value()).isEqualTo("a \"b\" \\ c");
    }

    @Test
    void formatsAKeyAsAnSfStringThatParsesBack() {
        IdempotencyKey key = IdempotencyKey.of("a \"quoted\" \\ key, with; everything");
        String header = IdempotencyKeyHeader.format(key);
        assertThat(header).isEqualTo("\"a \\\"quoted\\\" \\\\ key, with; everything\"");
        assertThat(IdempotencyKeyHeader.parse(header)).isEqualTo(key);
    }

    @Test
    void acceptsAKeyOfExactly255Characters() {
        assertThat(IdempotencyKeyHeader.parse("k".repeat(255)).value()).hasSize(255);
        assertThat(IdempotencyKeyHeader.parse("\"" + "k".repeat(255) + "\"").value())
                .hasSize(255);
    }

    @Test
    void refusesAMissingHeader() {
        assertReason(() -> IdempotencyKeyHeader.parse((String) null), Reason.MISSING, "missing");
        assertReason(() -> IdempotencyKeyHeader.parse((List<String>) null), Reason.MISSING, "missing");
        assertReason(() -> IdempotencyKeyHeader.parse(List.of()), Reason.MISSING, "missing");
    }

    @Test
    void takesTheKeyFromTheOneInstanceOfTheHeader() {
        assertThat(IdempotencyKeyHeader.parse(List.of("\"abc\"")).value()).isEqualTo("abc");
        assertThat(IdempotencyKeyHeader.parse(lines("abc")).value()).isEqualTo("abc");
    }

    @Test
    void refusesMoreThanOneHeaderInstance() {
        assertReason(() -> IdempotencyKeyHeader.parse(List.of("a", "b")), Reason.MULTIPLE, "2 times");
        assertReason(() -> IdempotencyKeyHeader.parse("a, b"), Reason.MULTIPLE, "','");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "\"\"", "\"   \""})
    void refusesAnEmptyKey(String value) {
        assertReason(() -> IdempotencyKeyHeader.parse(value), Reason.EMPTY, "empty");
    }

    @Test
    void refusesAKeyLongerThan255Characters() {
        assertReason(() -> IdempotencyKeyHeader.parse("k".repeat(256)), Reason.TOO_LONG, "at most 255");
        assertReason(() -> IdempotencyKeyHeader.parse("\"" + "k".repeat(256) + "\""), Reason.TOO_LONG, "was 256");
    }

    @ParameterizedTest
    @CsvSource(
            delimiterString = "|",
            value = {
                "clé|U+00E9",
                "a\tb|U+0009",
                "a b|U+0020",
                "\"clé\"|U+00E9",
                "\"a\u0000b\"|U+0000",
                "\"a\u007fb\"|U+007F",
                "a\"b|'\"'",
                "a\\b|'\\'",
            })
    void refusesCharactersOutsidePrintableAsciiOrThatNeedQuoting(String value, String named) {
        assertReason(() -> IdempotencyKeyHeader.parse(value), Reason.INVALID_CHARACTER, named);
    }

    @Test
    void refusesParameters() {
        assertReason(() -> IdempotencyKeyHeader.parse("\"abc\";v=1"), Reason.PARAMETERS, "[v]");
        assertReason(() -> IdempotencyKeyHeader.parse("abc;v=1"), Reason.PARAMETERS, "';'");
    }

    @ParameterizedTest
    @CsvSource(
            delimiterString = "|",
            value = {
                "?1|a boolean",
                ":aGVsbG8=:|a byte sequence",
                "@1659578233|a date",
                "%\"text\"|a display string",
                "(a b)|an inner list",
            })
    void refusesOtherStructuredFieldTypes(String value, String type) {
        assertReason(() -> IdempotencyKeyHeader.parse(value), Reason.NOT_A_STRING, type);
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"abc", "\"abc\" x", "\"a\\bc\"", "\"abc\\", "'abc'x\""})
    void refusesMalformedQuotedStrings(String value) {
        assertThatThrownBy(() -> IdempotencyKeyHeader.parse(value))
                .isInstanceOf(InvalidIdempotencyKeyException.class)
                .satisfies(e -> assertThat(((InvalidIdempotencyKeyException) e).reason())
                        .isIn(Reason.MALFORMED, Reason.INVALID_CHARACTER));
    }

    @Test
    void aParameterThatEndsInsideItsValueIsMalformedNotACrash() {
        // '@' with nothing after it once escaped the parser as a StringIndexOutOfBoundsException (a 500, not a 400)
        assertReason(() -> IdempotencyKeyHeader.parse("\"abc\";d=@"), Reason.MALFORMED, "a number needs a digit");
        assertReason(() -> IdempotencyKeyHeader.parse("\"abc\";d=@1"), Reason.PARAMETERS, "[d]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"a b", "\"a~", "\" !~\" x", "\"a\\b\""})
    void aBrokenQuotedKeyOfPrintableAsciiIsMalformed(String value) {
        // space and '~' are the ends of the printable range: a syntax error, not a bad character
        assertReason(() -> IdempotencyKeyHeader.parse(value), Reason.MALFORMED, "not a valid Structured Field string");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"a\u001fb\"", "\"a\u007fb\"", "\"a\u0080", "\"a\" \u00e9"})
    void aQuotedKeyHoldingACharacterOutsidePrintableAsciiIsAnInvalidCharacter(String value) {
        assertReason(() -> IdempotencyKeyHeader.parse(value), Reason.INVALID_CHARACTER, "U+00");
    }

    @Test
    void neverEchoesTheValueTheClientSentInItsMessage() {
        String secretLooking = "\"tok-3f9a" + "\u0001" + "\"";
        assertThatThrownBy(() -> IdempotencyKeyHeader.parse(secretLooking))
                .isInstanceOf(InvalidIdempotencyKeyException.class)
                .message()
                .doesNotContain("tok-3f9a");
    }

    private static void assertReason(Runnable call, Reason reason, String messagePart) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        InvalidIdempotencyKeyException.class,
                        e -> assertThat(e.reason()).isEqualTo(reason))
                .hasMessageContaining(messagePart);
    }

    static List<String> lines(String... values) {
        return Arrays.asList(values);
    }
}
