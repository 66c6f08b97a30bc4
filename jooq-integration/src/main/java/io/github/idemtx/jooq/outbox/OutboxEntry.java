package io.github.idemtx.jooq.outbox;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * An outbox message as an operator sees it ({@link Outbox#find}, {@link Outbox#failed}): where it
 * stands, how often it was tried, and why its last attempt failed.
 *
 * @param messageId the id consumers deduplicate by
 * @param scope the scope of the claim whose work added it
 * @param key the key of that claim
 * @param name its name within the claim
 * @param destination where it goes
 * @param orderingKey its ordering key; null when unordered
 * @param payload its body (the array is the entry's own; do not change it)
 * @param headers its headers
 * @param status where it stands
 * @param attempts its delivery attempts so far (an operator's retry counts afresh)
 * @param createdAt when the work added it
 * @param nextAttemptAt when it is due (pending)
 * @param lastAttemptAt when it was last tried; null if never
 * @param lastError why its last failed attempt failed; null if none did
 * @param settledAt when it was delivered or discarded; null otherwise
 */
// arrays, compared by identity in equals: entries are shown, never compared or hashed
@SuppressWarnings("ArrayRecordComponent")
public record OutboxEntry(
        UUID messageId,
        Scope scope,
        IdempotencyKey key,
        String name,
        String destination,
        @Nullable String orderingKey,
        byte[] payload,
        Map<String, String> headers,
        OutboxStatus status,
        int attempts,
        Instant createdAt,
        Instant nextAttemptAt,
        @Nullable Instant lastAttemptAt,
        @Nullable String lastError,
        @Nullable Instant settledAt) {}
