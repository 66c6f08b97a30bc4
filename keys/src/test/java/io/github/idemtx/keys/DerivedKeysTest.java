package io.github.idemtx.keys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DerivedKeysTest {

    static final byte[] SECRET =
            HexFormat.of().parseHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    static final Scope TENANT = Scope.of("tenant-42");
    static final Instant CREATED = Instant.parse("2026-05-09T12:34:56Z");
    /** The key of {@link #pix()} and {@link #payload()}, from vectors.json ("basic"). */
    static final String BASIC_KEY = "4cda1e9ed094b3100842635934e52895b040cbbfc94d41ef587268220f2fe343";

    static DerivedKeys.Builder pixBuilder() {
        return DerivedKeys.builder()
                .secret(SECRET)
                .action("pix.payment")
                .field("amount", FieldNormalizer.AMOUNT)
                .field("currency", FieldNormalizer.CURRENCY)
                .field("creditor", FieldNormalizer.CREDITOR_KEY)
                .field("description", FieldNormalizer.FREE_TEXT)
                .ignore("client_note", "trace_id");
    }

    static DerivedKeys pix() {
        return pixBuilder().build();
    }

    static Map<String, Object> payload() {
        Map<String, Object> payload = new LinkedHashMap<>();
        payload.put("amount", "10");
        payload.put("currency", "brl");
        payload.put("creditor", "123.456.789-09");
        payload.put("description", "Aluguel de maio");
        return payload;
    }

    static Map<String, Object> payloadWith(String field, Object value) {
        Map<String, Object> payload = payload();
        payload.put(field, value);
        return payload;
    }

    // --- the key

    @Test
    void derivesTheVectorKey() {
        assertThat(pix().deriveHex(TENANT, payload(), CREATED)).isEqualTo(BASIC_KEY);
        assertThat(pix().derive(TENANT, payload(), CREATED)).isEqualTo(IdempotencyKey.of(BASIC_KEY));
    }

    @Test
    void keyIsLowercaseHexOfTheConfiguredLength() {
        for (int length : new int[] {16, 17, 40, 63, 64}) {
            String key = pixBuilder().keyLength(length).build().deriveHex(TENANT, payload(), CREATED);

            assertThat(key).hasSize(length).matches("[0-9a-f]+");
            assertThat(BASIC_KEY).startsWith(key);
        }
    }

    @Test
    void equivalentSpellingsGiveTheSameKey() {
        Map<String, Object> respelled = new TreeMap<>();
        respelled.put("description", "\u00a0ALUGUEL DE MAIO\u3000");
        respelled.put("creditor", "12345678909");
        respelled.put("currency", " BRL ");
        respelled.put("amount", new BigDecimal("10.004"));

        assertThat(pix().deriveHex(TENANT, respelled, CREATED)).isEqualTo(BASIC_KEY);
    }

    @Test
    void everyPartOfTheIntentChangesTheKey() {
        DerivedKeys keys = pix();
        List<String> variants = List.of(
                keys.deriveHex(TENANT, payload(), CREATED),
                keys.deriveHex(Scope.of("tenant-43"), payload(), CREATED),
                pixBuilder().action("pix.refund").build().deriveHex(TENANT, payload(), CREATED),
                keys.deriveHex(TENANT, payloadWith("amount", "10.01"), CREATED),
                keys.deriveHex(TENANT, payloadWith("currency", "USD"), CREATED),
                keys.deriveHex(TENANT, payloadWith("creditor", "12345678908"), CREATED),
                keys.deriveHex(TENANT, payloadWith("description", "Aluguel de junho"), CREATED),
                keys.deriveHex(TENANT, payload(), CREATED.plus(Duration.ofMinutes(15))),
                pixBuilder().secret(new byte[32]).build().deriveHex(TENANT, payload(), CREATED),
                pixBuilder().bucketSize(Duration.ofSeconds(60)).build().deriveHex(TENANT, payload(), CREATED));

        assertThat(variants).doesNotHaveDuplicates();
    }

    @Test
    void aFieldValueCannotBeShiftedIntoAnotherField() {
        DerivedKeys keys = DerivedKeys.builder()
                .secret(SECRET)
                .action("a")
                .field("x", FieldNormalizer.FREE_TEXT)
                .field("y", FieldNormalizer.FREE_TEXT)
                .build();

        String ab = keys.deriveHex(TENANT, Map.of("x", "a", "y", "b"), CREATED);
        String ba = keys.deriveHex(TENANT, Map.of("x", "b", "y", "a"), CREATED);
        String joined = keys.deriveHex(TENANT, Map.of("x", "a\",\"y\":\"b", "y", ""), CREATED);

        assertThat(List.of(ab, ba, joined)).doesNotHaveDuplicates();
    }

    @Test
    void ignoredFieldsNeverMatterAndMayBeAbsent() {
        Map<String, Object> withIgnored = payload();
        withIgnored.put("client_note", "anything at all");
        withIgnored.put("trace_id", 42);
        Map<String, Object> withNullIgnored = payload();
        withNullIgnored.put("trace_id", null);

        assertThat(pix().deriveHex(TENANT, withIgnored, CREATED)).isEqualTo(BASIC_KEY);
        assertThat(pix().deriveHex(TENANT, withNullIgnored, CREATED)).isEqualTo(BASIC_KEY);
    }

    @Test
    void thePayloadIsNotModifiedAndImmutableMapsWork() {
        Map<String, Object> payload = payload();
        Map<String, Object> copy = new LinkedHashMap<>(payload);

        pix().derive(TENANT, payload, CREATED);

        assertThat(payload).isEqualTo(copy);
        assertThat(pix().deriveHex(TENANT, Map.copyOf(payload), CREATED)).isEqualTo(BASIC_KEY);
    }

    // --- time buckets

    @Test
    void keysStayTheSameWithinABucketAndChangeAtItsEnd() {
        DerivedKeys keys = pix();
        Instant start = Instant.parse("2026-05-09T12:30:00Z");

        assertThat(keys.deriveHex(TENANT, payload(), start)).isEqualTo(BASIC_KEY);
        assertThat(keys.deriveHex(TENANT, payload(), start.plusSeconds(900).minusNanos(1)))
                .isEqualTo(BASIC_KEY);
        assertThat(keys.deriveHex(TENANT, payload(), start.plusSeconds(900))).isNotEqualTo(BASIC_KEY);
        assertThat(keys.deriveHex(TENANT, payload(), start.minusNanos(1))).isNotEqualTo(BASIC_KEY);
    }

    @Test
    void bucketsAreFloorDivisionsOfTheEpochSecond() {
        DerivedKeys keys = pix();

        assertThat(keys.bucketOf(Instant.EPOCH)).isZero();
        assertThat(keys.bucketOf(Instant.ofEpochSecond(899, 999_999_999))).isZero();
        assertThat(keys.bucketOf(Instant.ofEpochSecond(900))).isEqualTo(1);
        assertThat(keys.bucketOf(Instant.ofEpochSecond(-1))).isEqualTo(-1);
        assertThat(keys.bucketOf(Instant.ofEpochSecond(0, -1))).isEqualTo(-1);
        assertThat(keys.bucketOf(Instant.ofEpochSecond(-900))).isEqualTo(-1);
        assertThat(keys.bucketOf(Instant.ofEpochSecond(-901))).isEqualTo(-2);
        assertThat(keys.bucketOf(Instant.MAX)).isEqualTo(Math.floorDiv(Instant.MAX.getEpochSecond(), 900));
        assertThat(keys.bucketOf(Instant.MIN)).isEqualTo(Math.floorDiv(Instant.MIN.getEpochSecond(), 900));
        assertThat(pixBuilder().bucketSize(Duration.ofSeconds(1)).build().bucketOf(CREATED))
                .isEqualTo(CREATED.getEpochSecond());
    }

    @Test
    void extremeInstantsStillDerive() {
        assertThat(pix().deriveHex(TENANT, payload(), Instant.MIN)).hasSize(64);
        assertThat(pix().deriveHex(TENANT, payload(), Instant.MAX)).hasSize(64);
    }

    @Test
    void nothingReadsTheClock() throws IOException, URISyntaxException {
        // target/classes -> the module's src/main/java
        Path classes = Path.of(DerivedKeys.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        Path main = classes.getParent().getParent().resolve("src/main/java/io/github/idemtx/keys");
        List<Path> sources = new ArrayList<>(List.of(
                main.resolve("DerivedKeys.java"),
                main.resolve("DownstreamKeys.java"),
                main.resolve("FieldNormalizer.java")));
        try (Stream<Path> internal = Files.list(main.resolve("internal"))) {
            internal.filter(p -> p.getFileName().toString().matches("(Derived|CaseFold).*\\.java"))
                    .forEach(sources::add);
        }

        assertThat(sources).hasSizeGreaterThanOrEqualTo(8);
        for (Path source : sources) {
            assertThat(Files.readString(source))
                    .as(source.toString())
                    .doesNotContain("now(", "currentTimeMillis", "nanoTime", "Clock");
        }
    }

    // --- payload errors

    @Test
    void unclassifiedFieldsAreAllNamedInCodePointOrder() {
        Map<String, Object> payload = payload();
        payload.put("zeta", "v");
        payload.put("\uD83D\uDCB0", "v");
        payload.put("\uE000", "v");
        payload.put("alpha", "v");

        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payload, CREATED))
                .withMessage(
                        "payload of action 'pix.payment' has unclassified fields [alpha, zeta, \uE000, \uD83D\uDCB0]"
                                + " (name each with field(...) or ignore(...))");
    }

    @Test
    void missingNormalisedFieldsAreAllNamed() {
        Map<String, Object> payload = payload();
        payload.remove("description");
        payload.remove("amount");

        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payload, CREATED))
                .withMessage("payload of action 'pix.payment' lacks normalised fields [amount, description]");
    }

    @Test
    void unclassifiedAndMissingFieldsAreReportedTogether() {
        Map<String, Object> payload = Map.of("amount", "1", "note", "x");

        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payload, CREATED))
                .withMessage(
                        "payload of action 'pix.payment' has unclassified fields [note] (name each with field(...) or"
                                + " ignore(...)) and lacks normalised fields [creditor, currency, description]");
    }

    @Test
    void aNullValueOfANormalisedFieldIsRefused() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payloadWith("currency", null), CREATED))
                .withMessage("payload field 'currency' must not be null");
    }

    @Test
    void aNullFieldNameIsRefused() {
        Map<String, Object> payload = new HashMap<>(payload());
        payload.put(null, "x");

        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payload, CREATED))
                .withMessageContaining("null field name");
    }

    @Test
    @SuppressWarnings({"unchecked", "rawtypes"})
    void aFieldNameThatIsNoStringIsRefused() {
        Map raw = new HashMap<>(payload());
        raw.put(7, "x");
        Map<String, Object> payload = raw;

        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payload, CREATED))
                .withMessageContaining("must be strings, found a java.lang.Integer");
    }

    @Test
    void nullArgumentsAreRefusedByName() {
        DerivedKeys keys = pix();

        assertThatNullPointerException()
                .isThrownBy(() -> keys.derive(null, payload(), CREATED))
                .withMessageContaining("tenant");
        assertThatNullPointerException()
                .isThrownBy(() -> keys.derive(TENANT, null, CREATED))
                .withMessageContaining("payload");
        assertThatNullPointerException()
                .isThrownBy(() -> keys.derive(TENANT, payload(), null))
                .withMessageContaining("createdAt");
        assertThatNullPointerException()
                .isThrownBy(() -> keys.deriveHex(null, payload(), CREATED))
                .withMessageContaining("tenant");
    }

    @Test
    void noMessageHoldsAPayloadValue() {
        String secretValue = "SENSITIVE";
        List<Map<String, Object>> bad = new ArrayList<>();
        bad.add(payloadWith("amount", secretValue + "1e3"));
        bad.add(payloadWith("amount", "1" + secretValue));
        bad.add(payloadWith("amount", 1.5d));
        bad.add(payloadWith("currency", new StringBuilder(secretValue)));
        bad.add(payloadWith("creditor", 12345678909L));
        bad.add(payloadWith("description", secretValue + "\uD800"));
        bad.add(payloadWith("creditor", "\uDC00" + secretValue));
        bad.add(payloadWith("currency", secretValue + "\uD83D"));
        Map<String, Object> unclassified = payloadWith("other", secretValue);
        unclassified.remove("amount");
        bad.add(unclassified);

        for (Map<String, Object> payload : bad) {
            assertThatThrownBy(() -> pix().derive(TENANT, payload, CREATED))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageNotContaining(secretValue)
                    .hasMessageNotContaining("12345678909")
                    .hasMessageNotContaining("1.5");
        }
    }

    @Test
    void valueErrorsNameTheField() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payloadWith("amount", "ten"), CREATED))
                .withMessageStartingWith("field 'amount': AMOUNT must be a decimal number in plain notation");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payloadWith("description", "\uD800"), CREATED))
                .withMessage(
                        "field 'description': FREE_TEXT value holds an unpaired surrogate, which cannot be written as UTF-8");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> pix().derive(TENANT, payloadWith("currency", 986), CREATED))
                .withMessage("field 'currency': CURRENCY accepts a String, not java.lang.Integer");
    }

    // --- AMOUNT beyond the vectors

    @Test
    void amountRefusesBinaryFloatingPoint() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> FieldNormalizer.AMOUNT.normalize("amount", 10.005d))
                .withMessageContaining("binary floating-point Double")
                .withMessageContaining("pass a BigDecimal or a String");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> FieldNormalizer.AMOUNT.normalize("amount", 10f))
                .withMessageContaining("binary floating-point Float");
    }

    @Test
    void amountRefusesOtherNumberTypes() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> FieldNormalizer.AMOUNT.normalize("amount", new AtomicLong(10)))
                .withMessage(
                        "field 'amount': AMOUNT accepts a String, BigDecimal, BigInteger, Long, Integer, Short or Byte,"
                                + " not java.util.concurrent.atomic.AtomicLong");
    }

    @Test
    void amountAcceptsEveryIntegerType() {
        assertThat(FieldNormalizer.AMOUNT.normalize("a", (byte) -7)).isEqualTo("-7.00");
        assertThat(FieldNormalizer.AMOUNT.normalize("a", (short) 300)).isEqualTo("300.00");
        assertThat(FieldNormalizer.AMOUNT.normalize("a", 10)).isEqualTo("10.00");
        assertThat(FieldNormalizer.AMOUNT.normalize("a", Long.MIN_VALUE)).isEqualTo(Long.MIN_VALUE + ".00");
        assertThat(FieldNormalizer.AMOUNT.normalize("a", BigInteger.TEN.pow(99)))
                .isEqualTo("1" + "0".repeat(99) + ".00");
    }

    @Test
    void amountAllowsAtMostOneHundredIntegerDigits() {
        assertThat(FieldNormalizer.AMOUNT.normalize("a", new BigDecimal("1E+99")))
                .isEqualTo("1" + "0".repeat(99) + ".00");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> FieldNormalizer.AMOUNT.normalize("a", new BigDecimal("1E+100")))
                .withMessage("field 'a': AMOUNT must have at most 100 digits before the decimal point");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> FieldNormalizer.AMOUNT.normalize(
                        "a", new BigDecimal("-9".repeat(1) + "9".repeat(99) + ".995")));
    }

    @Test
    @Timeout(5)
    void amountNeverComputesAHugePowerOfTen() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> FieldNormalizer.AMOUNT.normalize("a", new BigDecimal("1E+999999999")));
        assertThat(FieldNormalizer.AMOUNT.normalize("a", new BigDecimal("1E-999999999")))
                .isEqualTo("0.00");
        assertThat(FieldNormalizer.AMOUNT.normalize("a", new BigDecimal("-1E-999999999")))
                .isEqualTo("0.00");
        assertThat(FieldNormalizer.AMOUNT.normalize("a", new BigDecimal(BigInteger.ONE, Integer.MAX_VALUE)))
                .isEqualTo("0.00");
        assertThatIllegalArgumentException()
                .isThrownBy(
                        () -> FieldNormalizer.AMOUNT.normalize("a", new BigDecimal(BigInteger.ONE, Integer.MIN_VALUE)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"1e3", "1E+3", "1.0e-2", "Infinity", "NaN", "0x1A", "1,50", "١٠"})
    void amountRefusesWhatBigDecimalOrOtherParsersMightAccept(String amount) {
        assertThatIllegalArgumentException().isThrownBy(() -> FieldNormalizer.AMOUNT.normalize("a", amount));
    }

    // --- the builder

    @Test
    void secretMustBeAtLeast32Bytes() {
        assertThatNullPointerException()
                .isThrownBy(() -> DerivedKeys.builder().secret(null))
                .withMessage("secret must not be null");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().secret(new byte[31]))
                .withMessage("secret must be at least 32 bytes (256 bits) of random data, was 31 bytes");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().secret(new byte[0]));
        assertThat(pixBuilder().secret(new byte[32]).build()).isNotNull();
        assertThat(pixBuilder().secret(new byte[1000]).build()).isNotNull();
    }

    @Test
    void theSecretIsCopied() {
        byte[] secret = SECRET.clone();
        DerivedKeys.Builder builder = pixBuilder().secret(secret);
        secret[0] ^= 1;
        DerivedKeys keys = builder.build();
        secret[1] ^= 1;

        assertThat(keys.deriveHex(TENANT, payload(), CREATED)).isEqualTo(BASIC_KEY);
    }

    @Test
    void actionIsValidated() {
        assertThatNullPointerException()
                .isThrownBy(() -> DerivedKeys.builder().action(null))
                .withMessage("action must not be null");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().action(" \t"))
                .withMessage("action must not be blank");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().action("a\nb"))
                .withMessage("action must not contain control characters");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().action("a\uDC00"))
                .withMessage("action must not contain an unpaired surrogate");
    }

    @Test
    void fieldNamesAreValidated() {
        assertThatNullPointerException()
                .isThrownBy(() -> DerivedKeys.builder().field(null, FieldNormalizer.AMOUNT))
                .withMessage("field name must not be null");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().field(" ", FieldNormalizer.AMOUNT))
                .withMessage("field name must not be blank");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().field("a\uD800", FieldNormalizer.AMOUNT))
                .withMessage("field name must not contain an unpaired surrogate");
        assertThatNullPointerException()
                .isThrownBy(() -> DerivedKeys.builder().field("a", null))
                .withMessage("normalizer of field 'a' must not be null");
        assertThatNullPointerException()
                .isThrownBy(() -> DerivedKeys.builder().ignore((String[]) null))
                .withMessage("names must not be null");
        assertThatNullPointerException()
                .isThrownBy(() -> DerivedKeys.builder().ignore("a", null))
                .withMessage("field name must not be null");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().ignore(""))
                .withMessage("field name must not be blank");
    }

    @Test
    void aFieldIsClassifiedOnlyOnce() {
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        DerivedKeys.builder().field("a", FieldNormalizer.AMOUNT).field("a", FieldNormalizer.AMOUNT))
                .withMessage("field 'a' is already normalised as AMOUNT");
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        DerivedKeys.builder().field("a", FieldNormalizer.AMOUNT).field("a", FieldNormalizer.CURRENCY))
                .withMessage("field 'a' is already normalised as AMOUNT");
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        DerivedKeys.builder().field("a", FieldNormalizer.AMOUNT).ignore("a"))
                .withMessage("field 'a' is already normalised as AMOUNT");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().ignore("a").field("a", FieldNormalizer.AMOUNT))
                .withMessage("field 'a' is already ignored");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().ignore("a").ignore("a"))
                .withMessage("field 'a' is already ignored");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().ignore("a", "b", "a"))
                .withMessage("field 'a' is named twice");
    }

    @Test
    void aRefusedIgnoreAddsNothing() {
        DerivedKeys.Builder builder =
                DerivedKeys.builder().secret(SECRET).action("a").field("x", FieldNormalizer.AMOUNT);

        assertThatIllegalArgumentException().isThrownBy(() -> builder.ignore("y", "x"));

        assertThat(builder.build().ignoredFields()).isEmpty();
        assertThat(builder.field("y", FieldNormalizer.AMOUNT).build().fields()).containsOnlyKeys("x", "y");
    }

    @Test
    void bucketSizeIsValidated() {
        assertThat(pix().bucketSize()).isEqualTo(Duration.ofSeconds(900)).isEqualTo(DerivedKeys.DEFAULT_BUCKET_SIZE);
        assertThat(pixBuilder().bucketSize(Duration.ofSeconds(1)).build().bucketSize())
                .isEqualTo(Duration.ofSeconds(1));
        assertThat(pixBuilder().bucketSize(Duration.ofDays(365)).build().bucketSize())
                .isEqualTo(Duration.ofDays(365));

        assertThatNullPointerException()
                .isThrownBy(() -> DerivedKeys.builder().bucketSize(null))
                .withMessage("bucketSize must not be null");
        for (Duration bad : List.of(
                Duration.ZERO,
                Duration.ofMillis(999),
                Duration.ofSeconds(-900),
                Duration.ofDays(365).plusSeconds(1))) {
            assertThatIllegalArgumentException()
                    .isThrownBy(() -> DerivedKeys.builder().bucketSize(bad))
                    .withMessage("bucketSize must be between PT1S and PT8760H, was " + bad);
        }
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DerivedKeys.builder().bucketSize(Duration.ofMillis(1500)))
                .withMessage("bucketSize must be whole seconds, was PT1.5S");
    }

    @Test
    void keyLengthIsValidated() {
        assertThat(pix().keyLength()).isEqualTo(64);
        assertThat(pixBuilder().keyLength(16).build().keyLength()).isEqualTo(16);
        for (int bad : new int[] {Integer.MIN_VALUE, 0, 15, 65, 128}) {
            assertThatIllegalArgumentException()
                    .isThrownBy(() -> DerivedKeys.builder().keyLength(bad))
                    .withMessage("keyLength must be between 16 and 64 hexadecimal digits, was " + bad);
        }
    }

    @Test
    void buildNeedsASecretAnActionAndAField() {
        assertThatIllegalStateException()
                .isThrownBy(() -> DerivedKeys.builder()
                        .action("a")
                        .field("x", FieldNormalizer.AMOUNT)
                        .build())
                .withMessage("secret must be set");
        assertThatIllegalStateException()
                .isThrownBy(() -> DerivedKeys.builder()
                        .secret(SECRET)
                        .field("x", FieldNormalizer.AMOUNT)
                        .build())
                .withMessage("action must be set");
        assertThatIllegalStateException()
                .isThrownBy(() -> DerivedKeys.builder()
                        .secret(SECRET)
                        .action("a")
                        .ignore("x")
                        .build())
                .withMessage("at least one field must be normalised");
    }

    @Test
    void theBuilderCanBeReusedWithoutChangingWhatItBuilt() {
        DerivedKeys.Builder builder = pixBuilder();
        DerivedKeys first = builder.build();
        builder.field("extra", FieldNormalizer.AMOUNT)
                .ignore("more")
                .keyLength(20)
                .secret(new byte[32])
                .action("other");

        assertThat(first.fields()).containsOnlyKeys("amount", "creditor", "currency", "description");
        assertThat(first.ignoredFields()).containsExactly("client_note", "trace_id");
        assertThat(first.action()).isEqualTo("pix.payment");
        assertThat(first.keyLength()).isEqualTo(64);
        assertThat(first.deriveHex(TENANT, payload(), CREATED)).isEqualTo(BASIC_KEY);
        assertThat(builder.build().fields()).containsKey("extra");
    }

    @Test
    void settingsAreExposedInCodePointOrderAndUnmodifiable() {
        DerivedKeys keys = DerivedKeys.builder()
                .secret(SECRET)
                .action("a")
                .field("\uD83D\uDCB0", FieldNormalizer.AMOUNT)
                .field("\uE000", FieldNormalizer.CURRENCY)
                .field("b", FieldNormalizer.FREE_TEXT)
                .ignore("\uD83D\uDE00", "\uFFFD", "a")
                .build();

        assertThat(keys.fields().keySet()).containsExactly("b", "\uE000", "\uD83D\uDCB0");
        assertThat(keys.fields()).containsEntry("b", FieldNormalizer.FREE_TEXT);
        assertThat(keys.ignoredFields()).containsExactly("a", "\uFFFD", "\uD83D\uDE00");
        assertThatThrownBy(() -> keys.fields().put("c", FieldNormalizer.AMOUNT))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> keys.ignoredFields().add("c")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void toStringShowsTheSettingsButNeverTheSecret() {
        byte[] secret = "a very secret secret of 32 bytes+".getBytes(StandardCharsets.US_ASCII);
        DerivedKeys keys = pixBuilder().secret(secret).keyLength(40).build();

        assertThat(keys.toString())
                .isEqualTo(
                        "DerivedKeys[action=pix.payment, fields={amount=AMOUNT, creditor=CREDITOR_KEY, currency=CURRENCY,"
                                + " description=FREE_TEXT}, ignored=[client_note, trace_id], bucketSize=PT15M, keyLength=40,"
                                + " secret=(hidden)]")
                .doesNotContain(
                        "very secret",
                        HexFormat.of().formatHex(secret),
                        Base64.getEncoder().encodeToString(secret),
                        Arrays.toString(secret));
        assertThat(pixBuilder().secret(secret).toString())
                .doesNotContain("very secret", HexFormat.of().formatHex(secret), Arrays.toString(secret));
    }

    // --- thread-safety

    @Test
    void oneInstanceDerivesConcurrently() throws Exception {
        DerivedKeys keys = pix();
        Callable<List<String>> task = () -> {
            List<String> derived = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                derived.add(keys.deriveHex(TENANT, payload(), CREATED));
                derived.add(keys.deriveHex(TENANT, payloadWith("amount", String.valueOf(i)), CREATED));
            }
            return derived;
        };
        List<String> expected = task.call();

        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<List<String>>> results = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                results.add(pool.submit(task));
            }
            for (Future<List<String>> result : results) {
                assertThat(result.get()).isEqualTo(expected);
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
