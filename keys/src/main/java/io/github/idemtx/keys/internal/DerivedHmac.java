package io.github.idemtx.keys.internal;

import java.security.InvalidKeyException;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** HMAC-SHA256 for derived keys: the secret's validation and the lowercase hexadecimal MAC. */
public final class DerivedHmac {

    /** The shortest secret accepted, in bytes: the length of a SHA-256 output. */
    public static final int MIN_SECRET_BYTES = 32;

    private static final String ALGORITHM = "HmacSHA256";
    private static final HexFormat HEX = HexFormat.of();

    private DerivedHmac() {}

    /**
     * The secret as a key, copied.
     *
     * @throws NullPointerException if {@code secret} is null
     * @throws IllegalArgumentException if it is shorter than {@value #MIN_SECRET_BYTES} bytes; the
     *     message gives its length, never its bytes
     */
    public static SecretKeySpec key(byte[] secret) {
        Objects.requireNonNull(secret, "secret must not be null");
        if (secret.length < MIN_SECRET_BYTES) {
            throw new IllegalArgumentException("secret must be at least " + MIN_SECRET_BYTES
                    + " bytes (256 bits) of random data, was " + secret.length + " bytes");
        }
        return new SecretKeySpec(secret, ALGORITHM);
    }

    /**
     * The first {@code hexDigits} lowercase hexadecimal digits of HMAC-SHA256({@code key},
     * {@code material}). A new {@link Mac} is made for each call, so this is thread-safe.
     */
    public static String hex(SecretKeySpec key, byte[] material, int hexDigits) {
        Mac mac;
        try {
            mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform must provide " + ALGORITHM, e);
        } catch (InvalidKeyException e) {
            throw new IllegalStateException(ALGORITHM + " refused the secret", e);
        }
        byte[] digest = mac.doFinal(material);
        return HEX.formatHex(digest).substring(0, hexDigits);
    }
}
