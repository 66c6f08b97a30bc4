package io.github.idemtx.keys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DownstreamKeysTest {

    static final byte[] SECRET =
            HexFormat.of().parseHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    static final Scope SCOPE = Scope.of("tenant-42");
    static final IdempotencyKey KEY = IdempotencyKey.of("3f1e0c2a-6a4b-4a43-9f3e-6d1f2c0b9a11");
    /** From vectors.json ("basic"). */
    static final String CHARGE_CARD = "bc6213fbbfff3a5d92b2a558514d71ac";

    static final String CHARGE_CARD_FULL = "bc6213fbbfff3a5d92b2a558514d71ac1121b549757e050712adf4c44a917f96";

    @Test
    void derivesThePythonKeyWith32DigitsByDefault() {
        DownstreamKeys keys = DownstreamKeys.of(SECRET);

        assertThat(keys.length()).isEqualTo(DownstreamKeys.DEFAULT_LENGTH).isEqualTo(32);
        assertThat(keys.deriveHex(SCOPE, KEY, "charge-card")).isEqualTo(CHARGE_CARD);
        assertThat(keys.derive(SCOPE, KEY, "charge-card")).isEqualTo(IdempotencyKey.of(CHARGE_CARD));
    }

    @Test
    void derivesFromAScopeOrKeyOfTheMaximumLengthAndAStepOfAnyLength() {
        // expected values from Python: hmac.new(secret, json.dumps([scope, key, step], ensure_ascii=False,
        // separators=(",", ":")).encode(), hashlib.sha256).hexdigest()
        DownstreamKeys keys = DownstreamKeys.of(SECRET, DownstreamKeys.MAX_LENGTH);

        assertThat(keys.deriveHex(Scope.of("s"), IdempotencyKey.of("k".repeat(IdempotencyKey.MAX_LENGTH)), "x"))
                .isEqualTo("0589e94b4775fc6386ee44a6704a07ede50bb5985c37001902c89dd7157bf2f7");
        assertThat(keys.deriveHex(Scope.of("s".repeat(Scope.MAX_LENGTH)), IdempotencyKey.of("k"), "x"))
                .isEqualTo("b6aa6a5f5c5f099005d6246e43a1a8ef404008e7482457b82479ea1841cd0721");
        // a step's name has no length limit
        assertThat(keys.deriveHex(Scope.of("s"), IdempotencyKey.of("k"), "x".repeat(1000)))
                .isEqualTo("ca95731e641233485d32fa3a355d422304a4222382a7f581120dca89ec498b02");
    }

    @Test
    void theSameUnitAndStepGiveTheSameKeyOnEveryAttempt() {
        assertThat(DownstreamKeys.of(SECRET).derive(SCOPE, KEY, "charge-card"))
                .isEqualTo(DownstreamKeys.of(SECRET.clone())
                        .derive(Scope.of("tenant-42"), IdempotencyKey.of(KEY.value()), "charge-card"));
    }

    @Test
    void scopeKeyStepAndSecretEachChangeTheKey() {
        DownstreamKeys keys = DownstreamKeys.of(SECRET);
        byte[] otherSecret = SECRET.clone();
        otherSecret[31] ^= 1;

        assertThat(List.of(
                        keys.deriveHex(SCOPE, KEY, "charge-card"),
                        keys.deriveHex(SCOPE, KEY, "send-receipt"),
                        keys.deriveHex(SCOPE, KEY, "Charge-card"),
                        keys.deriveHex(Scope.of("tenant-43"), KEY, "charge-card"),
                        keys.deriveHex(SCOPE, IdempotencyKey.of("other"), "charge-card"),
                        DownstreamKeys.of(otherSecret).deriveHex(SCOPE, KEY, "charge-card")))
                .doesNotHaveDuplicates();
    }

    @Test
    void partsCannotBeShiftedIntoEachOther() {
        DownstreamKeys keys = DownstreamKeys.of(SECRET);

        assertThat(keys.deriveHex(Scope.of("a"), IdempotencyKey.of("b,c"), "d"))
                .isNotEqualTo(keys.deriveHex(Scope.of("a,b"), IdempotencyKey.of("c"), "d"))
                .isNotEqualTo(keys.deriveHex(Scope.of("a"), IdempotencyKey.of("b\",\"c"), "d"));
    }

    @Test
    void lengthIsFrom16To64AndGivesAPrefix() {
        for (int length = DownstreamKeys.MIN_LENGTH; length <= DownstreamKeys.MAX_LENGTH; length++) {
            String key = DownstreamKeys.of(SECRET, length).deriveHex(SCOPE, KEY, "charge-card");

            assertThat(key).hasSize(length).matches("[0-9a-f]+");
            assertThat(CHARGE_CARD_FULL).startsWith(key);
        }
        for (int bad : new int[] {0, 15, 65, -1}) {
            assertThatIllegalArgumentException()
                    .isThrownBy(() -> DownstreamKeys.of(SECRET, bad))
                    .withMessage("length must be between 16 and 64 hexadecimal digits, was " + bad);
        }
    }

    @Test
    void secretIsValidatedAndCopied() {
        assertThatNullPointerException()
                .isThrownBy(() -> DownstreamKeys.of(null))
                .withMessage("secret must not be null");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DownstreamKeys.of(new byte[31]))
                .withMessage("secret must be at least 32 bytes (256 bits) of random data, was 31 bytes");

        byte[] secret = SECRET.clone();
        DownstreamKeys keys = DownstreamKeys.of(secret);
        Arrays.fill(secret, (byte) 0);

        assertThat(keys.deriveHex(SCOPE, KEY, "charge-card")).isEqualTo(CHARGE_CARD);
    }

    @Test
    void nullArgumentsAreRefusedByName() {
        DownstreamKeys keys = DownstreamKeys.of(SECRET);

        assertThatNullPointerException()
                .isThrownBy(() -> keys.derive(null, KEY, "s"))
                .withMessage("scope must not be null");
        assertThatNullPointerException()
                .isThrownBy(() -> keys.derive(SCOPE, null, "s"))
                .withMessage("key must not be null");
        assertThatNullPointerException()
                .isThrownBy(() -> keys.derive(SCOPE, KEY, null))
                .withMessage("step must not be null");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "\t\n", "\u2003"})
    void stepMustNotBeBlank(String step) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> DownstreamKeys.of(SECRET).derive(SCOPE, KEY, step))
                .withMessage("step must not be blank");
    }

    @Test
    void stepMustBeWellFormedWithoutControls() {
        DownstreamKeys keys = DownstreamKeys.of(SECRET);

        assertThatIllegalArgumentException()
                .isThrownBy(() -> keys.derive(SCOPE, KEY, "charge\ncard"))
                .withMessage("step must not contain control characters");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> keys.derive(SCOPE, KEY, "charge\uD800"))
                .withMessage("step must not contain an unpaired surrogate");
        assertThat(keys.deriveHex(SCOPE, KEY, "cobran\u00e7a \uD83D\uDCB3")).hasSize(32);
    }

    @Test
    void toStringNeverShowsTheSecret() {
        byte[] secret = "a very secret secret of 32 bytes+".getBytes(StandardCharsets.US_ASCII);
        DownstreamKeys keys = DownstreamKeys.of(secret, 40);

        assertThat(keys.toString())
                .isEqualTo("DownstreamKeys[length=40, secret=(hidden)]")
                .doesNotContain(HexFormat.of().formatHex(secret), Arrays.toString(secret));
    }
}
