package io.github.idemtx.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.http.internal.StructuredFieldParser;
import io.github.idemtx.http.internal.StructuredFieldParser.Item;
import io.github.idemtx.http.internal.StructuredFieldParser.Token;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The HTTP working group's Structured Field test cases (string, token, item) against the Item
 * parser, and what the {@code Idempotency-Key} header makes of each.
 */
class StructuredFieldConformanceTest {

    record Case(String file, JsonNode node) {
        String name() {
            return file + ": " + node.get("name").asText();
        }

        String raw() {
            List<String> lines = new ArrayList<>();
            node.get("raw").forEach(l -> lines.add(l.asText()));
            return String.join(", ", lines);
        }

        boolean mustFail() {
            return node.path("must_fail").asBoolean(false);
        }

        boolean canFail() {
            return node.path("can_fail").asBoolean(false);
        }
    }

    static Stream<Case> itemCases() {
        return itemCases(ConformanceData.STRUCTURED_FIELD_FILES);
    }

    static Stream<Case> itemCases(List<String> files) {
        return files.stream()
                .flatMap(f -> {
                    List<Case> cases = new ArrayList<>();
                    ConformanceData.structuredFieldCases(f).forEach(n -> cases.add(new Case(f, n)));
                    return cases.stream();
                })
                .filter(c -> c.node().get("header_type").asText().equals("item"));
    }

    @TestFactory
    Stream<DynamicTest> theItemParserAcceptsAndRejectsExactlyAsTheWorkingGroupsCasesSay() {
        assertThat(itemCases().count()).as("item cases in the suite").isGreaterThan(500);
        return parserCases(itemCases());
    }

    @TestFactory
    Stream<DynamicTest> theItemParserReadsEveryOtherBareItemTypeAsTheWorkingGroupsCasesSay() {
        assertThat(itemCases(ConformanceData.STRUCTURED_FIELD_TYPE_FILES).count())
                .as("number, binary, boolean, date and display string cases")
                .isGreaterThan(280);
        return parserCases(itemCases(ConformanceData.STRUCTURED_FIELD_TYPE_FILES));
    }

    private static Stream<DynamicTest> parserCases(Stream<Case> cases) {
        return cases.map(c -> DynamicTest.dynamicTest(c.name(), () -> {
            if (c.mustFail()) {
                assertThatThrownBy(() -> StructuredFieldParser.parseItem(c.raw()))
                        .isInstanceOf(StructuredFieldParser.ParseException.class);
                return;
            }
            Item item;
            try {
                item = StructuredFieldParser.parseItem(c.raw());
            } catch (StructuredFieldParser.ParseException e) {
                if (c.canFail()) {
                    return;
                }
                throw new AssertionError(c.name() + " must parse but failed: " + e.getMessage(), e);
            }
            JsonNode expected = c.node().get("expected");
            assertValue(item.value(), expected.get(0));
            JsonNode params = expected.get(1);
            assertThat(item.parameters()).hasSize(params.size());
            int i = 0;
            for (Map.Entry<String, Object> p : item.parameters().entrySet()) {
                assertThat(p.getKey()).isEqualTo(params.get(i).get(0).asText());
                assertValue(p.getValue(), params.get(i).get(1));
                i++;
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> theHeaderTakesEveryValidStringCaseAsItsKeyAndRefusesEveryInvalidQuotedOne() {
        return itemCases()
                .filter(c -> c.raw().stripLeading().startsWith("\"") && !c.canFail())
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> {
                    if (c.mustFail()) {
                        assertThatThrownBy(() -> IdempotencyKeyHeader.parse(c.raw()))
                                .isInstanceOf(InvalidIdempotencyKeyException.class);
                        return;
                    }
                    String expected = c.node().get("expected").get(0).asText();
                    if (expected.isBlank()) {
                        assertThatThrownBy(() -> IdempotencyKeyHeader.parse(c.raw()))
                                .isInstanceOfSatisfying(
                                        InvalidIdempotencyKeyException.class,
                                        e -> assertThat(e.reason())
                                                .isEqualTo(InvalidIdempotencyKeyException.Reason.EMPTY));
                    } else if (expected.length() > IdempotencyKey.MAX_LENGTH) {
                        assertThatThrownBy(() -> IdempotencyKeyHeader.parse(c.raw()))
                                .isInstanceOfSatisfying(
                                        InvalidIdempotencyKeyException.class,
                                        e -> assertThat(e.reason())
                                                .isEqualTo(InvalidIdempotencyKeyException.Reason.TOO_LONG));
                    } else {
                        assertThat(IdempotencyKeyHeader.parse(c.raw()).value()).isEqualTo(expected);
                    }
                }));
    }

    @TestFactory
    Stream<DynamicTest> theHeaderTakesEveryValidTokenCaseLiterallyAsItsKeyAndRefusesParameters() {
        return itemCases()
                .filter(c -> !c.mustFail()
                        && c.node().get("expected").get(0).isObject()
                        && c.node()
                                .get("expected")
                                .get(0)
                                .path("__type")
                                .asText()
                                .equals("token"))
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> {
                    String token = c.node().get("expected").get(0).get("value").asText();
                    if (c.node().get("expected").get(1).isEmpty()) {
                        assertThat(IdempotencyKeyHeader.parse(c.raw()).value()).isEqualTo(token);
                    } else {
                        assertThatThrownBy(() -> IdempotencyKeyHeader.parse(c.raw()))
                                .isInstanceOfSatisfying(
                                        InvalidIdempotencyKeyException.class,
                                        e -> assertThat(e.reason())
                                                .isEqualTo(InvalidIdempotencyKeyException.Reason.PARAMETERS));
                    }
                }));
    }

    private static void assertValue(Object actual, JsonNode expected) {
        if (expected.isTextual()) {
            assertThat(actual).isEqualTo(expected.asText());
        } else if (expected.isBoolean()) {
            assertThat(actual).isEqualTo(expected.asBoolean());
        } else if (expected.isIntegralNumber()) {
            assertThat(actual).isEqualTo(expected.asLong());
        } else if (expected.isNumber()) {
            assertThat((BigDecimal) actual).isEqualByComparingTo(expected.decimalValue());
        } else if (expected.isObject() && expected.path("__type").asText().equals("token")) {
            assertThat(actual).isEqualTo(new Token(expected.get("value").asText()));
        } else if (expected.isObject() && expected.path("__type").asText().equals("binary")) {
            assertThat((byte[]) actual)
                    .containsExactly(base32(expected.get("value").asText()));
        } else if (expected.isObject() && expected.path("__type").asText().equals("date")) {
            assertThat(actual)
                    .isEqualTo(
                            new StructuredFieldParser.Date(expected.get("value").asLong()));
        } else if (expected.isObject() && expected.path("__type").asText().equals("displaystring")) {
            assertThat(actual)
                    .isEqualTo(new StructuredFieldParser.DisplayString(
                            expected.get("value").asText()));
        } else {
            fail("the suite expects a value of a kind this test does not compare: " + expected);
        }
    }

    /** RFC 4648 base32, as the suite writes expected byte sequences. */
    private static byte[] base32(String text) {
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        int buffer = 0;
        int bits = 0;
        for (char c : text.replace("=", "").toCharArray()) {
            buffer = (buffer << 5) | alphabet.indexOf(c);
            bits += 5;
            if (bits >= 8) {
                out.write(buffer >>> (bits - 8));
                bits -= 8;
            }
        }
        return out.toByteArray();
    }
}
