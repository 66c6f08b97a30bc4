package io.github.idemtx.jooq.internal.store;

import java.time.Instant;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * A row of the outbox table as {@link OutboxStatements} reads it. The relay's lease reads what a
 * delivery needs (the times, the error and the lease stay null); the operator's reads read it all.
 *
 * @param headers one "name: value" per line, or null for none
 * @param status {@code pending}, {@code delivered}, {@code failed} or {@code discarded}
 */
// arrays, compared by identity in equals: these rows are read and taken apart, never compared or hashed
@SuppressWarnings("ArrayRecordComponent")
public record OutboxRow(
        long id,
        UUID messageId,
        String scope,
        String key,
        String name,
        String destination,
        @Nullable String orderingKey,
        byte[] payload,
        @Nullable String headers,
        String status,
        int attempts,
        @Nullable Instant createdAt,
        @Nullable Instant nextAttemptAt,
        @Nullable Instant lastAttemptAt,
        @Nullable String lastError,
        @Nullable Instant settledAt) {}
