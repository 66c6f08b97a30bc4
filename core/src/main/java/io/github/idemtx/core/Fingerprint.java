package io.github.idemtx.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The SHA-256 digest of a request: what decides whether a second call with the same key is the
 * same request (replay) or a different one (mismatch).
 *
 * <p>Immutable and thread-safe. {@link #equals} compares in constant time.
 */
public final class Fingerprint {

    /** The length of a SHA-256 digest, in bytes. */
    public static final int LENGTH = 32;

    private static final HexFormat HEX = HexFormat.of();

    private final byte[] digest;

    private Fingerprint(byte[] digest) {
        this.digest = digest;
    }

    /**
     * Wraps an existing SHA-256 digest.
     *
     * @param sha256 exactly {@value #LENGTH} bytes; copied
     * @return the fingerprint
     * @throws NullPointerException if {@code sha256} is null
     * @throws IllegalArgumentException if it is not {@value #LENGTH} bytes long
     */
    public static Fingerprint of(byte[] sha256) {
        Objects.requireNonNull(sha256, "fingerprint must not be null");
        if (sha256.length != LENGTH) {
            throw new IllegalArgumentException(
                    "fingerprint must be a SHA-256 digest of " + LENGTH + " bytes, was " + sha256.length + " bytes");
        }
        return new Fingerprint(sha256.clone());
    }

    /**
     * Parses a SHA-256 digest written as 64 hexadecimal digits (either case).
     *
     * @param hex the digest as 64 hexadecimal digits
     * @return the fingerprint
     * @throws NullPointerException if {@code hex} is null
     * @throws IllegalArgumentException if it is not 64 hexadecimal digits
     */
    public static Fingerprint ofHex(String hex) {
        Objects.requireNonNull(hex, "fingerprint must not be null");
        if (hex.length() != LENGTH * 2) {
            throw new IllegalArgumentException(
                    "fingerprint must be " + LENGTH * 2 + " hexadecimal digits, was " + hex.length() + " characters");
        }
        try {
            return new Fingerprint(HEX.parseHex(hex));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("fingerprint must be hexadecimal digits only", e);
        }
    }

    /**
     * {@return the SHA-256 digest of {@code data}}
     *
     * @param data the bytes to digest
     * @throws NullPointerException if {@code data} is null
     */
    public static Fingerprint sha256(byte[] data) {
        Objects.requireNonNull(data, "data must not be null");
        return new Fingerprint(newSha256().digest(data));
    }

    /**
     * {@return the SHA-256 digest of the UTF-8 bytes of {@code text}}
     *
     * @param text the text to digest
     * @throws NullPointerException if {@code text} is null
     */
    public static Fingerprint sha256(String text) {
        Objects.requireNonNull(text, "text must not be null");
        return sha256(text.getBytes(StandardCharsets.UTF_8));
    }

    /** {@return a copy of the {@value #LENGTH} digest bytes} */
    public byte[] bytes() {
        return digest.clone();
    }

    /** {@return the digest as 64 lowercase hexadecimal digits} */
    public String hex() {
        return HEX.formatHex(digest);
    }

    /**
     * {@return whether {@code sha256} holds the same digest, compared in constant time}
     *
     * @param sha256 a digest to compare with; null (or another length) never matches
     */
    public boolean matches(byte @Nullable [] sha256) {
        return sha256 != null && MessageDigest.isEqual(digest, sha256);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Fingerprint other && MessageDigest.isEqual(digest, other.digest);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(digest);
    }

    @Override
    public String toString() {
        return "Fingerprint[" + hex() + "]";
    }

    private static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform must provide SHA-256", e);
        }
    }
}
