package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class JsonCodecTest {

    record Transfer(String id, BigDecimal amount, Instant executedAt, String memo) {}

    private static final Transfer TRANSFER = new Transfer(
            "t-1", new BigDecimal("12345.60"), Instant.parse("2024-03-01T12:34:56.123456789Z"), "Miete März 😀");

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void roundTripsARecordWithInstantAndBigDecimal() throws Exception {
        JsonCodec<Transfer> codec = JsonCodec.of(Transfer.class);

        Transfer decoded = codec.decode(codec.encode(TRANSFER));

        assertThat(decoded).isEqualTo(TRANSFER);
        assertThat(decoded.amount().scale()).isEqualTo(2);
        assertThat(decoded.executedAt().getNano()).isEqualTo(123456789);
    }

    @Test
    void encodesAsJsonText() throws Exception {
        String json = new String(JsonCodec.of(Transfer.class).encode(TRANSFER), StandardCharsets.UTF_8);

        // Jackson may escape the emoji's surrogate pair; the rest is plain UTF-8 JSON
        assertThat(json).startsWith("{").endsWith("}").contains("\"id\":\"t-1\"", "\"memo\":\"Miete März ");
    }

    @Test
    void roundTripsAGenericListThroughAGivenMapper() throws Exception {
        ObjectMapper mapper =
                JsonMapper.builder().addModule(new JavaTimeModule()).build();
        JsonCodec<List<Transfer>> codec = JsonCodec.of(mapper, new TypeReference<List<Transfer>>() {});
        List<Transfer> transfers = List.of(TRANSFER, new Transfer("t-2", new BigDecimal("-0.01"), Instant.EPOCH, null));

        List<Transfer> decoded = codec.decode(codec.encode(transfers));

        assertThat(decoded).containsExactlyElementsOf(transfers);
        assertThat(decoded).allSatisfy(t -> assertThat(t).isInstanceOf(Transfer.class));
    }

    @Test
    void roundTripsThroughAGivenMapperAndClass() throws Exception {
        ObjectMapper mapper =
                JsonMapper.builder().addModule(new JavaTimeModule()).build();
        JsonCodec<Transfer> codec = JsonCodec.of(mapper, Transfer.class);

        assertThat(codec.decode(codec.encode(TRANSFER))).isEqualTo(TRANSFER);
    }

    @Test
    void decodingInvalidJsonThrows() {
        JsonCodec<Transfer> codec = JsonCodec.of(Transfer.class);

        assertThatThrownBy(() -> codec.decode(utf8("{\"id\": \"t-1\", "))).isInstanceOf(JsonProcessingException.class);
        assertThatThrownBy(() -> codec.decode(utf8("not json"))).isInstanceOf(JsonProcessingException.class);
    }

    @Test
    void decodingJsonOfTheWrongShapeThrows() {
        JsonCodec<Transfer> codec = JsonCodec.of(Transfer.class);

        assertThatThrownBy(() -> codec.decode(utf8("[1, 2, 3]"))).isInstanceOf(JsonProcessingException.class);
    }

    @Test
    void rejectsNullMapperOrType() {
        ObjectMapper mapper = new ObjectMapper();

        assertThatNullPointerException()
                .isThrownBy(() -> JsonCodec.of(null, Transfer.class))
                .withMessageContaining("mapper");
        assertThatNullPointerException()
                .isThrownBy(() -> JsonCodec.of(mapper, (Class<Transfer>) null))
                .withMessageContaining("type");
        assertThatNullPointerException()
                .isThrownBy(() -> JsonCodec.of(mapper, (TypeReference<Transfer>) null))
                .withMessageContaining("type");
        assertThatNullPointerException()
                .isThrownBy(() -> JsonCodec.of((Class<Transfer>) null))
                .withMessageContaining("type");
    }
}
