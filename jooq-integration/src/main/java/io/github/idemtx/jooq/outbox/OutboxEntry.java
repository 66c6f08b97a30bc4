package io.github.idemtx.jooq.outbox;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * An outbox message as an operator sees it ({@link Outbox#find}, {@link Outbox#failed}): where it
 * stands, how often it was tried, and why its last attempt failed. A final class rather than a
 * record, so that it can show more in a later version without breaking its readers. Immutable.
 */
public final class OutboxEntry {
    private final UUID messageId;
    private final Scope scope;
    private final IdempotencyKey key;
    private final String name;
    private final String destination;
    private final @Nullable String orderingKey;
    private final byte[] payload;
    private final Map<String, String> headers;
    private final OutboxStatus status;
    private final int attempts;
    private final Instant createdAt;
    private final Instant nextAttemptAt;
    private final @Nullable Instant lastAttemptAt;
    private final @Nullable String lastError;
    private final @Nullable Instant settledAt;

    OutboxEntry(
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
            @Nullable Instant settledAt) {
        this.messageId = messageId;
        this.scope = scope;
        this.key = key;
        this.name = name;
        this.destination = destination;
        this.orderingKey = orderingKey;
        this.payload = payload.clone();
        this.headers = Map.copyOf(headers);
        this.status = status;
        this.attempts = attempts;
        this.createdAt = createdAt;
        this.nextAttemptAt = nextAttemptAt;
        this.lastAttemptAt = lastAttemptAt;
        this.lastError = lastError;
        this.settledAt = settledAt;
    }

    /** {@return the id consumers deduplicate by} */
    public UUID messageId() {
        return messageId;
    }

    /** {@return the scope of the claim whose work added it} */
    public Scope scope() {
        return scope;
    }

    /** {@return the key of that claim} */
    public IdempotencyKey key() {
        return key;
    }

    /** {@return its name within the claim} */
    public String name() {
        return name;
    }

    /** {@return where it goes} */
    public String destination() {
        return destination;
    }

    /** {@return its ordering key; null when unordered} */
    public @Nullable String orderingKey() {
        return orderingKey;
    }

    /** {@return a copy of its body} */
    public byte[] payload() {
        return payload.clone();
    }

    /** {@return its headers; unmodifiable} */
    public Map<String, String> headers() {
        return headers;
    }

    /** {@return where it stands} */
    public OutboxStatus status() {
        return status;
    }

    /** {@return its delivery attempts so far (an operator's retry counts afresh)} */
    public int attempts() {
        return attempts;
    }

    /** {@return when the work added it} */
    public Instant createdAt() {
        return createdAt;
    }

    /** {@return when it is due (pending)} */
    public Instant nextAttemptAt() {
        return nextAttemptAt;
    }

    /** {@return when it was last tried; null if never} */
    public @Nullable Instant lastAttemptAt() {
        return lastAttemptAt;
    }

    /** {@return why its last failed attempt failed; null if none did} */
    public @Nullable String lastError() {
        return lastError;
    }

    /** {@return when it was delivered or discarded; null otherwise} */
    public @Nullable Instant settledAt() {
        return settledAt;
    }

    @Override
    public String toString() {
        return "OutboxEntry[messageId=" + messageId + ", destination=" + destination
                + (orderingKey == null ? "" : ", orderingKey=" + orderingKey) + ", status=" + status + ", attempts="
                + attempts + (lastError == null ? "" : ", lastError=" + lastError) + "]";
    }
}
