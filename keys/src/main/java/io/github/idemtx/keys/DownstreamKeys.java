package io.github.idemtx.keys;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.keys.internal.DerivedHmac;
import io.github.idemtx.keys.internal.DerivedMaterial;
import io.github.idemtx.keys.internal.DerivedText;
import java.util.Objects;
import javax.crypto.spec.SecretKeySpec;

/**
 * Idempotency keys for the calls a unit of work makes to other services, derived from the unit's
 * own key: each step of the work (such as {@code "charge-card"}) gets a short, opaque key that is
 * the same on every attempt of the unit. A retry of the whole unit that reaches the provider again
 * sends the same downstream key, so the provider deduplicates it too; the provider learns neither
 * the unit's key nor the tenant.
 *
 * <p>The key is the first {@link #length()} lowercase hexadecimal digits of HMAC-SHA256(secret,
 * material), where the material is the UTF-8 bytes of the compact JSON array
 * {@code [scope, key, step]}; in Python:
 * <pre>{@code
 * material = json.dumps([scope, key, step], separators=(",", ":"), ensure_ascii=False).encode("utf-8")
 * hmac.new(secret, material, hashlib.sha256).hexdigest()[:length]
 * }</pre>
 * That array can never equal the material of a {@link DerivedKeys} key (a four-element array), so
 * the two may share a secret, though separate secrets are better practice.
 *
 * <p>Immutable and thread-safe. The secret is copied, never returned, and shown by no
 * {@code toString} or message.
 */
public final class DownstreamKeys {

    /** Default {@link #length()}: 32 hexadecimal digits (128 bits). */
    public static final int DEFAULT_LENGTH = 32;
    /** Shortest {@link #length()}: 16 hexadecimal digits (64 bits). */
    public static final int MIN_LENGTH = 16;
    /** Longest {@link #length()}: 64 hexadecimal digits, the whole HMAC-SHA256. */
    public static final int MAX_LENGTH = 64;
    /** The shortest secret accepted: 32 bytes. */
    public static final int MIN_SECRET_BYTES = DerivedHmac.MIN_SECRET_BYTES;

    private final SecretKeySpec secret;
    private final int length;

    private DownstreamKeys(SecretKeySpec secret, int length) {
        this.secret = secret;
        this.length = length;
    }

    /**
     * Downstream keys of {@value #DEFAULT_LENGTH} hexadecimal digits.
     *
     * @param secret at least {@value #MIN_SECRET_BYTES} random bytes; copied
     * @return the keys; immutable and thread-safe
     * @throws NullPointerException if {@code secret} is null
     * @throws IllegalArgumentException if it is shorter than {@value #MIN_SECRET_BYTES} bytes
     */
    public static DownstreamKeys of(byte[] secret) {
        return of(secret, DEFAULT_LENGTH);
    }

    /**
     * Downstream keys of {@code length} hexadecimal digits.
     *
     * @param secret at least {@value #MIN_SECRET_BYTES} random bytes; copied
     * @param length from {@value #MIN_LENGTH} to {@value #MAX_LENGTH}
     * @return the keys; immutable and thread-safe
     * @throws NullPointerException if {@code secret} is null
     * @throws IllegalArgumentException if the secret is shorter than {@value #MIN_SECRET_BYTES}
     *     bytes or the length is out of range
     */
    public static DownstreamKeys of(byte[] secret, int length) {
        SecretKeySpec key = DerivedHmac.key(secret);
        if (length < MIN_LENGTH || length > MAX_LENGTH) {
            throw new IllegalArgumentException("length must be between " + MIN_LENGTH + " and " + MAX_LENGTH
                    + " hexadecimal digits, was " + length);
        }
        return new DownstreamKeys(key, length);
    }

    /**
     * The downstream key of {@code step} in the unit of work {@code key} of {@code scope}:
     * {@link #deriveHex} as an {@link IdempotencyKey}.
     *
     * @param scope the scope of the unit of work's key
     * @param key the unit of work's own idempotency key
     * @param step names the outgoing call within the unit; see {@link #deriveHex}
     * @return the downstream key
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code step} is not acceptable, as {@link #deriveHex} says
     */
    public IdempotencyKey derive(Scope scope, IdempotencyKey key, String step) {
        return new IdempotencyKey(deriveHex(scope, key, step));
    }

    /**
     * The downstream key of {@code step} in the unit of work {@code key} of {@code scope}: the first
     * {@link #length()} lowercase hexadecimal digits of HMAC-SHA256 over {@code [scope, key, step]}.
     *
     * @param scope the scope of the unit of work's key
     * @param key the unit of work's own idempotency key
     * @param step names the outgoing call within the unit, such as {@code "charge-card"}; steps of
     *     one unit must differ, and a step's name must not change between attempts
     * @return {@link #length()} lowercase hexadecimal digits
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code step} is blank or holds a control character or an
     *     unpaired surrogate
     */
    public String deriveHex(Scope scope, IdempotencyKey key, String step) {
        return DerivedHmac.hex(secret, material(scope, key, step), length);
    }

    /** The bytes that are MACed: {@code [scope, key, step]} as compact JSON in UTF-8. */
    byte[] material(Scope scope, IdempotencyKey key, String step) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(step, "step must not be null");
        if (step.isBlank()) {
            throw new IllegalArgumentException("step must not be blank");
        }
        if (DerivedText.hasControl(step)) {
            throw new IllegalArgumentException("step must not contain control characters");
        }
        if (!DerivedText.isWellFormed(step)) {
            throw new IllegalArgumentException("step must not contain an unpaired surrogate");
        }
        return DerivedMaterial.downstream(scope.value(), key.value(), step);
    }

    /** {@return how many hexadecimal digits a downstream key has} */
    public int length() {
        return length;
    }

    /** The length, without the secret. */
    @Override
    public String toString() {
        return "DownstreamKeys[length=" + length + ", secret=(hidden)]";
    }
}
