package io.github.idemtx.keys;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.keys.internal.CaseFold;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Compares ICU4J's case folding and NFC, and the JDK's upper-casing, with Python's for every
 * single character Python 3.11 knows (Unicode 14), from {@code derived-keys/unicode-tables.json},
 * written by {@code make_vectors.py}.
 */
class DerivedUnicodeTablesTest {

    private static final JsonNode TABLES = load();

    private static JsonNode load() {
        try (InputStream in = DerivedUnicodeTablesTest.class.getResourceAsStream("/derived-keys/unicode-tables.json")) {
            if (in == null) {
                throw new IllegalStateException("derived-keys/unicode-tables.json is not on the test class path");
            }
            return new ObjectMapper().readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static boolean assignedInPython(int codePoint) {
        for (JsonNode range : TABLES.get("assigned")) {
            if (codePoint >= range.get(0).intValue()
                    && codePoint <= range.get(1).intValue()) {
                return true;
            }
        }
        return false;
    }

    private static String decode(String codePoints) {
        StringBuilder text = new StringBuilder();
        for (String hex : codePoints.split(" ")) {
            text.appendCodePoint(Integer.parseInt(hex, 16));
        }
        return text.toString();
    }

    /** The characters where {@code java} differs from Python's {@code table}, as "U+XXXX python=... java=...". */
    private static List<String> differences(String table, UnaryOperator<String> java) {
        JsonNode mapped = TABLES.get(table);
        List<String> differences = new ArrayList<>();
        int checked = 0;
        for (JsonNode range : TABLES.get("assigned")) {
            for (int c = range.get(0).intValue(); c <= range.get(1).intValue(); c++) {
                String hex = String.format("%04X", c);
                String single = Character.toString(c);
                String expected = mapped.has(hex) ? decode(mapped.get(hex).asText()) : single;
                String actual = java.apply(single);
                if (!actual.equals(expected)) {
                    differences.add("U+" + hex + " python="
                            + expected.codePoints()
                                    .mapToObj(Integer::toHexString)
                                    .toList() + " java="
                            + actual.codePoints().mapToObj(Integer::toHexString).toList());
                }
                checked++;
            }
        }
        assertThat(checked).isGreaterThan(140_000);
        return differences;
    }

    @Test
    void tablesAreFromUnicode14() {
        assertThat(TABLES.get("unicode_version").asText()).isEqualTo("14.0.0");
        assertThat(TABLES.get("casefold").size()).isGreaterThan(1000);
    }

    @Test
    void icuFoldsEveryCharacterExactlyAsPythonsCasefold() {
        assertThat(differences("casefold", CaseFold::fold)).isEmpty();
    }

    @Test
    void icuNormalisesEveryCharacterToNfcExactlyAsPython() {
        assertThat(differences("nfc", CaseFold::nfc)).isEmpty();
    }

    @Test
    void theJdkUpperCasesAsPythonExceptForLetterPairsNewerThanUnicode14() {
        List<String> differences = differences("upper", s -> s.toUpperCase(Locale.ROOT));

        // a later Unicode may give an old lowercase letter a new capital (U+019B gained U+A7DC in
        // Unicode 16); folding is stable against that, upper-casing is not
        for (String difference : differences) {
            String java = difference.substring(difference.indexOf("java=[") + 6, difference.length() - 1);
            assertThat(java.split(", ")).as(difference).anyMatch(hex -> !assignedInPython(Integer.parseInt(hex, 16)));
        }
        assertThat(differences).hasSizeLessThan(10);
    }
}
