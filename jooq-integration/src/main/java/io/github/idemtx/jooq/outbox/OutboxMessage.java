package io.github.idemtx.jooq.outbox;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A message to add to the outbox: its name within the claim, where it goes, what it carries, and
 * whether it must keep its order. Build one with {@link #builder}; immutable.
 *
 * <ul>
 *   <li><b>name</b>: unique within the claim whose work adds it ({@code "transfer-applied"}); with the
 *       claim's scope and key it is what the message id derives from, so a work that runs again (a
 *       retried unit) adds the same id.
 *   <li><b>destination</b>: what the transport delivers to: a RabbitMQ exchange for the RabbitMQ
 *       transport, an endpoint's name or URI for the HTTP one.
 *   <li><b>ordering key</b> (optional): messages of one destination and ordering key are delivered in
 *       the order they were added, each only after the one before it was delivered (or discarded by
 *       an operator): a failed message holds back the ones after it. Without one, messages are
 *       delivered as they come due, in no promised order. The RabbitMQ transport also routes by it.
 *   <li><b>headers</b> (optional): names of printable ASCII without {@code :}, values without line
 *       breaks.
 * </ul>
 */
public final class OutboxMessage {

    /** The longest name, destination or ordering key, in characters: {@value}. */
    public static final int MAX_NAME_LENGTH = 255;

    private final String name;
    private final String destination;
    private final @Nullable String orderingKey;
    private final byte[] payload;
    private final Map<String, String> headers;

    private OutboxMessage(Builder b) {
        this.name = b.name;
        this.destination = b.destination;
        this.orderingKey = b.orderingKey;
        this.payload = b.payload.clone();
        this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
    }

    /**
     * {@return a message without ordering key or headers}
     *
     * @param name unique within the claim
     * @param destination where the transport delivers it
     * @param payload the message's body, copied
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if a name is blank, too long or holds a control character
     */
    public static OutboxMessage of(String name, String destination, byte[] payload) {
        return builder(name, destination, payload).build();
    }

    /**
     * {@return a builder}
     *
     * @param name unique within the claim
     * @param destination where the transport delivers it
     * @param payload the message's body, copied
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if a name is blank, too long or holds a control character
     */
    public static Builder builder(String name, String destination, byte[] payload) {
        return new Builder(name, destination, payload);
    }

    /** {@return the name, unique within the claim} */
    public String name() {
        return name;
    }

    /** {@return where the transport delivers it} */
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

    /** {@return the headers, in the order they were set; unmodifiable} */
    public Map<String, String> headers() {
        return headers;
    }

    /** Builds an {@link OutboxMessage}; not thread-safe, each setter validates at once. */
    public static final class Builder {
        private final String name;
        private final String destination;
        private final byte[] payload;
        private @Nullable String orderingKey;
        private final Map<String, String> headers = new LinkedHashMap<>();

        private Builder(String name, String destination, byte[] payload) {
            this.name = requireName(name, "name");
            this.destination = requireName(destination, "destination");
            this.payload = Objects.requireNonNull(payload, "payload must not be null");
        }

        /**
         * Delivers this message after every earlier one of its destination and ordering key.
         *
         * @param orderingKey the key, e.g. the aggregate's id
         * @return this builder
         * @throws NullPointerException if {@code orderingKey} is null
         * @throws IllegalArgumentException if it is blank, too long or holds a control character
         */
        public Builder orderingKey(String orderingKey) {
            this.orderingKey = requireName(orderingKey, "orderingKey");
            return this;
        }

        /**
         * Sets a header (a later value for the same name replaces the earlier one).
         *
         * @param name printable ASCII, without {@code :} or spaces
         * @param value without line breaks
         * @return this builder
         * @throws NullPointerException if an argument is null
         * @throws IllegalArgumentException if the name or value is not as above
         */
        public Builder header(String name, String value) {
            headers.put(Headers.requireName(name), Headers.requireValue(name, value));
            return this;
        }

        /**
         * {@return the message}
         *
         * @throws IllegalArgumentException if the headers exceed 65,535 characters when stored
         */
        public OutboxMessage build() {
            Headers.encode(headers); // checks the stored size now, not at add
            return new OutboxMessage(this);
        }
    }

    static String requireName(String value, String what) {
        Objects.requireNonNull(value, what + " must not be null");
        if (value.isBlank()) {
            throw new IllegalArgumentException(what + " must not be blank");
        }
        if (value.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException(
                    what + " must be at most " + MAX_NAME_LENGTH + " characters, was " + value.length());
        }
        if (value.chars().anyMatch(Character::isISOControl)) {
            throw new IllegalArgumentException(what + " must not contain control characters");
        }
        return value;
    }
}
