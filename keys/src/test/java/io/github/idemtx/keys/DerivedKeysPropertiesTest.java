package io.github.idemtx.keys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.keys.internal.DerivedText;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.text.Normalizer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

class DerivedKeysPropertiesTest {

    private static final DerivedKeys PIX = DerivedKeysTest.pix();
    private static final BigDecimal HALF_CENT = new BigDecimal("0.005");

    // --- generators

    /** Text of any code points except surrogates, biased towards ASCII and the characters folding and trimming care about. */
    @Provide
    Arbitrary<String> texts() {
        Arbitrary<Integer> interesting = Arbitraries.of(
                0xDF, 0x1E9E, 0x130, 0x131, 0x3A3, 0x3C2, 0x3C3, 0xFB01, 0x301, 0x308, 0xE9, 0x65, 0xA0, 0x3000, 0x85,
                0x2028, 0x200B, 0xFEFF, 0x09, 0x0A, 0x1C, 0x22, 0x5C, 0x00, 0x7F, 0xE000, 0xFFFD, 0x1F600, 0x1D49C,
                0x10400);
        Arbitrary<Integer> codePoint = Arbitraries.oneOf(List.of(
                Arbitraries.integers().between(0x20, 0x7E),
                interesting,
                Arbitraries.integers().between(0, 0xFFFF).filter(c -> c < 0xD800 || c > 0xDFFF),
                Arbitraries.integers().between(0x10000, 0x10FFFF)));
        return codePoint.list().ofMaxSize(20).map(DerivedKeysPropertiesTest::fromCodePoints);
    }

    @Provide
    Arbitrary<BigDecimal> decimals() {
        return Combinators.combine(
                        Arbitraries.bigIntegers().between(BigInteger.TEN.pow(30).negate(), BigInteger.TEN.pow(30)),
                        Arbitraries.integers().between(-20, 40))
                .as(BigDecimal::new);
    }

    @Provide
    Arbitrary<Object> amounts() {
        return Arbitraries.oneOf(List.of(
                decimals(), decimals().map(BigDecimal::toPlainString), Arbitraries.longs(), Arbitraries.integers()));
    }

    @Provide
    Arbitrary<String> creditors() {
        Arbitrary<String> formatted =
                Arbitraries.strings().withChars("0123456789./-").ofMinLength(1).ofMaxLength(20);
        return Arbitraries.oneOf(List.of(formatted, texts()));
    }

    @Provide
    Arbitrary<Map<String, Object>> payloads() {
        return Combinators.combine(amounts(), texts(), creditors(), texts())
                .as((amount, currency, creditor, description) -> {
                    Map<String, Object> payload = new LinkedHashMap<>();
                    payload.put("amount", amount);
                    payload.put("currency", currency);
                    payload.put("creditor", creditor);
                    payload.put("description", description);
                    return payload;
                });
    }

    @Provide
    Arbitrary<Instant> instants() {
        return Arbitraries.longs()
                .between(-100_000_000_000L, 100_000_000_000L)
                .flatMap(second -> Arbitraries.integers()
                        .between(0, 999_999_999)
                        .map(nano -> Instant.ofEpochSecond(second, nano)));
    }

    @Provide
    Arbitrary<Scope> tenants() {
        return texts().filter(t -> !t.isBlank() && !DerivedText.hasControl(t)).map(Scope::of);
    }

    private static String fromCodePoints(List<Integer> codePoints) {
        StringBuilder text = new StringBuilder();
        codePoints.forEach(text::appendCodePoint);
        return text.toString();
    }

    // --- properties

    @Property(tries = 300)
    void derivationIsDeterministic(
            @ForAll("tenants") Scope tenant,
            @ForAll("payloads") Map<String, Object> payload,
            @ForAll("instants") Instant createdAt) {
        String key = PIX.deriveHex(tenant, payload, createdAt);

        assertThat(PIX.deriveHex(tenant, payload, createdAt)).isEqualTo(key);
        assertThat(DerivedKeysTest.pix()
                        .deriveHex(Scope.of(new String(tenant.value())), new LinkedHashMap<>(payload), createdAt))
                .isEqualTo(key);
        assertThat(key).hasSize(64).matches("[0-9a-f]{64}");
    }

    @Property(tries = 300)
    void payloadFieldOrderNeverMatters(@ForAll("payloads") Map<String, Object> payload, @ForAll Random random) {
        List<Map.Entry<String, Object>> entries = new ArrayList<>(payload.entrySet());
        Collections.shuffle(entries, random);
        Map<String, Object> shuffled = new LinkedHashMap<>();
        entries.forEach(e -> shuffled.put(e.getKey(), e.getValue()));

        assertThat(PIX.deriveHex(DerivedKeysTest.TENANT, shuffled, DerivedKeysTest.CREATED))
                .isEqualTo(PIX.deriveHex(DerivedKeysTest.TENANT, payload, DerivedKeysTest.CREATED));
    }

    @Property(tries = 200)
    void ignoredFieldsNeverMatter(
            @ForAll("payloads") Map<String, Object> payload,
            @ForAll("texts") String note,
            @ForAll("amounts") Object traceId) {
        Map<String, Object> withIgnored = new LinkedHashMap<>(payload);
        withIgnored.put("client_note", note);
        withIgnored.put("trace_id", traceId);

        assertThat(PIX.deriveHex(DerivedKeysTest.TENANT, withIgnored, DerivedKeysTest.CREATED))
                .isEqualTo(PIX.deriveHex(DerivedKeysTest.TENANT, payload, DerivedKeysTest.CREATED));
    }

    @Property
    void amountOfAnyBigDecimalHasExactlyTwoDecimals(@ForAll("decimals") BigDecimal value) {
        String amount = FieldNormalizer.AMOUNT.normalize("amount", value);

        assertThat(amount).matches("-?(0|[1-9][0-9]*)\\.[0-9]{2}").isNotEqualTo("-0.00");
        assertThat(new BigDecimal(amount)).isEqualByComparingTo(value.setScale(2, RoundingMode.HALF_UP));
        assertThat(new BigDecimal(amount).subtract(value).abs()).isLessThanOrEqualTo(HALF_CENT);
        assertThat(FieldNormalizer.AMOUNT.normalize("amount", value.toPlainString()))
                .isEqualTo(amount);
        assertThat(FieldNormalizer.AMOUNT.normalize("amount", new BigDecimal(amount)))
                .isEqualTo(amount);
    }

    @Property
    void amountStringsWithAnExponentAreRefused(@ForAll("decimals") BigDecimal value) {
        String scientific = value.unscaledValue() + "E" + (-value.scale());

        assertThatIllegalArgumentException().isThrownBy(() -> FieldNormalizer.AMOUNT.normalize("amount", scientific));
    }

    @Property
    void wholeAmountsOfEveryIntegerTypeAgree(@ForAll long value) {
        String amount = FieldNormalizer.AMOUNT.normalize("amount", value);

        assertThat(amount).isEqualTo(value + ".00");
        assertThat(FieldNormalizer.AMOUNT.normalize("amount", BigInteger.valueOf(value)))
                .isEqualTo(amount);
        assertThat(FieldNormalizer.AMOUNT.normalize("amount", Long.toString(value)))
                .isEqualTo(amount);
    }

    @Property(tries = 300)
    void keysStayTheSameWithinABucketAndChangeAcrossIt(
            @ForAll @LongRange(min = -10_000_000_000L, max = 10_000_000_000L) long second,
            @ForAll @IntRange(min = 1, max = 365 * 24 * 3600) int bucketSeconds) {
        DerivedKeys keys = DerivedKeysTest.pixBuilder()
                .bucketSize(Duration.ofSeconds(bucketSeconds))
                .build();
        Map<String, Object> payload = DerivedKeysTest.payload();
        Instant start = Instant.ofEpochSecond(Math.floorDiv(second, bucketSeconds) * bucketSeconds);
        String key = keys.deriveHex(DerivedKeysTest.TENANT, payload, Instant.ofEpochSecond(second));

        assertThat(keys.deriveHex(DerivedKeysTest.TENANT, payload, start)).isEqualTo(key);
        assertThat(keys.deriveHex(
                        DerivedKeysTest.TENANT,
                        payload,
                        start.plusSeconds(bucketSeconds).minusNanos(1)))
                .isEqualTo(key);
        assertThat(keys.deriveHex(DerivedKeysTest.TENANT, payload, start.plusSeconds(bucketSeconds)))
                .isNotEqualTo(key);
        assertThat(keys.deriveHex(DerivedKeysTest.TENANT, payload, start.minusNanos(1)))
                .isNotEqualTo(key);
    }

    @Property(tries = 200)
    void aShorterKeyIsAPrefixOfTheFullKey(
            @ForAll("payloads") Map<String, Object> payload, @ForAll @IntRange(min = 16, max = 64) int length) {
        String full = PIX.deriveHex(DerivedKeysTest.TENANT, payload, DerivedKeysTest.CREATED);

        IdempotencyKey key = DerivedKeysTest.pixBuilder()
                .keyLength(length)
                .build()
                .derive(DerivedKeysTest.TENANT, payload, DerivedKeysTest.CREATED);

        assertThat(key.value()).hasSize(length);
        assertThat(full).startsWith(key.value());
    }

    @Property(tries = 500)
    void freeTextIgnoresNormalisationFormAndSurroundingWhitespace(@ForAll("texts") String text) {
        String normalised = FieldNormalizer.FREE_TEXT.normalize("f", text);

        assertThat(FieldNormalizer.FREE_TEXT.normalize("f", Normalizer.normalize(text, Normalizer.Form.NFD)))
                .isEqualTo(normalised);
        assertThat(FieldNormalizer.FREE_TEXT.normalize("f", "\u00a0\u3000 \t" + text + "\n\u2028"))
                .isEqualTo(normalised);
        if (!normalised.isEmpty()) {
            assertThat(DerivedText.isPythonSpace(normalised.charAt(0))).isFalse();
            assertThat(DerivedText.isPythonSpace(normalised.charAt(normalised.length() - 1)))
                    .isFalse();
        }
    }

    @Property
    void aFormattedTaxIdIsItsDigits(
            @ForAll @LongRange(min = 0, max = 99_999_999_999_999L) long number, @ForAll Random random) {
        String digits = String.format("%014d", number);
        StringBuilder formatted = new StringBuilder();
        for (char c : digits.toCharArray()) {
            formatted.append(c);
            if (random.nextInt(3) == 0) {
                formatted.append(".-/".charAt(random.nextInt(3)));
            }
        }

        assertThat(FieldNormalizer.CREDITOR_KEY.normalize("creditor", " " + formatted + "\u00a0"))
                .isEqualTo(digits);
    }

    @Property(tries = 2000)
    void codePointOrderIsPythonsOrder(@ForAll("texts") String a, @ForAll("texts") String b) {
        int expected = Integer.signum(
                Arrays.compare(a.codePoints().toArray(), b.codePoints().toArray()));

        assertThat(Integer.signum(DerivedText.CODE_POINT_ORDER.compare(a, b))).isEqualTo(expected);
        assertThat(DerivedText.CODE_POINT_ORDER.compare(a, b) == 0).isEqualTo(a.equals(b));
    }

    @Property(tries = 300)
    void downstreamKeysAreDeterministicAndPrefixed(
            @ForAll("tenants") Scope scope,
            @ForAll("texts") String step,
            @ForAll @IntRange(min = 16, max = 64) int length) {
        String usable = "s"
                + fromCodePoints(step.codePoints()
                        .filter(c -> !Character.isISOControl(c))
                        .boxed()
                        .toList());
        IdempotencyKey key = IdempotencyKey.random();

        String full = DownstreamKeys.of(DownstreamKeysTest.SECRET, 64).deriveHex(scope, key, usable);

        assertThat(DownstreamKeys.of(DownstreamKeysTest.SECRET, length).deriveHex(scope, key, usable))
                .hasSize(length)
                .isEqualTo(full.substring(0, length));
        assertThat(DownstreamKeys.of(DownstreamKeysTest.SECRET, 64).deriveHex(scope, key, usable))
                .isEqualTo(full);
    }
}
