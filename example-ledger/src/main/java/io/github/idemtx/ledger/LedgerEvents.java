package io.github.idemtx.ledger;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.github.idemtx.jooq.outbox.Outbox;
import io.github.idemtx.jooq.outbox.OutboxRelay;
import io.github.idemtx.micrometer.MicrometerOutboxMetrics;
import io.github.idemtx.outbox.rabbitmq.RabbitMqOutboxTransport;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import org.jooq.DSLContext;

/**
 * The ledger's transfer events ({@code LEDGER_EVENTS_EXCHANGE}): the library's outbox, whose rows the
 * ledger adds in each transfer's transaction ({@link Ledger}), and its relay publishing them to a
 * RabbitMQ topic exchange with publisher confirms (routing key {@code transfer.applied} or
 * {@code deposit.applied}, the AMQP message id derived from the transfer's claim), measured in the
 * ledger's registry ({@code idemtx.outbox.*}). A message no queue is bound for is a failed attempt,
 * retried with backoff and, after ten, kept as failed for an operator.
 */
final class LedgerEvents implements AutoCloseable {

    private final Connection connection;
    private final RabbitMqOutboxTransport transport;
    private final Outbox outbox;
    private final OutboxRelay relay;

    private LedgerEvents(Connection connection, RabbitMqOutboxTransport transport, Outbox outbox, OutboxRelay relay) {
        this.connection = connection;
        this.transport = transport;
        this.outbox = outbox;
        this.relay = relay;
    }

    /** Declares the exchange (topic, durable) and starts the relay: it polls every {@code poll} and leases its batches for {@code lease}. */
    static LedgerEvents start(
            String amqpUrl,
            String exchange,
            Duration lease,
            Duration poll,
            DSLContext dsl,
            String schema,
            MeterRegistry metrics)
            throws IOException {
        Connection connection;
        try {
            connection = TransferQueue.factory(amqpUrl)
                    .newConnection("ledger-events " + exchange); // named so an operator can tell it
        } catch (TimeoutException e) {
            throw new IOException("the broker of LEDGER_AMQP_URL did not answer", e);
        }
        try (Channel channel = connection.createChannel()) {
            channel.exchangeDeclare(exchange, "topic", true);
        } catch (IOException | TimeoutException | RuntimeException e) {
            connection.abort();
            throw new IOException("could not declare the events exchange " + exchange, e);
        }
        RabbitMqOutboxTransport transport = RabbitMqOutboxTransport.builder(connection)
                .routingKey(d -> Objects.requireNonNullElse(d.headers().get("event-type"), "event"))
                .build();
        MicrometerOutboxMetrics meters = MicrometerOutboxMetrics.of(metrics);
        Outbox outbox = Outbox.builder(dsl).schema(schema).listener(meters).build();
        OutboxRelay relay = OutboxRelay.builder(dsl, transport)
                .schema(schema)
                .owner("ledger-" + java.util.UUID.randomUUID())
                .pollInterval(poll) // 200 ms by default, a demo's latency; the library's default is 1 s
                .lease(lease)
                .listener(meters)
                .build();
        relay.start();
        return new LedgerEvents(connection, transport, outbox, relay);
    }

    /** {@return the outbox the ledger adds its events to} */
    Outbox outbox() {
        return outbox;
    }

    /** Stops the relay (the event being published is finished and marked), then closes the channel and connection. */
    @Override
    public void close() {
        relay.close();
        transport.close();
        try {
            connection.close();
        } catch (IOException | RuntimeException e) {
            System.err.println("could not close the events connection: " + e);
        }
    }
}
