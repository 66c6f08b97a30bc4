package io.github.idemtx.core;

import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * What happened to one outbox message: what {@link IdempotencyListener#outboxChanged} is told by the
 * outbox relay (a delivery, a failed attempt) and by an operator's action. A final class rather than a
 * record, so that it can gain what a later version reports without breaking a listener.
 */
public final class OutboxEvent {

    /** What happened to the message. */
    public enum Kind {
        /** The destination confirmed it; it is marked delivered. */
        DELIVERED,
        /** An attempt failed; the message stays pending and is tried again after its backoff. */
        RETRYING,
        /**
         * It failed for good (its last attempt, or a refusal the transport calls permanent): kept as
         * failed, with its reason, until an operator retries or discards it.
         */
        FAILED,
        /** An operator put a failed message back to be delivered. */
        RETRIED,
        /** An operator discarded a failed or pending message: it is never delivered. */
        DISCARDED
    }

    private final Kind kind;
    private final UUID messageId;
    private final String destination;
    private final int attempts;
    private final @Nullable String error;
    private final @Nullable Duration took;

    private OutboxEvent(
            Kind kind,
            UUID messageId,
            String destination,
            int attempts,
            @Nullable String error,
            @Nullable Duration took) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.messageId = Objects.requireNonNull(messageId, "messageId");
        this.destination = Objects.requireNonNull(destination, "destination");
        this.attempts = attempts;
        this.error = error;
        this.took = took;
    }

    /**
     * {@return a delivery attempt's end}
     *
     * @param kind {@link Kind#DELIVERED}, {@link Kind#RETRYING} or {@link Kind#FAILED}
     * @param messageId the message's id
     * @param destination its destination
     * @param attempts its attempts so far, this one included
     * @param error why it failed; null when delivered
     * @param took how long the transport took
     * @throws NullPointerException if an argument but {@code error} is null
     * @throws IllegalArgumentException if {@code kind} is an operator's
     */
    public static OutboxEvent attempt(
            Kind kind, UUID messageId, String destination, int attempts, @Nullable String error, Duration took) {
        if (kind == Kind.RETRIED || kind == Kind.DISCARDED) {
            throw new IllegalArgumentException("an operator retries or discards; the relay attempts");
        }
        return new OutboxEvent(kind, messageId, destination, attempts, error, Objects.requireNonNull(took, "took"));
    }

    /**
     * {@return an operator's action on a message}
     *
     * @param kind {@link Kind#RETRIED} or {@link Kind#DISCARDED}
     * @param messageId the message's id
     * @param destination its destination
     * @param attempts its attempts so far
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code kind} is the relay's
     */
    public static OutboxEvent byOperator(Kind kind, UUID messageId, String destination, int attempts) {
        if (kind != Kind.RETRIED && kind != Kind.DISCARDED) {
            throw new IllegalArgumentException("the relay delivers or fails; an operator retries or discards");
        }
        return new OutboxEvent(kind, messageId, destination, attempts, null, null);
    }

    /** {@return what happened} */
    public Kind kind() {
        return kind;
    }

    /** {@return the message's id, derived from its claim and name} */
    public UUID messageId() {
        return messageId;
    }

    /** {@return the message's destination} */
    public String destination() {
        return destination;
    }

    /** {@return the message's delivery attempts so far} */
    public int attempts() {
        return attempts;
    }

    /** {@return why the attempt failed; null unless {@link Kind#RETRYING} or {@link Kind#FAILED}} */
    public @Nullable String error() {
        return error;
    }

    /** {@return how long the transport took; null for an operator's action} */
    public @Nullable Duration took() {
        return took;
    }

    @Override
    public String toString() {
        return "OutboxEvent[" + kind + ", messageId=" + messageId + ", destination=" + destination + ", attempts="
                + attempts + (error == null ? "" : ", error=" + error) + "]";
    }
}
