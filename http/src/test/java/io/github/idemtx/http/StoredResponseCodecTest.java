package io.github.idemtx.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import org.junit.jupiter.api.Test;

class StoredResponseCodecTest {

    private final StoredResponseCodec codec = StoredResponseCodec.defaults();

    @Test
    void roundTripsEveryStatusIncludingThoseAboveOneByte() {
        for (int status = 100; status <= 599; status++) {
            StoredResponse r = StoredResponse.of(status, "text/plain", "s");
            assertThat(codec.decode(codec.encode(r)).status())
                    .as("status %d", status)
                    .isEqualTo(status);
        }
    }

    @Test
    void roundTripsALargeBodyAndHeaderValuesLongerThan255Bytes() {
        byte[] body = new byte[100_000];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i * 31);
        }
        String longValue = "é".repeat(200); // 400 bytes in UTF-8
        StoredResponse r = new StoredResponse(200, List.of(new StoredResponse.Header("Content-Type", longValue)), body);

        StoredResponse decoded = codec.decode(codec.encode(r));

        assertThat(decoded).isEqualTo(r);
        assertThat(decoded.header("content-type")).contains(longValue);
    }

    @Test
    void storesAHeaderValueOf65535BytesAndRefusesOneByteMore() {
        String max = "v".repeat(0xFFFF);
        StoredResponse fits = StoredResponse.of(200, max, "");

        assertThat(codec.decode(codec.encode(fits)).header("Content-Type")).contains(max);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> codec.encode(StoredResponse.of(200, max + "v", "")))
                .withMessage("a header is longer than 65535 bytes");
    }

    @Test
    void allowingAddsHeadersInLowerCaseAndLeavesTheOriginalAlone() {
        StoredResponseCodec more = codec.allowing("X-Balance", "Preference-Applied");

        assertThat(more.allowedHeaders())
                .containsAll(StoredResponseCodec.DEFAULT_HEADERS)
                .contains("x-balance", "preference-applied")
                .hasSize(StoredResponseCodec.DEFAULT_HEADERS.size() + 2);
        assertThat(codec.allowedHeaders()).isEqualTo(StoredResponseCodec.DEFAULT_HEADERS);
        StoredResponse r = StoredResponse.of(200, "text/plain", "").withHeader("X-Balance", "5");
        assertThat(more.decode(more.encode(r)).header("x-balance")).contains("5");
        assertThat(codec.decode(codec.encode(r)).header("x-balance")).isEmpty();
        assertThat(more.toString()).startsWith("StoredResponseCodec[").contains("x-balance", "location");
    }

    @Test
    void theStoredFormIsVersionStatusHeaderCountHeadersThenBody() {
        StoredResponse r =
                new StoredResponse(503, List.of(new StoredResponse.Header("ETag", "e")), "ok".getBytes(UTF_8));

        assertThat(codec.encode(r))
                .containsExactly(
                        1, // version
                        0x01,
                        0xF7 - 256, // 503
                        0,
                        1, // one header
                        0,
                        4,
                        'E',
                        'T',
                        'a',
                        'g',
                        0,
                        1,
                        'e',
                        'o',
                        'k');
    }
}
