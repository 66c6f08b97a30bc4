package io.github.idemtx.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.IdempotencyKey;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.CharRange;
import net.jqwik.api.constraints.StringLength;

class IdempotencyKeyHeaderProperties {

    @Property(tries = 3000)
    void anyStringYieldsAKeyOrTheDocumentedException(@ForAll String value) {
        assertParsesOrRefuses(value);
    }

    @Property(tries = 3000)
    void anyStringBuiltFromHeaderishCharactersYieldsAKeyOrTheDocumentedException(@ForAll("headerish") String value) {
        assertParsesOrRefuses(value);
    }

    @Property(tries = 2000)
    void everyValidKeySurvivesFormatThenParse(
            @ForAll @CharRange(from = 0x20, to = 0x7E) @StringLength(min = 1, max = 255) String value) {
        if (value.isBlank()) {
            return;
        }
        IdempotencyKey key = IdempotencyKey.of(value);
        assertThat(IdempotencyKeyHeader.parse(IdempotencyKeyHeader.format(key))).isEqualTo(key);
    }

    @Provide
    Arbitrary<String> headerish() {
        return Arbitraries.strings()
                .withChars("\"\\ ;,=?:@%()abcXYZ019-_.*\t\u0000\u007f\u00e9")
                .ofMaxLength(300);
    }

    private static void assertParsesOrRefuses(String value) {
        try {
            IdempotencyKey key = IdempotencyKeyHeader.parse(value);
            assertThat(key.value()).isNotBlank().hasSizeLessThanOrEqualTo(IdempotencyKey.MAX_LENGTH);
            assertThat(key.value().chars()).allMatch(c -> c >= 0x20 && c <= 0x7E);
        } catch (InvalidIdempotencyKeyException e) {
            assertThat(e.reason()).isNotNull();
            assertThat(e.getMessage()).isNotBlank();
        }
    }
}
