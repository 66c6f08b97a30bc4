package io.github.idemtx.jooq.outbox;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * One delivery attempt of an outbox message, as an {@link OutboxTransport} is handed it. A final
 * class rather than a record, so that it can gain fields without breaking a transport. Immutable.
 */
public final class OutboxDelivery {

    private final UUID messageId;
    private final Scope scope;
    private final IdempotencyKey key;
    private final String name;
    private final String destination;
    private final @Nullable String orderingKey;
    private final byte[] payload;
    private final Map<String, String> headers;
    private final int attempt;

    private OutboxDelivery(
            UUID messageId,
            Scope scope,
            IdempotencyKey key,
            String name,
            String destination,
            @Nullable String orderingKey,
            byte[] payload,
            Map<String, String> headers,
            int attempt) {
        this.messageId = Objects.requireNonNull(messageId, "messageId must not be null");
        this.scope = Objects.requireNonNull(scope, "scope must not be null");
        this.key = Objects.requireNonNull(key, "key must not be null");
        this.name = Objects.requireNonNull(name, "name must not be null");
        this.destination = Objects.requireNonNull(destination, "destination must not be null");
        this.orderingKey = orderingKey;
        this.payload =
                Objects.requireNonNull(payload, "payload must not be null").clone();
        this.headers = Map.copyOf(Objects.requireNonNull(headers, "headers must not be null"));
        this.attempt = attempt;
    }

    /**
     * {@return a delivery of {@code message}, as the relay makes it from a stored row (and a test of a
     * transport from a message of its own)}
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param message the message
     * @param attempt which attempt this is, from 1
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code attempt} is below 1
     */
    public static OutboxDelivery of(Scope scope, IdempotencyKey key, OutboxMessage message, int attempt) {
        return of(
                Outbox.messageId(scope, key, message.name()),
                scope,
                key,
                message.name(),
                message.destination(),
                message.orderingKey(),
                message.payload(),
                message.headers(),
                attempt);
    }

    static OutboxDelivery of(
            UUID messageId,
            Scope scope,
            IdempotencyKey key,
            String name,
            String destination,
            @Nullable String orderingKey,
            byte[] payload,
            Map<String, String> headers,
            int attempt) {
        if (attempt < 1) {
            throw new IllegalArgumentException("attempt must be at least 1, was " + attempt);
        }
        return new OutboxDelivery(messageId, scope, key, name, destination, orderingKey, payload, headers, attempt);
    }

    /** {@return the message's id: derived from the claim and the name, the same on every attempt} */
    public UUID messageId() {
        return messageId;
    }

    /** {@return the scope of the claim whose work added it} */
    public Scope scope() {
        return scope;
    }

    /** {@return the key of the claim whose work added it} */
    public IdempotencyKey key() {
        return key;
    }

    /** {@return the message's name within its claim} */
    public String name() {
        return name;
    }

    /** {@return where to deliver it} */
    public String destination() {
        return destination;
    }

    /** {@return the ordering key, or null for an unordered message} */
    public @Nullable String orderingKey() {
        return orderingKey;
    }

    /** {@return a copy of the body} */
    public byte[] payload() {
        return payload.clone();
    }

    /** {@return the headers; unmodifiable} */
    public Map<String, String> headers() {
        return headers;
    }

    /** {@return which attempt this is, from 1: above 1, the destination may have the message already} */
    public int attempt() {
        return attempt;
    }

    @Override
    public String toString() {
        return "OutboxDelivery[messageId=" + messageId + ", destination=" + destination
                + (orderingKey == null ? "" : ", orderingKey=" + orderingKey) + ", name=" + name + ", attempt="
                + attempt + "]";
    }
}
