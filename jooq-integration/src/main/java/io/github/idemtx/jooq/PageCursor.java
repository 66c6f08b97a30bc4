package io.github.idemtx.jooq;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;

/**
 * Where a page of {@link ClaimAdmin#list} ended: the last claim's ({@code created_at}, scope, key),
 * the listing's order. Its text form, {@link ClaimAdmin.Page#next()}, is base64url of the creation
 * time in epoch microseconds (the column's precision), scope and key, separated by 0 characters.
 */
record PageCursor(Instant createdAt, String scope, String key) {

    String format() {
        long micros = createdAt.getEpochSecond() * 1_000_000L + createdAt.getNano() / 1000;
        return Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString((micros + "\0" + scope + "\0" + key).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The cursor that {@link #format()} wrote.
     *
     * @throws IllegalArgumentException if {@code after} is not one
     */
    static PageCursor parse(String after) {
        try {
            String[] parts = new String(Base64.getUrlDecoder().decode(after), StandardCharsets.UTF_8).split("\0", 3);
            long micros = Long.parseLong(parts[0]);
            return new PageCursor(
                    Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000),
                    parts[1],
                    parts[2]);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "after must be the next of a page this admin listed, was '" + after + "'");
        }
    }
}
