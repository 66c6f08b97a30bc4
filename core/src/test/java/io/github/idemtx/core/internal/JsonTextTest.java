package io.github.idemtx.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * JsonText writes what Python's {@code json.dumps(s, ensure_ascii=False)} writes: derived keys
 * (keys module) hash these bytes, so one character written differently is another key.
 */
class JsonTextTest {

    @Test
    void escapesOnlyTheQuoteTheReverseSolidusAndTheNamedControlsByName() {
        assertThat(JsonText.string("a\"b\\c\b\f\n\r\t/")).isEqualTo("\"a\\\"b\\\\c\\b\\f\\n\\r\\t/\"");
    }

    @ParameterizedTest(name = "U+{0} is written {1}")
    @CsvSource({
        "0000, \\u0000",
        "0001, \\u0001",
        "000b, \\u000b",
        "001f, \\u001f",
    })
    void writesTheOtherC0ControlsAsLowercaseUnicodeEscapes(String hex, String escaped) {
        String control = String.valueOf((char) Integer.parseInt(hex, 16));

        assertThat(JsonText.string(control)).isEqualTo('"' + escaped + '"');
    }

    @Test
    void writesSpaceDeleteAndNonAsciiAsTheyAre() {
        // U+0020 is the first character that is not a control; U+007F is not C0, Python keeps it
        assertThat(JsonText.string(" \u007f é € 日本")).isEqualTo("\" \u007f é € 日本\"");
    }

    @Test
    void writesASurrogatePairAsTheOneCharacterItIsWhereverItStands() {
        assertThat(JsonText.string("😀")).isEqualTo("\"😀\"");
        assertThat(JsonText.string("a😀b😀")).isEqualTo("\"a😀b😀\"");
    }

    @Test
    void refusesAnUnpairedSurrogateNamingItsIndex() {
        assertThatThrownBy(() -> JsonText.string("ab\uD83D"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unpaired surrogate at index 2 cannot be written as UTF-8");
        assertThatThrownBy(() -> JsonText.string("a\uD83Db"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unpaired surrogate at index 1 cannot be written as UTF-8");
        assertThatThrownBy(() -> JsonText.string("\uDE00a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unpaired surrogate at index 0 cannot be written as UTF-8");
    }

    @Test
    void appendsToWhatTheBuilderAlreadyHoldsAndReturnsIt() {
        StringBuilder out = new StringBuilder("{\"k\":");

        StringBuilder returned = JsonText.appendString(out, "v");

        assertThat(returned).isSameAs(out);
        assertThat(out).hasToString("{\"k\":\"v\"");
    }

    @Test
    void writesTheEmptyStringAsTwoQuotes() {
        assertThat(JsonText.string("")).isEqualTo("\"\"");
    }
}
