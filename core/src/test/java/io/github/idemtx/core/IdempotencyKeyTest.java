package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotencyKeyTest {

    @Test
    void rejectsNullWithMessageNamingTheKey() {
        assertThatNullPointerException()
                .isThrownBy(() -> new IdempotencyKey(null))
                .withMessageContaining("key");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "    "})
    void rejectsEmptyOrBlankKey(String blank) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyKey.of(blank))
                .withMessageContaining("key")
                .withMessageContaining("blank");
    }

    @Test
    void rejectsKeyLongerThan255Characters() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyKey.of("k".repeat(256)))
                .withMessageContaining("key")
                .withMessageContaining("255")
                .withMessageContaining("256");
    }

    @Test
    void accepts255PrintableAsciiCharacters() {
        StringBuilder all = new StringBuilder();
        for (int i = 0; all.length() < IdempotencyKey.MAX_LENGTH; i++) {
            all.append((char) (0x20 + i % (0x7F - 0x20)));
        }
        String value = all.toString();
        assertThat(value).hasSize(255).contains(" ", "~", "A", "0");

        assertThat(IdempotencyKey.of(value).value()).isEqualTo(value);
    }

    @Test
    void rejectsNonAsciiLetterWithMessageNamingTheKeyAndTheCharacter() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyKey.of("caf\u00E9"))
                .withMessageContaining("key")
                .withMessageContaining("printable ASCII")
                .withMessageContaining("U+00E9")
                .withMessageContaining("index 3");
    }

    @ParameterizedTest
    @ValueSource(chars = {'\u0000', '\t', '\n', '\u001F', '\u007F', '\u0080', '\u00A0'})
    void rejectsCharacterOutsidePrintableAscii(char c) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyKey.of("ab" + c + "cd"))
                .withMessageContaining("key")
                .withMessageContaining(String.format("U+%04X", (int) c))
                .withMessageContaining("index 2");
    }

    @Test
    void rejectsEmoji() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyKey.of("order-\uD83D\uDE00"))
                .withMessageContaining("key");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "\"quoted\"",
                "it's",
                "back\\slash",
                "'; drop table x; --",
                "%_*?[]{}()<>|&$#@!~`^",
                "key with spaces",
                " leading-space"
            })
    void acceptsPrintableAsciiPunctuationAndSqlMetacharactersUnchanged(String value) {
        assertThat(IdempotencyKey.of(value).value()).isEqualTo(value);
    }

    @Test
    void randomGivesDistinctVersion4UuidKeys() {
        Set<IdempotencyKey> keys = new HashSet<>();
        for (int i = 0; i < 100; i++) {
            IdempotencyKey key = IdempotencyKey.random();
            assertThat(key.value()).matches("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
            assertThat(UUID.fromString(key.value()).version()).isEqualTo(4);
            keys.add(key);
        }
        assertThat(keys).hasSize(100);
    }

    @Test
    void isEqualByValue() {
        assertThat(IdempotencyKey.of("abc"))
                .isEqualTo(new IdempotencyKey(new String("abc")))
                .hasSameHashCodeAs(IdempotencyKey.of("abc"))
                .isNotEqualTo(IdempotencyKey.of("ABC"));
    }

    @Test
    void toStringIsTheValue() {
        assertThat(IdempotencyKey.of("order-1")).hasToString("order-1");
    }
}
