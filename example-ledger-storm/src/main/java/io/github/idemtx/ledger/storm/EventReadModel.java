package io.github.idemtx.ledger.storm;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.ledger.LedgerServer;
import io.github.idemtx.messaging.Acknowledgement;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * A downstream service's read model of the ledger's events, kept by a consumer on the library's
 * messaging support: each delivery of the storm's events queue runs an {@link IdempotentTransaction}
 * ({@link TransactionMode#OWN}) keyed by the AMQP message id (the outbox's, derived from the
 * transfer's claim), whose work inserts one row into {@code event_read_model}, and is acknowledged,
 * requeued or counted as dead-lettered as {@link Acknowledgement} says. The table has no unique
 * constraint: that every event is in it exactly once is the library's doing, which the storm checks.
 * Its pool is named like the ledger's, so the storm's connection kills hit it too.
 */
final class EventReadModel implements AutoCloseable {

    static final String TABLE = "event_read_model";
    /** Consumers, each on a channel of its own (a channel's deliveries are handled one at a time). */
    private static final int CONSUMERS = 4;

    private final HikariDataSource pool;
    private final IdempotentTransaction<String> idempotent;
    private final java.util.List<Channel> channels;
    private final String schema;
    final AtomicLong deliveries = new AtomicLong();
    /** How often each message id was delivered. */
    final java.util.concurrent.ConcurrentHashMap<String, Integer> seen = new java.util.concurrent.ConcurrentHashMap<>();

    /** Each message id's deliveries, the distinct ones: their routing key and body. */
    final java.util.concurrent.ConcurrentHashMap<String, java.util.Set<Delivered>> contents =
            new java.util.concurrent.ConcurrentHashMap<>();

    final AtomicLong requeued = new AtomicLong();
    final AtomicLong deadLettered = new AtomicLong();

    private EventReadModel(
            HikariDataSource pool,
            IdempotentTransaction<String> idempotent,
            java.util.List<Channel> channels,
            String schema) {
        this.pool = pool;
        this.idempotent = idempotent;
        this.channels = channels;
        this.schema = schema;
    }

    /** Creates the table in the ledger's {@code schema} and starts consuming {@code queue} on {@code broker}. */
    static EventReadModel start(SideDatabase db, String schema, Connection broker, String queue)
            throws IOException, java.sql.SQLException {
        db.execute("CREATE TABLE IF NOT EXISTS " + schema + "." + TABLE + " (message_id uuid NOT NULL,"
                + " transfer_id uuid, applied_at timestamptz NOT NULL DEFAULT now())");
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(db.url());
        hikari.setUsername(db.user());
        hikari.setPassword(db.password());
        hikari.setMaximumPoolSize(CONSUMERS);
        hikari.setPoolName("storm-read-model");
        hikari.addDataSourceProperty("ApplicationName", LedgerServer.applicationName(schema));
        HikariDataSource pool = new HikariDataSource(hikari);
        DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES);
        IdempotentTransaction<String> idempotent = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .schema(schema)
                .transactionMode(TransactionMode.OWN)
                .build();
        java.util.List<Channel> channels = new java.util.ArrayList<>();
        for (int i = 0; i < CONSUMERS; i++) {
            channels.add(broker.createChannel());
        }
        EventReadModel model = new EventReadModel(pool, idempotent, channels, schema);
        for (Channel channel : channels) {
            channel.basicQos(16);
            channel.basicConsume(queue, false, model.new Deliveries(channel));
        }
        return model;
    }

    /** A delivery as it reached the queue: its routing key and body (UTF-8). */
    record Delivered(String routingKey, String body) {}

    private final class Deliveries extends DefaultConsumer {
        Deliveries(Channel channel) {
            super(channel);
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                throws IOException {
            deliveries.incrementAndGet();
            long deliveryTag = envelope.getDeliveryTag();
            String messageId = props.getMessageId();
            seen.merge(String.valueOf(messageId), 1, Integer::sum);
            contents.computeIfAbsent(String.valueOf(messageId), k -> java.util.concurrent.ConcurrentHashMap.newKeySet())
                    .add(new Delivered(envelope.getRoutingKey(), new String(body, StandardCharsets.UTF_8)));
            Acknowledgement ack;
            if (messageId == null) {
                ack = Acknowledgement.deadLetter("no message id");
            } else {
                String json = new String(body, StandardCharsets.UTF_8);
                try {
                    Outcome<String> outcome = idempotent.run(
                            Scope.of("ledger-events"),
                            IdempotencyKey.of(messageId),
                            Fingerprint.sha256("ledger-event\n" + json),
                            tx -> {
                                String transfer = tx.resultQuery("SELECT (?::jsonb) ->> 'id'", json)
                                        .fetchOne(0, String.class);
                                tx.execute(
                                        "INSERT INTO " + schema + "." + TABLE
                                                + " (message_id, transfer_id) VALUES (?::uuid, ?::uuid)",
                                        messageId,
                                        transfer);
                                return transfer;
                            });
                    ack = Acknowledgement.of(outcome);
                } catch (RuntimeException e) {
                    ack = Acknowledgement.of(e);
                }
            }
            switch (ack.action()) {
                case ACK -> getChannel().basicAck(deliveryTag, false);
                case DEAD_LETTER -> {
                    deadLettered.incrementAndGet();
                    System.err.println("storm: read model dead-lettered " + messageId + ": " + ack.reason());
                    getChannel().basicNack(deliveryTag, false, false);
                }
                default -> { // RETRY, STOP: delivered again (the kills end connections: the next attempt runs)
                    requeued.incrementAndGet();
                    ChildProcesses.sleep(Math.min(ack.retryAfter().toMillis(), 200));
                    getChannel().basicNack(deliveryTag, false, true);
                }
            }
        }
    }

    /** Stops consuming (what a channel holds unacknowledged goes back to the queue) and closes the pool. */
    @Override
    public void close() {
        for (Channel channel : channels) {
            try {
                channel.close();
            } catch (IOException | java.util.concurrent.TimeoutException | RuntimeException e) {
                System.err.println("storm: closing a read model's channel: " + e);
            }
        }
        pool.close();
    }
}
