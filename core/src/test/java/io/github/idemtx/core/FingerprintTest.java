package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FingerprintTest {

    private static final String SHA256_OF_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    private static final String SHA256_OF_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    private static byte[] sequentialBytes() {
        byte[] bytes = new byte[32];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) i;
        }
        return bytes;
    }

    @Test
    void ofAccepts32BytesAndKeepsThem() {
        byte[] digest = sequentialBytes();

        assertThat(Fingerprint.of(digest).bytes()).containsExactly(digest);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 31, 33, 64})
    void ofRejectsAnythingButExactly32Bytes(int length) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Fingerprint.of(new byte[length]))
                .withMessageContaining("SHA-256")
                .withMessageContaining("32 bytes")
                .withMessageContaining("was " + length + " bytes");
    }

    @Test
    void ofRejectsNull() {
        assertThatNullPointerException().isThrownBy(() -> Fingerprint.of(null));
    }

    @Test
    void ofCopiesItsInput() {
        byte[] source = sequentialBytes();
        Fingerprint fingerprint = Fingerprint.of(source);

        source[0] = 99;
        source[31] = 99;

        assertThat(fingerprint.bytes()).containsExactly(sequentialBytes());
        assertThat(fingerprint).isEqualTo(Fingerprint.of(sequentialBytes()));
    }

    @Test
    void bytesReturnsACopy() {
        Fingerprint fingerprint = Fingerprint.of(sequentialBytes());

        byte[] exposed = fingerprint.bytes();
        exposed[0] = 99;

        assertThat(fingerprint.bytes()).containsExactly(sequentialBytes());
        assertThat(fingerprint.bytes()).isNotSameAs(fingerprint.bytes());
    }

    @Test
    void ofHexRoundTripsWithHex() {
        Fingerprint fingerprint = Fingerprint.ofHex(SHA256_OF_ABC);

        assertThat(fingerprint.hex()).isEqualTo(SHA256_OF_ABC);
        assertThat(Fingerprint.ofHex(fingerprint.hex())).isEqualTo(fingerprint);
        assertThat(fingerprint.bytes()).containsExactly(HexFormat.of().parseHex(SHA256_OF_ABC));
    }

    @Test
    void ofHexAcceptsUpperCaseAndHexIsLowerCase() {
        Fingerprint upper = Fingerprint.ofHex(SHA256_OF_ABC.toUpperCase());

        assertThat(upper).isEqualTo(Fingerprint.ofHex(SHA256_OF_ABC));
        assertThat(upper.hex()).isEqualTo(SHA256_OF_ABC);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 62, 63, 65, 66})
    void ofHexRejectsWrongLength(int length) {
        String hex = "a".repeat(length);

        assertThatIllegalArgumentException()
                .isThrownBy(() -> Fingerprint.ofHex(hex))
                .withMessageContaining("64")
                .withMessageContaining("was " + length);
    }

    @ParameterizedTest
    @ValueSource(strings = {"g", "G", "z", " ", "-", "x", "\u00E9"})
    void ofHexRejectsNonHexCharacters(String bad) {
        String hex = bad + SHA256_OF_ABC.substring(1);
        assertThat(hex).hasSize(64);

        assertThatIllegalArgumentException()
                .isThrownBy(() -> Fingerprint.ofHex(hex))
                .withMessageContaining("hexadecimal");
    }

    @Test
    void ofHexRejectsNull() {
        assertThatNullPointerException().isThrownBy(() -> Fingerprint.ofHex(null));
    }

    @Test
    void sha256OfAbcIsTheWellKnownDigest() {
        assertThat(Fingerprint.sha256("abc").hex()).isEqualTo(SHA256_OF_ABC);
        assertThat(Fingerprint.sha256("abc".getBytes(StandardCharsets.US_ASCII)).hex())
                .isEqualTo(SHA256_OF_ABC);
    }

    @Test
    void sha256OfEmptyInputIsTheWellKnownDigest() {
        assertThat(Fingerprint.sha256("").hex()).isEqualTo(SHA256_OF_EMPTY);
        assertThat(Fingerprint.sha256(new byte[0]).hex()).isEqualTo(SHA256_OF_EMPTY);
    }

    @Test
    void sha256OfTextHashesItsUtf8Bytes() {
        String text = "Grüße 😀";

        assertThat(Fingerprint.sha256(text)).isEqualTo(Fingerprint.sha256(text.getBytes(StandardCharsets.UTF_8)));
        assertThat(Fingerprint.sha256(text)).isNotEqualTo(Fingerprint.sha256(text.getBytes(StandardCharsets.UTF_16)));
    }

    @Test
    void sha256RejectsNull() {
        assertThatNullPointerException().isThrownBy(() -> Fingerprint.sha256((String) null));
        assertThatNullPointerException().isThrownBy(() -> Fingerprint.sha256((byte[]) null));
    }

    @Test
    void isEqualByValue() {
        Fingerprint a = Fingerprint.of(sequentialBytes());
        Fingerprint b = Fingerprint.of(sequentialBytes());
        byte[] other = sequentialBytes();
        other[31] ^= 1;

        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a).isNotEqualTo(Fingerprint.of(other));
        assertThat(a).isNotEqualTo(null);
        assertThat(a).isNotEqualTo(a.hex());
    }

    @Test
    void hashesByDigestSoFingerprintsSpreadInHashedCollections() {
        Fingerprint a = Fingerprint.sha256("abc");
        Fingerprint b = Fingerprint.sha256("");

        assertThat(a.hashCode()).isEqualTo(java.util.Arrays.hashCode(a.bytes())).isNotEqualTo(b.hashCode());
        assertThat(new java.util.HashSet<>(java.util.List.of(a, b, Fingerprint.sha256("abc"))))
                .hasSize(2);
    }

    @Test
    void matchesTheSameDigestOnly() {
        Fingerprint fingerprint = Fingerprint.of(sequentialBytes());
        byte[] other = sequentialBytes();
        other[0] ^= 1;

        assertThat(fingerprint.matches(sequentialBytes())).isTrue();
        assertThat(fingerprint.matches(other)).isFalse();
        assertThat(fingerprint.matches(new byte[31])).isFalse();
        assertThat(fingerprint.matches(new byte[0])).isFalse();
    }

    @Test
    void matchesNullIsFalse() {
        assertThat(Fingerprint.sha256("abc").matches(null)).isFalse();
    }

    @Test
    void toStringShowsTheHexDigest() {
        assertThat(Fingerprint.sha256("abc")).hasToString("Fingerprint[" + SHA256_OF_ABC + "]");
    }
}
