package io.github.idemtx.ledger.storm;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import java.io.IOException;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * The ledger's transfer events under the storm ({@code LEDGER_EVENTS_EXCHANGE}, through the
 * library's outbox): the storm declares the exchange and a queue bound to it before the ledger
 * starts, and at the end, once the relay has nothing pending, reads the queue dry and checks against
 * the ledger's database that every committed transfer (deposits included) has exactly one outbox
 * message, that no message exists for an intent that did not commit (refused, rolled back by a
 * connection kill), and that every message was delivered and reached the queue at least once.
 */
final class StormEvents implements AutoCloseable {

    /** How long the relay may take to drain what the load left pending: a bound on waiting, not a check. */
    private static final long DRAIN_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(120);

    private final String exchange;
    private final String transferQueue;
    private final String amqpUrl;
    private final Connection connection;
    private final Channel channel;
    private final String queue;

    private StormEvents(String amqpUrl, String exchange, Connection connection, Channel channel, String queue) {
        this.amqpUrl = amqpUrl;
        this.exchange = exchange;
        this.transferQueue = exchange + ".transfers";
        this.connection = connection;
        this.channel = channel;
        this.queue = queue;
    }

    /** Declares the exchange {@code exchange} (topic, durable, as the ledger does) and a queue bound to it for every key. */
    static StormEvents declare(String amqpUrl, String exchange) throws IOException {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(amqpUrl);
        } catch (Exception e) {
            throw new IllegalArgumentException("no AMQP URI: " + amqpUrl.replaceAll("//[^@/]*@", "//"), e);
        }
        Connection connection;
        try {
            connection = factory.newConnection("ledger-storm-events");
        } catch (TimeoutException e) {
            throw new IOException("the broker did not answer", e);
        }
        try {
            Channel channel = connection.createChannel();
            channel.exchangeDeclare(exchange, "topic", true);
            String queue = exchange + ".observed";
            channel.queueDeclare(queue, false, false, false, null);
            channel.queuePurge(queue);
            channel.queueBind(queue, exchange, "#");
            return new StormEvents(amqpUrl, exchange, connection, channel, queue);
        } catch (IOException | RuntimeException e) {
            connection.abort();
            throw e;
        }
    }

    /** The ledger's flags for its events: the broker, the exchange, and a transfer queue of the storm's own. */
    List<String> ledgerArgs() {
        return List.of(
                "--amqp-url=" + amqpUrl,
                "--events-exchange=" + exchange,
                "--queue=" + transferQueue,
                "--queue-consumers=1");
    }

    /** The exchange's name. */
    String exchange() {
        return exchange;
    }

    /**
     * Waits until the relay has nothing pending (at most two minutes; what is still pending then fails
     * the check below), reads the queue dry, and adds the checks to {@code results}.
     */
    void check(SideDatabase db, String schema, Map<String, Boolean> results, java.io.PrintStream progress)
            throws SQLException, IOException, InterruptedException {
        String outbox = schema + ".idempotency_outbox WHERE destination = '" + exchange + "'";
        long until = System.nanoTime() + DRAIN_NANOS;
        long pending;
        while ((pending = db.count("SELECT count(*) FROM " + outbox + " AND status = 'pending'")) > 0
                && System.nanoTime() < until) {
            Thread.sleep(200);
        }
        Map<String, Integer> seen = new HashMap<>();
        long deliveries = 0;
        for (GetResponse r; (r = channel.basicGet(queue, true)) != null; ) {
            deliveries++;
            seen.merge(String.valueOf(r.getProps().getMessageId()), 1, Integer::sum);
        }
        Set<String> transfers = db.strings("SELECT id FROM " + schema + ".transfer");
        Map<String, Integer> perTransfer = new HashMap<>();
        Set<String> messageIds = new HashSet<>();
        Set<String> delivered = new HashSet<>();
        long rows = db.count("SELECT count(*) FROM " + outbox);
        db.query("SELECT message_id, status, convert_from(payload, 'UTF8')::jsonb ->> 'id' FROM " + outbox, rs -> {
            messageIds.add(rs.getString(1));
            if ("delivered".equals(rs.getString(2))) {
                delivered.add(rs.getString(1));
            }
            perTransfer.merge(String.valueOf(rs.getString(3)), 1, Integer::sum);
        });
        long once = transfers.stream()
                .filter(t -> perTransfer.getOrDefault(t, 0) == 1)
                .count();
        Set<String> orphans = new HashSet<>(perTransfer.keySet());
        orphans.removeAll(transfers);
        Set<String> notSeen = new HashSet<>(messageIds);
        notSeen.removeAll(seen.keySet());
        Set<String> foreign = new HashSet<>(seen.keySet());
        foreign.removeAll(messageIds);
        long redelivered = seen.values().stream().filter(n -> n > 1).count();
        progress.printf(
                "storm: events: %d committed transfers, %d outbox messages (%d distinct ids, %d delivered, %d still"
                        + " pending), %d deliveries on the queue (%d distinct ids, %d seen more than once)%n",
                transfers.size(),
                rows,
                messageIds.size(),
                delivered.size(),
                pending,
                deliveries,
                seen.size(),
                redelivered);
        results.put(
                "every committed transfer has exactly one outbox message (" + once + " of " + transfers.size() + ", "
                        + messageIds.size() + " distinct message ids)",
                once == transfers.size() && messageIds.size() == rows);
        results.put("no outbox message for an intent that did not commit (" + orphans.size() + ")", orphans.isEmpty());
        results.put(
                "every outbox message was delivered (" + delivered.size() + " of " + rows + ")",
                delivered.size() == rows);
        results.put(
                "every outbox message reached the events queue at least once (" + (messageIds.size() - notSeen.size())
                        + " of " + messageIds.size() + ", in " + deliveries + " deliveries)",
                notSeen.isEmpty());
        results.put(
                "every message on the events queue is an outbox message (" + foreign.size() + " others)",
                foreign.isEmpty());
    }

    /** Deletes the queues (the storm's and the ledger's transfer queue) and the exchange. */
    @Override
    public void close() {
        try {
            for (String q : new String[] {queue, transferQueue, transferQueue + ".replies", transferQueue + ".dlq"}) {
                channel.queueDelete(q);
            }
            channel.exchangeDelete(exchange);
            connection.close();
        } catch (IOException | RuntimeException e) {
            System.err.println("storm: could not remove the events' queues: " + e);
            connection.abort();
        }
    }
}
