package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class ResultCodecTest {

    record Receipt(String id, BigDecimal amount, Instant at) {}

    @Test
    void utf8RoundTripsNonAsciiText() throws Exception {
        String text = "Grüße, 世界 😀 — ñ";
        ResultCodec<String> codec = ResultCodec.utf8();

        byte[] encoded = codec.encode(text);

        assertThat(encoded).containsExactly(text.getBytes(StandardCharsets.UTF_8));
        assertThat(codec.decode(encoded)).isEqualTo(text);
    }

    @Test
    void utf8EncodesAsUtf8Bytes() throws Exception {
        assertThat(ResultCodec.utf8().encode("é")).containsExactly(0xC3, 0xA9);
        assertThat(ResultCodec.utf8().decode(new byte[] {(byte) 0xC3, (byte) 0xA9}))
                .isEqualTo("é");
    }

    @Test
    void utf8RoundTripsEmptyText() throws Exception {
        ResultCodec<String> codec = ResultCodec.utf8();

        assertThat(codec.encode("")).isEmpty();
        assertThat(codec.decode(codec.encode(""))).isEmpty();
    }

    @Test
    void bytesRoundTrips() throws Exception {
        byte[] value = {0, 1, -1, 127, -128, 42};
        ResultCodec<byte[]> codec = ResultCodec.bytes();

        assertThat(codec.decode(codec.encode(value))).containsExactly(0, 1, -1, 127, -128, 42);
    }

    @Test
    void bytesEncodeCopiesItsInput() throws Exception {
        byte[] value = {1, 2, 3};

        byte[] encoded = ResultCodec.bytes().encode(value);
        value[0] = 9;

        assertThat(encoded).isNotSameAs(value).containsExactly(1, 2, 3);
    }

    @Test
    void bytesDecodeCopiesItsInput() throws Exception {
        byte[] stored = {1, 2, 3};

        byte[] decoded = ResultCodec.bytes().decode(stored);
        stored[0] = 9;

        assertThat(decoded).isNotSameAs(stored).containsExactly(1, 2, 3);
    }

    @Test
    void jsonShortcutRoundTripsARecord() throws Exception {
        Receipt receipt = new Receipt("r-1", new BigDecimal("10.50"), Instant.parse("2024-03-01T12:00:00.5Z"));
        ResultCodec<Receipt> codec = ResultCodec.json(Receipt.class);

        assertThat(codec.decode(codec.encode(receipt))).isEqualTo(receipt);
    }
}
