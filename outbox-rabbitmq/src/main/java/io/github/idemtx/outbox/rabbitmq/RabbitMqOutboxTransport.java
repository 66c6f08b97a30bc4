package io.github.idemtx.outbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.github.idemtx.jooq.outbox.OutboxDelivery;
import io.github.idemtx.jooq.outbox.OutboxTransport;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox messages to RabbitMQ with publisher confirms: a message counts as delivered only
 * once the broker has confirmed it (for a durable queue: written to disk, or to a quorum of a quorum
 * queue's replicas).
 *
 * <p>Each message goes to the exchange its destination names, with the routing key its ordering key
 * gives (an empty one for an unordered message; or what {@link Builder#routingKey} says), persistent,
 * with the message id as the AMQP {@code message-id} property (consumers deduplicate by it; the
 * messaging module's consumer guide shows how), the {@code content-type} header as the content type
 * and the other headers as AMQP headers. It is published {@code mandatory}: a message no queue is
 * bound for comes back, and counts as a failed attempt ("unroutable"), not as a delivery. A nack, a
 * confirm not received within {@link Builder#confirmTimeout}, or a lost channel fails the attempt; the
 * relay tries again later with the same message id.
 *
 * <p>The transport uses one channel of the connection it is given, opened on the first send and
 * again after a failure; {@link #close()} closes that channel, never the connection, which stays the
 * application's. Thread-safe: sends are serialized on the channel.
 */
public final class RabbitMqOutboxTransport implements OutboxTransport, AutoCloseable {

    /** Default {@link Builder#confirmTimeout}: 10 seconds. */
    public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(10);

    private final Connection connection;
    private final Duration confirmTimeout;
    private final Function<OutboxDelivery, String> routingKey;
    private @Nullable Channel channel;
    private volatile @Nullable String returned;

    private RabbitMqOutboxTransport(Builder b) {
        this.connection = b.connection;
        this.confirmTimeout = b.confirmTimeout;
        this.routingKey = b.routingKey;
    }

    /**
     * {@return a transport over {@code connection} with the defaults}
     *
     * @param connection the application's connection to the broker
     * @throws NullPointerException if {@code connection} is null
     */
    public static RabbitMqOutboxTransport create(Connection connection) {
        return builder(connection).build();
    }

    /**
     * {@return a builder}
     *
     * @param connection the application's connection to the broker
     * @throws NullPointerException if {@code connection} is null
     */
    public static Builder builder(Connection connection) {
        return new Builder(connection);
    }

    @Override
    public synchronized void send(OutboxDelivery delivery) throws IOException, InterruptedException {
        Channel ch = channel();
        String id = delivery.messageId().toString();
        Map<String, Object> headers = new HashMap<>();
        String contentType = "application/octet-stream";
        for (var h : delivery.headers().entrySet()) {
            if (h.getKey().toLowerCase(Locale.ROOT).equals("content-type")) {
                contentType = h.getValue();
            } else {
                headers.put(h.getKey(), h.getValue());
            }
        }
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .messageId(id)
                .contentType(contentType)
                .deliveryMode(2)
                .headers(headers)
                .build();
        returned = null;
        try {
            ch.basicPublish(delivery.destination(), routingKey.apply(delivery), true, props, delivery.payload());
            ch.waitForConfirmsOrDie(confirmTimeout.toMillis());
        } catch (IOException | TimeoutException | RuntimeException e) {
            closeChannel(); // a nack or timeout closed it already; a half-used one is not reused
            throw e instanceof IOException io
                    ? io
                    : new IOException("the broker did not confirm message " + id + " to " + delivery.destination(), e);
        }
        String back = returned;
        if (id.equals(back)) {
            throw new IOException("unroutable: the exchange " + delivery.destination() + " routed message " + id
                    + " to no queue (routing key '" + routingKey.apply(delivery) + "')");
        }
    }

    private Channel channel() throws IOException {
        Channel ch = channel;
        if (ch != null && ch.isOpen()) {
            return ch;
        }
        ch = connection.createChannel();
        if (ch == null) {
            throw new IOException("the connection has no channel left");
        }
        ch.confirmSelect();
        ch.addReturnListener(r -> returned = r.getProperties().getMessageId());
        channel = ch;
        return ch;
    }

    private void closeChannel() {
        Channel ch = channel;
        channel = null;
        if (ch != null && ch.isOpen()) {
            try {
                ch.close();
            } catch (IOException | TimeoutException | RuntimeException e) {
                // closing a broken channel: nothing left to save
            }
        }
    }

    /** Closes the transport's channel; the connection stays open. */
    @Override
    public synchronized void close() {
        closeChannel();
    }

    /** Builds a {@link RabbitMqOutboxTransport}; not thread-safe. */
    public static final class Builder {
        private final Connection connection;
        private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
        private Function<OutboxDelivery, String> routingKey = d -> Objects.requireNonNullElse(d.orderingKey(), "");

        private Builder(Connection connection) {
            this.connection = Objects.requireNonNull(connection, "connection must not be null");
        }

        /**
         * How long a send waits for the broker's confirm; default 10 seconds.
         *
         * @param confirmTimeout positive
         * @return this builder
         * @throws IllegalArgumentException if it is not positive
         */
        public Builder confirmTimeout(Duration confirmTimeout) {
            Objects.requireNonNull(confirmTimeout, "confirmTimeout must not be null");
            if (confirmTimeout.isZero() || confirmTimeout.isNegative()) {
                throw new IllegalArgumentException("confirmTimeout must be positive, was " + confirmTimeout);
            }
            this.confirmTimeout = confirmTimeout;
            return this;
        }

        /**
         * The routing key of each message; default its ordering key, or empty.
         *
         * @param routingKey the routing key of a delivery
         * @return this builder
         */
        public Builder routingKey(Function<OutboxDelivery, String> routingKey) {
            this.routingKey = Objects.requireNonNull(routingKey, "routingKey must not be null");
            return this;
        }

        /** {@return the transport} */
        public RabbitMqOutboxTransport build() {
            return new RabbitMqOutboxTransport(this);
        }
    }
}
