package io.github.idemtx.keys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.keys.internal.DerivedText;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Checks {@link DerivedKeys} and {@link DownstreamKeys} against vectors computed by an independent
 * Python implementation: {@code src/test/resources/derived-keys/make_vectors.py}, the source of
 * truth. To change or add vectors, edit that script and run, from the repository root,
 * {@code python3 core/src/test/resources/derived-keys/make_vectors.py} (Python 3.11 or newer); it
 * rewrites {@code vectors.json}. {@code --check} tells whether the file is current.
 */
class DerivedKeysVectorsTest {

    private static final JsonNode VECTORS = load();
    private static final HexFormat HEX = HexFormat.of();

    private static JsonNode load() {
        try (InputStream in = DerivedKeysVectorsTest.class.getResourceAsStream("/derived-keys/vectors.json")) {
            if (in == null) {
                throw new IllegalStateException("derived-keys/vectors.json is not on the test class path");
            }
            return new ObjectMapper().readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Stream<JsonNode> elements(String name) {
        return StreamSupport.stream(VECTORS.get(name).spliterator(), false);
    }

    private static Stream<Arguments> derived() {
        return elements("derived").map(v -> Arguments.of(v.get("name").asText(), v));
    }

    private static Stream<Arguments> downstream() {
        return elements("downstream").map(v -> Arguments.of(v.get("name").asText(), v));
    }

    private static Stream<Arguments> normalisers() {
        return elements("normalisers")
                .map(v -> Arguments.of(
                        v.get("normaliser").asText(),
                        v.get("input"),
                        v.get("output").asText()));
    }

    private static Stream<Arguments> normaliserErrors() {
        return elements("normaliser_errors")
                .map(v -> Arguments.of(v.get("normaliser").asText(), v.get("input")));
    }

    /** A vector's payload value as the Java value it stands for (see make_vectors.py). */
    static Object value(JsonNode node) {
        if (node.isTextual()) {
            return node.textValue();
        }
        Map.Entry<String, JsonNode> wrapper = node.properties().iterator().next();
        JsonNode raw = wrapper.getValue();
        return switch (wrapper.getKey()) {
            case "$decimal" -> new BigDecimal(raw.asText());
            case "$long" -> raw.longValue();
            case "$int" -> raw.intValue();
            case "$biginteger" -> new BigInteger(raw.asText());
            default -> throw new IllegalArgumentException("unknown value wrapper " + wrapper.getKey());
        };
    }

    private static DerivedKeys keys(JsonNode v) {
        DerivedKeys.Builder builder = DerivedKeys.builder()
                .secret(HEX.parseHex(v.get("secret_hex").asText()))
                .action(v.get("action").asText())
                .bucketSize(Duration.ofSeconds(v.get("bucket_seconds").asLong()))
                .keyLength(v.get("key_length").asInt());
        v.get("fields")
                .properties()
                .forEach(f -> builder.field(
                        f.getKey(), FieldNormalizer.valueOf(f.getValue().asText())));
        v.get("ignored").forEach(name -> builder.ignore(name.asText()));
        return builder.build();
    }

    private static Map<String, Object> payload(JsonNode v, boolean reversed) {
        List<Map.Entry<String, JsonNode>> entries =
                new ArrayList<>(v.get("payload").properties());
        if (reversed) {
            entries = entries.reversed();
        }
        Map<String, Object> payload = new LinkedHashMap<>();
        entries.forEach(e -> payload.put(e.getKey(), value(e.getValue())));
        return payload;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("derived")
    void derivedMaterialIsByteEqualToPython(String name, JsonNode v) {
        DerivedKeys keys = keys(v);
        Scope tenant = Scope.of(v.get("tenant").asText());
        Instant createdAt = Instant.parse(v.get("created_at").asText());

        byte[] material = keys.material(tenant, payload(v, false), createdAt);

        assertThat(HEX.formatHex(material)).isEqualTo(v.get("material_hex").asText());
        assertThat(keys.bucketOf(createdAt)).isEqualTo(v.get("bucket").asLong());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("derived")
    void derivedKeyIsPythons(String name, JsonNode v) {
        DerivedKeys keys = keys(v);
        Scope tenant = Scope.of(v.get("tenant").asText());
        Instant createdAt = Instant.parse(v.get("created_at").asText());
        String expected = v.get("key").asText();

        assertThat(keys.deriveHex(tenant, payload(v, false), createdAt)).isEqualTo(expected);
        assertThat(keys.derive(tenant, payload(v, true), createdAt)).isEqualTo(IdempotencyKey.of(expected));
        assertThat(v.get("full_key").asText()).startsWith(expected);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("derived")
    void derivedFieldsNormaliseAsInPython(String name, JsonNode v) {
        Map<String, Object> payload = payload(v, false);
        v.get("normalised").properties().forEach(f -> {
            FieldNormalizer normalizer =
                    FieldNormalizer.valueOf(v.get("fields").get(f.getKey()).asText());
            assertThat(normalizer.normalize(f.getKey(), payload.get(f.getKey())))
                    .as("field %s", f.getKey())
                    .isEqualTo(f.getValue().asText());
        });
    }

    @ParameterizedTest(name = "{0} {1} -> {2}")
    @MethodSource("normalisers")
    void normalisersMatchPython(String normaliser, JsonNode input, String output) {
        assertThat(FieldNormalizer.valueOf(normaliser).normalize("f", value(input)))
                .isEqualTo(output);
    }

    @ParameterizedTest(name = "{0} refuses {1}")
    @MethodSource("normaliserErrors")
    void normalisersRefuseWhatPythonRefuses(String normaliser, JsonNode input) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> FieldNormalizer.valueOf(normaliser).normalize("f", value(input)))
                .withMessageStartingWith("field 'f': " + normaliser);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("downstream")
    void downstreamKeyIsPythons(String name, JsonNode v) {
        DownstreamKeys keys = DownstreamKeys.of(
                HEX.parseHex(v.get("secret_hex").asText()), v.get("length").asInt());
        Scope scope = Scope.of(v.get("scope").asText());
        IdempotencyKey key = IdempotencyKey.of(v.get("key").asText());
        String step = v.get("step").asText();

        assertThat(HEX.formatHex(keys.material(scope, key, step)))
                .isEqualTo(v.get("material_hex").asText());
        assertThat(keys.deriveHex(scope, key, step))
                .isEqualTo(v.get("downstream_key").asText());
        assertThat(keys.derive(scope, key, step).value())
                .isEqualTo(v.get("downstream_key").asText());
        assertThat(v.get("full_key").asText())
                .startsWith(v.get("downstream_key").asText());
    }

    @Test
    void vectorsThatShareAKeyShareIt() {
        Map<String, String> keyByName = new LinkedHashMap<>();
        elements("derived")
                .forEach(v ->
                        keyByName.put(v.get("name").asText(), v.get("full_key").asText()));
        elements("derived")
                .filter(v -> v.has("same_key_as"))
                .forEach(v -> assertThat(keyByName.get(v.get("name").asText()))
                        .as(v.get("name").asText())
                        .isEqualTo(keyByName.get(v.get("same_key_as").asText())));
    }

    @Test
    void thereAreEnoughVectors() {
        assertThat(VECTORS.get("derived").size()).isGreaterThanOrEqualTo(15);
        assertThat(VECTORS.get("downstream").size()).isGreaterThanOrEqualTo(5);
        assertThat(VECTORS.get("normalisers").size()).isGreaterThanOrEqualTo(50);
        assertThat(VECTORS.get("normaliser_errors").size()).isGreaterThanOrEqualTo(20);
    }

    @Test
    void pythonWhitespaceIsExactlyPythonsStrIsspace() {
        Set<Integer> python = new HashSet<>();
        VECTORS.get("python_isspace").forEach(c -> python.add(c.intValue()));
        assertThat(python).allMatch(c -> c <= 0xFFFF, "is in the BMP");

        for (int c = 0; c <= 0xFFFF; c++) {
            assertThat(DerivedText.isPythonSpace((char) c)).as("U+%04X", c).isEqualTo(python.contains(c));
        }
    }

    @Test
    void materialIsUtf8WithNonAsciiUnescaped() {
        JsonNode v = elements("derived")
                .filter(x -> x.get("name").asText().equals("supplementary field names sort by code point"))
                .findFirst()
                .orElseThrow();
        String material = new String(HEX.parseHex(v.get("material_hex").asText()), StandardCharsets.UTF_8);

        assertThat(material).contains("\"t\uD83D\uDE00\"").doesNotContain("\\u");
        // by code point U+E000 and U+FF21 come before U+1D49C and U+1F4B0; by UTF-16 unit after
        assertThat(material.indexOf("\uE000note")).isLessThan(material.indexOf("\uD835\uDC9C"));
        assertThat(material.indexOf("\uFF21")).isLessThan(material.indexOf("\uD83D\uDCB0"));
        assertThat("\uE000note".compareTo("\uD835\uDC9C")).isPositive();
    }
}
