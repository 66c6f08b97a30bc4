package io.github.idemtx.ledger.docs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.messaging.Acknowledgement;
import java.io.IOException;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import org.jooq.DSLContext;

/**
 * docs/message-consumers.md's consumer on the plain RabbitMQ Java client (no Spring): transfer
 * intents from a quorum queue, each applied once however often it is delivered. The page shows the
 * region between the markers verbatim, and {@code PlainClientConsumerTest} runs it against RabbitMQ
 * and PostgreSQL. The intent is JSON, {@code {"tenant", "from", "to", "amountCents", "createdAt"}},
 * and its producer's intent id travels as the AMQP {@code message_id}.
 */
public final class PlainClientConsumer {

    /** A transfer intent as the message carries it. */
    public record TransferIntent(String tenant, String from, String to, long amountCents, Instant createdAt) {}

    /** The dead-letter copy's header that says why it was parked. */
    public static final String REASON = "x-idemtx-reason";

    private static final int DELIVERY_LIMIT = 5;
    private static final System.Logger LOG = System.getLogger(PlainClientConsumer.class.getName());

    private final ObjectMapper json = new ObjectMapper().findAndRegisterModules();
    private final String schema;
    private final Channel channel;
    private final String queue;
    private final String deadLetterQueue;
    private volatile String consumerTag = "";

    // [docs/message-consumers.md: plain-client]
    private final IdempotentTransaction<String> transfers;

    /** {@code channel}: its own, for this consumer; {@code queue}: a quorum queue (it counts deliveries). */
    public PlainClientConsumer(DSLContext dsl, String schema, Channel channel, String queue, String deadLetterQueue)
            throws IOException {
        // OWN: run has committed when it returns, and a call inside an open transaction is refused (STOP)
        this.transfers = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .schema(schema)
                .transactionMode(TransactionMode.OWN)
                .build();
        this.schema = schema;
        this.channel = channel;
        this.queue = queue;
        this.deadLetterQueue = deadLetterQueue;
        channel.basicQos(10); // at most 10 unacknowledged messages on this consumer
        channel.confirmSelect(); // a parked copy is confirmed by the broker before the original is acknowledged
    }

    /** Starts consuming, with manual acknowledgement. */
    public void start() throws IOException {
        consumerTag = channel.basicConsume(queue, false, new DefaultConsumer(channel) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
                    throws IOException {
                settle(envelope.getDeliveryTag(), properties, body, decide(properties, body));
            }
        });
    }

    /** Nothing here acknowledges: the decision is made after {@code run} returned, i.e. after its commit. */
    Acknowledgement decide(AMQP.BasicProperties properties, byte[] body) {
        TransferIntent intent;
        Scope scope;
        IdempotencyKey key;
        Fingerprint fingerprint;
        try {
            intent = json.readValue(body, TransferIntent.class);
            scope = Scope.of(intent.tenant()); // the queue's producers are trusted (broker permissions)
            key = IdempotencyKey.of(properties.getMessageId()); // the producer's intent id, never the delivery's
            fingerprint = Fingerprint.sha256(String.join(
                    "|",
                    intent.from(),
                    intent.to(),
                    Long.toString(intent.amountCents()),
                    intent.createdAt().toString()));
        } catch (IOException | RuntimeException e) {
            return Acknowledgement.deadLetter("cannot decode the message, nothing was written: " + e.getMessage());
        }
        Acknowledgement ack;
        try {
            ack = Acknowledgement.of(transfers.run(scope, key, fingerprint, tx -> apply(tx, intent)));
            // here, before the ack, answer the producer if it waits for an answer: a redelivery answers again
        } catch (RuntimeException | Error e) { // nothing recorded: the same key runs again on the next delivery
            ack = Acknowledgement.of(e);
        }
        return ack.giveUpAfter(deliveries(properties), DELIVERY_LIMIT); // every RETRY, bounded
    }

    /** The one place a delivery is settled: acknowledged, requeued, parked with its reason, or stopped. */
    void settle(long tag, AMQP.BasicProperties properties, byte[] body, Acknowledgement ack) throws IOException {
        switch (ack.action()) {
            case ACK -> channel.basicAck(tag, false); // an OWN call returned: it has committed
            case RETRY -> {
                pause(ack); // the hint, at most 5 s: a redelivery of the same key later
                channel.basicNack(tag, false, true);
            }
            case DEAD_LETTER -> {
                park(properties, body, ack.reason());
                channel.basicAck(tag, false);
            }
            case STOP -> {
                channel.basicNack(tag, false, true); // back in the queue, for the consumer once it is fixed
                LOG.log(System.Logger.Level.ERROR, "stopped consuming " + queue + ": " + ack.reason());
                channel.basicCancel(consumerTag);
            }
        }
    }

    /** A copy to the dead-letter queue with the reason, confirmed by the broker before the original's ack. */
    private void park(AMQP.BasicProperties properties, byte[] body, String reason) throws IOException {
        Map<String, Object> headers =
                new HashMap<>(properties.getHeaders() == null ? Map.of() : properties.getHeaders());
        headers.remove("x-delivery-count");
        headers.put(REASON, reason);
        channel.basicPublish(
                "", deadLetterQueue, properties.builder().headers(headers).build(), body);
        try {
            channel.waitForConfirmsOrDie(10_000); // not confirmed: throws, and the message stays unacknowledged
        } catch (InterruptedException | TimeoutException e) {
            throw new IOException("the dead-letter queue did not confirm the copy", e);
        }
    }

    /** This delivery's number: 1, plus the deliveries before it that the quorum queue counted. */
    static int deliveries(AMQP.BasicProperties properties) {
        Object earlier =
                properties.getHeaders() == null ? null : properties.getHeaders().get("x-delivery-count");
        return earlier instanceof Number n ? n.intValue() + 1 : 1;
    }
    // [docs/message-consumers.md: end plain-client]

    /** The work: one transfer row, written through {@code tx}, in the claim's transaction. */
    private String apply(DSLContext tx, TransferIntent intent) {
        long id = tx.resultQuery(
                        "INSERT INTO " + schema + ".queued_transfer (tenant, from_account, to_account, amount_cents)"
                                + " VALUES (?, ?, ?, ?) RETURNING id",
                        intent.tenant(),
                        intent.from(),
                        intent.to(),
                        intent.amountCents())
                .fetchSingle()
                .get(0, Long.class);
        return Long.toString(id);
    }

    private static void pause(Acknowledgement ack) {
        try {
            Thread.sleep(Math.min(5_000, Math.max(50, ack.retryAfter().toMillis())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Once at start-up, after the claim table's migration: the business table. */
    public static void createTable(DSLContext dsl, String schema) {
        dsl.execute("CREATE TABLE IF NOT EXISTS " + schema + ".queued_transfer (id bigserial PRIMARY KEY,"
                + " tenant text NOT NULL, from_account text NOT NULL, to_account text NOT NULL,"
                + " amount_cents bigint NOT NULL CHECK (amount_cents > 0))");
    }
}
