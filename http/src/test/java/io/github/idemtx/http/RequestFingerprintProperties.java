package io.github.idemtx.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class RequestFingerprintProperties {

    private static final ObjectMapper COMPACT = new ObjectMapper();
    private static final ObjectMapper PRETTY = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    @Property(tries = 3000)
    void anyBytesYieldAFingerprintOrAnInvalidJsonException(@ForAll byte[] body) {
        assertFingerprintsOrRefuses(body);
    }

    @Property(tries = 3000)
    void anyJsonishTextYieldsAFingerprintOrAnInvalidJsonException(@ForAll("jsonish") String body) {
        assertFingerprintsOrRefuses(body.getBytes(UTF_8));
    }

    @Property(tries = 500)
    void reserialisingTheSameJsonWithOtherSpacingAndMemberOrderKeepsTheFingerprint(
            @ForAll("documents") Map<String, Object> document, @ForAll long seed) throws Exception {
        byte[] compact = COMPACT.writeValueAsBytes(document);
        byte[] shuffled = PRETTY.writeValueAsBytes(shuffle(document, new Random(seed)));
        assertThat(RequestFingerprint.json("POST", "/x", null, shuffled))
                .isEqualTo(RequestFingerprint.json("POST", "/x", null, compact));
    }

    @Provide
    Arbitrary<String> jsonish() {
        return Arbitraries.strings()
                .withChars("{}[]\":,.-+eE0123456789 \\ntrufalsu\u00e9\u0000")
                .ofMaxLength(200);
    }

    @Provide
    Arbitrary<Map<String, Object>> documents() {
        Arbitrary<Object> scalars = Arbitraries.oneOf(
                Arbitraries.strings().ofMaxLength(12).map(s -> (Object) s),
                Arbitraries.integers().map(i -> (Object) i),
                Arbitraries.doubles().between(-1e6, 1e6).map(d -> (Object) d),
                Arbitraries.of(true, false).map(b -> (Object) b));
        Arbitrary<Object> lists = scalars.list().ofMaxSize(4).map(l -> (Object) l);
        Arbitrary<Object> values = Arbitraries.oneOf(scalars, lists);
        return Arbitraries.maps(Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(6), values)
                .ofMaxSize(6);
    }

    @SuppressWarnings("unchecked")
    private static Object shuffle(Object value, Random random) {
        if (value instanceof Map<?, ?> map) {
            List<Map.Entry<String, Object>> entries = new ArrayList<>(((Map<String, Object>) map).entrySet());
            Collections.shuffle(entries, random);
            Map<String, Object> out = new LinkedHashMap<>();
            entries.forEach(e -> out.put(e.getKey(), shuffle(e.getValue(), random)));
            return out;
        }
        if (value instanceof List<?> list) {
            List<Object> out = new ArrayList<>();
            list.forEach(v -> out.add(shuffle(v, random)));
            return out;
        }
        return value;
    }

    private static void assertFingerprintsOrRefuses(byte[] body) {
        try {
            assertThat(RequestFingerprint.json("POST", "/x", null, body)).isNotNull();
        } catch (InvalidJsonException e) {
            assertThat(e.getMessage()).isNotBlank();
        }
    }
}
