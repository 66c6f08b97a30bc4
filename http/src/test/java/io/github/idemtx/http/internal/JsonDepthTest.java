package io.github.idemtx.http.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** JsonDepth guards the recursive canonicalizer: it must never see a nesting deeper than it counted. */
class JsonDepthTest {

    @ParameterizedTest(name = "{0} nests {1} deep")
    @CsvSource(
            delimiterString = " => ",
            value = {
                "'' => 0",
                "1 => 0",
                "\"[{\" => 0",
                "[] => 1",
                "{} => 1",
                "[[]] => 2",
                "{\"a\":[{}]} => 3",
                "[[]][[]][[]] => 2",
                "[[],[],[[]]] => 3",
                "[\"]]]\",[1]] => 2",
                "[\"{{{\"] => 1",
                "[\"\\\"[[[\"] => 1",
                "[\"\\\\\",[1]] => 2",
                "[[]]]] => 2",
            })
    void countsTheDeepestNestingOutsideStrings(String json, int depth) {
        assertThat(JsonDepth.of(json)).isEqualTo(depth);
    }
}
