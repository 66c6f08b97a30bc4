package io.github.idemtx.jooq.internal.store;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.Base64;

/**
 * What the store derives from a key with SHA-256, written once: the advisory lock that stands for a
 * key, and the downstream key an external effect sends. Both hash their parts separated by a 0 byte,
 * so that no two different part lists hash the same text.
 */
public final class Digests {

    private Digests() {}

    /**
     * The id of the transaction-level advisory lock that stands for (scope, key): the first 8 bytes
     * (big-endian) of SHA-256 over the UTF-8 scope, a 0 byte and the UTF-8 key. A collision only
     * costs a needless wait; a cryptographic hash keeps clients from aiming at others' keys.
     */
    public static long lockId(String scope, String key) {
        byte[] digest = sha256(utf8(scope), utf8(key));
        long id = 0;
        for (int i = 0; i < 8; i++) {
            id = (id << 8) | (digest[i] & 0xff);
        }
        return id;
    }

    /**
     * {@code effect:} and the base64url SHA-256 of scope, key and the claim's start (its
     * {@code created_at} in epoch microseconds, decimal digits), separated by 0 bytes: the same for
     * every attempt and takeover of one claim, different for the claim of the same key after the
     * first expired (a remote that keeps keys longer than the TTL must not answer the new request with
     * the old charge); bounded and opaque.
     */
    public static String downstreamKey(String effect, String scope, String key, Instant claimedAt) {
        byte[] digest = sha256(utf8(scope), utf8(key), micros(claimedAt));
        return effect + ":" + Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
    }

    /**
     * The reference an effect settled by statement sends ({@code Intent.downstreamKey()} of such an
     * effect): 32 characters of RFC 4648 base32 (A-Z, 2-7), so that it survives a bank's character set
     * (SEPA's excludes {@code _}), its upper-casing and its 35-character {@code EndToEndId}. The first
     * 3 come from the effect's name alone ({@link #statementPrefix}), so that an account statement
     * shared by several effects is told apart; the other 29 (145 bits) from SHA-256 of effect, scope,
     * key and the claim's start in epoch microseconds, separated by 0 bytes.
     */
    public static String statementReference(String effect, String scope, String key, Instant claimedAt) {
        byte[] digest = sha256(utf8(effect), utf8(scope), utf8(key), micros(claimedAt));
        return statementPrefix(effect) + base32(digest, 29);
    }

    /** The 3 characters every statement reference of {@code effect} starts with. */
    public static String statementPrefix(String effect) {
        return base32(sha256(utf8("idemtx.statement"), utf8(effect)), 3);
    }

    private static byte[] micros(Instant claimedAt) {
        long micros =
                Math.addExact(Math.multiplyExact(claimedAt.getEpochSecond(), 1_000_000L), claimedAt.getNano() / 1_000);
        return Long.toString(micros).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The first {@code chars} characters of RFC 4648 base32 (A-Z and 2-7, five bits a character) of
     * {@code bytes}: character {@code i} is bits {@code 5i} to {@code 5i + 4}, read from the two bytes
     * they lie in (so {@code bytes} holds at least {@code 5 * chars / 8 + 2} of them).
     */
    private static String base32(byte[] bytes, int chars) {
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        char[] out = new char[chars];
        for (int i = 0; i < chars; i++) {
            int bit = i * 5;
            int two = ((bytes[bit / 8] & 0xff) << 8) | (bytes[bit / 8 + 1] & 0xff);
            out[i] = alphabet.charAt((two >> (11 - bit % 8)) & 31);
        }
        return new String(out);
    }

    /** One digest per thread, reset by each {@code digest()}: looking the algorithm up cost more than hashing a key. */
    private static final ThreadLocal<MessageDigest> SHA_256 = ThreadLocal.withInitial(Digests::newSha256);

    private static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    private static byte[] sha256(byte[]... parts) {
        MessageDigest sha = SHA_256.get();
        for (int i = 0; i < parts.length; i++) {
            if (i > 0) {
                sha.update((byte) 0);
            }
            sha.update(parts[i]);
        }
        return sha.digest();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
