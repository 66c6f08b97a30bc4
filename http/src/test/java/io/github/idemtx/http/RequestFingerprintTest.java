package io.github.idemtx.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RequestFingerprintTest {

    private static byte[] utf8(String s) {
        return s.getBytes(UTF_8);
    }

    @TestFactory
    Stream<DynamicTest> canonicalisesEveryRfc8785ReferenceInputToExactlyItsReferenceOutput() {
        return ConformanceData.RFC8785_FILES.stream()
                .map(f -> DynamicTest.dynamicTest(
                        f,
                        () -> assertThat(new String(
                                        RequestFingerprint.canonicalJson(ConformanceData.bytes("rfc8785/input/" + f)),
                                        UTF_8))
                                .isEqualTo(new String(ConformanceData.bytes("rfc8785/output/" + f), UTF_8))));
    }

    /**
     * Fingerprints are stored with claims: a change of the encoding would turn every retry of a request
     * in flight into a fingerprint mismatch. These digests were computed outside Java, from the encoding
     * the class documents: SHA-256 over each part (the version tag "idemtx-request-v1", method, path,
     * sorted query, body kind 'j' or 'r', body) prefixed by its length as an 8-byte big-endian integer.
     */
    @Test
    void keepsTheDocumentedEncodingSoStoredFingerprintsStillMatch() {
        assertThat(RequestFingerprint.json(
                                "POST", "/transfers", "b=2&a=1", utf8("{ \"to\": \"bob\", \"amount\": 1e1 }"))
                        .hex())
                .isEqualTo("7f3f0e03ffecea8b9a1e5cfc3b03a7ed5dc48cc6d0049c90bed4b8e1092af007");
        assertThat(RequestFingerprint.raw("PUT", "/files/1", null, utf8("hello"))
                        .hex())
                .isEqualTo("a08949cc9214c45ede44667f9712cf97a1054873f0361cb8cd32fef2ea370b5d");
    }

    @Test
    void treatsReserialisedJsonAsTheSameRequest() {
        Fingerprint compact = RequestFingerprint.json(
                "POST",
                "/transfers",
                null,
                utf8("{\"from\":\"a\",\"to\":\"b\",\"amount\":\"10.00\",\"meta\":{\"x\":1.0,\"y\":[1,2]}}"));
        Fingerprint reformatted = RequestFingerprint.json(
                "POST",
                "/transfers",
                null,
                utf8(
                        "{\n  \"meta\" : { \"y\" : [ 1, 2 ], \"x\" : 1 },\n  \"amount\" : \"10.00\", \"to\":\"b\", \"from\":\"\\u0061\"\n}\n"));
        assertThat(reformatted).isEqualTo(compact);
    }

    @Test
    void distinguishesAnyChangeOfMethodPathQueryOrBody() {
        byte[] body = utf8("{\"amount\":\"10.00\"}");
        Fingerprint base = RequestFingerprint.json("POST", "/transfers", "a=1", body);
        assertThat(RequestFingerprint.json("PUT", "/transfers", "a=1", body)).isNotEqualTo(base);
        assertThat(RequestFingerprint.json("POST", "/transfers/", "a=1", body)).isNotEqualTo(base);
        assertThat(RequestFingerprint.json("POST", "/transfers", "a=2", body)).isNotEqualTo(base);
        assertThat(RequestFingerprint.json("POST", "/transfers", "a=1", utf8("{\"amount\":\"10.01\"}")))
                .isNotEqualTo(base);
        assertThat(RequestFingerprint.raw("POST", "/transfers", "a=1", body))
                .as("raw and JSON bodies never collide")
                .isNotEqualTo(base);
    }

    @Test
    void sortsQueryParametersAndDropsEmptyOnes() {
        byte[] body = utf8("x");
        assertThat(RequestFingerprint.raw("GET", "/p", "b=2&a=1&&c=3&", body))
                .isEqualTo(RequestFingerprint.raw("GET", "/p", "a=1&c=3&b=2", body));
        assertThat(RequestFingerprint.raw("GET", "/p", "", body))
                .isEqualTo(RequestFingerprint.raw("GET", "/p", null, body));
    }

    @Test
    void noTwoPartsCanBeShiftedIntoEachOther() {
        assertThat(RequestFingerprint.raw("POST", "/ab", null, utf8("c")))
                .isNotEqualTo(RequestFingerprint.raw("POST", "/a", null, utf8("bc")));
        assertThat(RequestFingerprint.raw("POST", "/a", "b", null))
                .isNotEqualTo(RequestFingerprint.raw("POST", "/ab", null, null));
    }

    @Test
    void takesARawBodyByteForByte() {
        assertThat(RequestFingerprint.raw("POST", "/p", null, utf8("{\"a\":1}")))
                .isNotEqualTo(RequestFingerprint.raw("POST", "/p", null, utf8("{ \"a\":1}")));
        assertThat(RequestFingerprint.raw("POST", "/p", null, null))
                .isEqualTo(RequestFingerprint.raw("POST", "/p", null, new byte[0]));
    }

    @ParameterizedTest
    @CsvSource(
            delimiterString = "|",
            value = {
                "|empty",
                "   |empty",
                "{\"a\":1,\"a\":2}|Duplicate property",
                "{\"a\":1} x|not acceptable JSON",
                "{\"a\":1e400}|not acceptable JSON",
                "{\"a\":|not acceptable JSON",
                "nul|not acceptable JSON",
                "42|not acceptable JSON",
            })
    void refusesInvalidJsonNamingTheProblem(String body, String problem) {
        assertThatThrownBy(() -> RequestFingerprint.json("POST", "/p", null, utf8(body == null ? "" : body)))
                .isInstanceOf(InvalidJsonException.class)
                .hasMessageContaining(problem);
    }

    @Test
    void refusesBytesThatAreNotUtf8() {
        assertThatThrownBy(
                        () -> RequestFingerprint.json("POST", "/p", null, new byte[] {'{', '"', (byte) 0xC3, '"', '}'}))
                .isInstanceOf(InvalidJsonException.class)
                .hasMessageContaining("UTF-8");
    }

    @Test
    void refusesJsonNestedDeeperThanTheLimitInsteadOfOverflowingTheStack() {
        String deep = "[".repeat(100_000) + "]".repeat(100_000);
        assertThatThrownBy(() -> RequestFingerprint.json("POST", "/p", null, utf8(deep)))
                .isInstanceOf(InvalidJsonException.class)
                .hasMessageContaining("nested");
        String fine = "[".repeat(RequestFingerprint.MAX_JSON_DEPTH) + "]".repeat(RequestFingerprint.MAX_JSON_DEPTH);
        assertThat(RequestFingerprint.json("POST", "/p", null, utf8(fine))).isNotNull();
    }

    @Test
    void refusesNullsAndBlankMethodNamingThem() {
        assertThatThrownBy(() -> RequestFingerprint.raw(null, "/p", null, null)).hasMessageContaining("method");
        assertThatThrownBy(() -> RequestFingerprint.raw(" ", "/p", null, null)).hasMessageContaining("method");
        assertThatThrownBy(() -> RequestFingerprint.raw("GET", null, null, null))
                .hasMessageContaining("path");
        assertThatThrownBy(() -> RequestFingerprint.json("GET", "/p", null, null))
                .hasMessageContaining("body");
    }
}
