package io.github.idemtx.http.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.http.internal.StructuredFieldParser.Item;
import io.github.idemtx.http.internal.StructuredFieldParser.ParseException;
import io.github.idemtx.http.internal.StructuredFieldParser.Token;
import java.math.BigDecimal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What the working group's cases (StructuredFieldConformanceTest) do not pin down: where a failure is
 * reported and how it names the character at fault, and the parameter syntax around an item.
 */
class StructuredFieldParserTest {

    @Test
    void readsParametersOfEveryTypeInOrderWithSpacesAfterTheSemicolon() throws Exception {
        Item item = StructuredFieldParser.parseItem("\"k\"; a;z=?0;  *b_-.9=1.5; t=tok/en:x; n=-7");

        assertThat(item.value()).isEqualTo("k");
        assertThat(item.parameters())
                .containsExactly(
                        java.util.Map.entry("a", Boolean.TRUE),
                        java.util.Map.entry("z", Boolean.FALSE),
                        java.util.Map.entry("*b_-.9", new BigDecimal("1.5")),
                        java.util.Map.entry("t", new Token("tok/en:x")),
                        java.util.Map.entry("n", -7L));
    }

    @Test
    void aRepeatedParameterKeepsItsLastValue() throws Exception {
        assertThat(StructuredFieldParser.parseItem("\"k\";a=1;b=2;a=3").parameters())
                .containsExactly(java.util.Map.entry("b", 2L), java.util.Map.entry("a", 3L));
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(
            delimiterString = " => ",
            quoteCharacter = '`',
            value = {
                // input => message (the index is where the parser stopped)
                "`` => empty item at index 0",
                "`   ` => empty item at index 3",
                "\"k\"; => a parameter key must start with a lowercase letter or '*' at index 4",
                "\"k\";A=1 => a parameter key must start with a lowercase letter or '*' at index 4",
                "\"k\"~ => unexpected character '~' after the item at index 3",
                "\"k\" ! => unexpected character '!' after the item at index 4",
                "`\"k\"\t` => unexpected character U+0009 after the item at index 3",
                "\"a\\x\" => only \\\" and \\\\ may be escaped in a string, found \\'x' at index 3",
                "\"ab\u007f\" => a string holds only printable ASCII, found U+007F at index 3",
                "\"a\u00e9\" => a string holds only printable ASCII, found U+00E9 at index 2",
                "\"ab => a string is not closed at index 3",
                "\"ab\\ => a string ends inside an escape at index 4",
                "[ => no item starts with '[' at index 0",
                "` \u00e9` => no item starts with U+00E9 at index 1",
                "- => a number needs a digit at index 1",
                "-a => a number needs a digit at index 1",
                "1234567890123456 => an integer has at most 15 digits at index 16",
                "1234567890123.5 => a decimal has at most 12 integer digits at index 13",
                "123456789012.3456 => a decimal has at most 16 characters at index 17",
                "1.2345 => a decimal has at most 3 fractional digits at index 0",
                "-1.2345 => a decimal has at most 3 fractional digits at index 0",
                "12. => a decimal needs a digit after '.' at index 3",
                ":aGVsbG8= => a byte sequence is not closed at index 9",
                ":aGV*sbG8=: => a byte sequence holds only base64 characters, found '*' at index 4",
                ":a: => a byte sequence is not valid base64 at index 1",
                "? => a boolean is ?0 or ?1 at index 1",
                "?2 => a boolean is ?0 or ?1 at index 1",
                "@1.5 => a date is an integer at index 4",
                "@ => a number needs a digit at index 1",
                "% => a display string starts with %\" at index 1",
                "%x => a display string starts with %\" at index 1",
                "%\"a => a display string is not closed at index 3",
                "%\"a%ff => a display string is not closed at index 6",
                "%\"a\u00e9\" => a display string holds only printable ASCII, found U+00E9 at index 3",
                "%\"a%4 => '%' in a display string is followed by two lowercase hex digits at index 4",
                "%\"a%4G\" => '%' in a display string is followed by two lowercase hex digits at index 4",
                "%\"a%g4\" => '%' in a display string is followed by two lowercase hex digits at index 4",
                "%\"%ff\" => a display string is not valid UTF-8 at index 6",
            })
    void refusesNamingWhatAndWhere(String input, String message) {
        assertThatThrownBy(() -> StructuredFieldParser.parseItem(input))
                .isInstanceOf(ParseException.class)
                .hasMessage(message)
                .satisfies(e -> assertThat(((ParseException) e).index())
                        .isEqualTo(Integer.parseInt(message.substring(message.lastIndexOf(' ') + 1))));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiterString = " => ",
            value = {
                "123456789012345 => 123456789012345",
                "-123456789012345 => -123456789012345",
                "123456789012.345 => 123456789012.345",
                "0.1 => 0.1",
                "007 => 7",
            })
    void readsNumbersUpToTheirLimits(String input, BigDecimal value) throws Exception {
        Object parsed = StructuredFieldParser.parseItem(input).value();

        assertThat(new BigDecimal(parsed.toString())).isEqualByComparingTo(value);
        assertThat(parsed).isInstanceOf(input.contains(".") ? BigDecimal.class : Long.class);
    }

    @Test
    void readsADisplayStringsPercentEncodedUtf8() throws Exception {
        assertThat(StructuredFieldParser.parseItem("%\"caf%c3%a9 %25 %22x%22\"").value())
                .isEqualTo(new StructuredFieldParser.DisplayString("café % \"x\""));
    }

    @Test
    void describesPrintableCharactersQuotedAndTheRestByCodePoint() {
        assertThat(StructuredFieldParser.describe('!')).isEqualTo("'!'");
        assertThat(StructuredFieldParser.describe('~')).isEqualTo("'~'");
        assertThat(StructuredFieldParser.describe(' ')).isEqualTo("U+0020");
        assertThat(StructuredFieldParser.describe('\u007f')).isEqualTo("U+007F");
        assertThat(StructuredFieldParser.describe('\u00e9')).isEqualTo("U+00E9");
    }
}
