package io.github.idemtx.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;

/** The conformance data copied into test resources (see resources/conformance/ORIGIN.md). */
final class ConformanceData {

    static final List<String> STRUCTURED_FIELD_FILES =
            List.of("item.json", "string.json", "string-generated.json", "token.json", "token-generated.json");
    /**
     * The working group's cases for the other bare item types, which a header value may carry as a
     * parameter value and must be parsed (and then refused) as such; taken from the same upstream commit,
     * they have no copy in the shared folder (see resources/conformance/ORIGIN.md).
     */
    static final List<String> STRUCTURED_FIELD_TYPE_FILES = List.of(
            "number.json", "number-generated.json", "binary.json", "boolean.json", "date.json", "display-string.json");

    static final List<String> RFC8785_FILES =
            List.of("arrays.json", "french.json", "structures.json", "unicode.json", "values.json", "weird.json");

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private ConformanceData() {}

    static byte[] bytes(String path) {
        try (InputStream in = ConformanceData.class.getResourceAsStream("/conformance/" + path)) {
            if (in == null) {
                throw new IllegalStateException("missing test resource conformance/" + path);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static JsonNode structuredFieldCases(String file) {
        try {
            return MAPPER.readTree(bytes("structured-field-tests/" + file));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
