package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ScopeTest {

    private static final String GRINNING_FACE = "\uD83D\uDE00"; // U+1F600, two UTF-16 units

    @Test
    void rejectsNullWithMessageNamingScope() {
        assertThatNullPointerException().isThrownBy(() -> new Scope(null)).withMessageContaining("scope");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "   ", "\u2003"})
    void rejectsEmptyOrBlankValue(String blank) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of(blank))
                .withMessageContaining("scope")
                .withMessageContaining("blank");
    }

    @Test
    void accepts255CodePoints() {
        String value = "a".repeat(Scope.MAX_LENGTH);

        assertThat(Scope.of(value).value()).isEqualTo(value);
    }

    @Test
    void accepts255SupplementaryCharactersAlthoughTheyAre510Utf16Units() {
        String value = GRINNING_FACE.repeat(255);
        assertThat(value).hasSize(510);

        assertThat(Scope.of(value).value()).isEqualTo(value);
    }

    @Test
    void rejects256CodePoints() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of("a".repeat(256)))
                .withMessageContaining("scope")
                .withMessageContaining("255")
                .withMessageContaining("256");
    }

    @Test
    void rejects256SupplementaryCharacters() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of(GRINNING_FACE.repeat(256)))
                .withMessageContaining("255")
                .withMessageContaining("256");
    }

    @Test
    void rejectsNulWithItsIndexInTheMessage() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of("ab\u0000c"))
                .withMessageContaining("scope")
                .withMessageContaining("U+0000")
                .withMessageContaining("index 2");
    }

    @ParameterizedTest
    @ValueSource(chars = {'\u0001', '\t', '\n', '\r', '\u001B', '\u001F', '\u007F', '\u0085', '\u009F'})
    void rejectsControlCharacterWithItsIndexInTheMessage(char control) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of("abc" + control + "d"))
                .withMessageContaining("control")
                .withMessageContaining(String.format("U+%04X", (int) control))
                .withMessageContaining("index 3");
    }

    @Test
    void rejectsHighSurrogateAtTheEnd() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of("ab\uD83D"))
                .withMessageContaining("surrogate")
                .withMessageContaining("index 2");
    }

    @Test
    void rejectsHighSurrogateFollowedByAnOrdinaryCharacter() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of("a\uD83Dx"))
                .withMessageContaining("surrogate")
                .withMessageContaining("index 1");
    }

    @Test
    void rejectsLoneLowSurrogate() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of("a\uDE00b"))
                .withMessageContaining("surrogate")
                .withMessageContaining("index 1");
    }

    @Test
    void rejectsSurrogatesInTheWrongOrder() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of("\uDE00\uD83D"))
                .withMessageContaining("surrogate")
                .withMessageContaining("index 0");
    }

    @Test
    void rejectsUnpairedSurrogateAfterAValidPair() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Scope.of(GRINNING_FACE + "\uDE00"))
                .withMessageContaining("surrogate")
                .withMessageContaining("index 2");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tenant-é", "Ωmega", "用户-42", "Müller GmbH", "ﾃﾅﾝﾄ", "team " + GRINNING_FACE})
    void acceptsNonAsciiLettersAndKeepsThemExactly(String value) {
        assertThat(Scope.of(value).value()).isEqualTo(value);
    }

    @Test
    void isEqualByValue() {
        Scope a = new Scope("tenant-1");
        Scope b = Scope.of(new String("tenant-1"));

        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a).isNotEqualTo(Scope.of("tenant-2"));
    }

    @Test
    void isCaseSensitive() {
        assertThat(Scope.of("Tenant")).isNotEqualTo(Scope.of("tenant"));
    }

    @Test
    void toStringIsTheValue() {
        assertThat(Scope.of("tenant-1")).hasToString("tenant-1");
    }
}
