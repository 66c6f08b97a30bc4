package io.github.idemtx.ledger.storm;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
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
 * connection kill), that every message was delivered and reached the queue at least once, and that
 * none is left pending or leased. With relay kills asked for, further relays run in processes of
 * their own and are SIGKILLed mid-batch during the load ({@link RelayChaos}), with checks of their own.
 * The payout storms use it too, their queue bound for the payouts' and deposits' keys only, and
 * check the payouts' events besides ({@link PayoutEvents}).
 */
final class StormEvents implements AutoCloseable {

    /** How long the relay may take to drain what the load left pending: a bound on waiting, not a check. */
    private static final long DRAIN_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(120);

    /** The outbox names of the transfers' events; a paid payout's is {@code payout-paid-<id>}. */
    private static final Set<String> TRANSFER_EVENTS = Set.of("transfer-applied", "deposit-applied");

    private final String exchange;
    private final String transferQueue;
    private final String amqpUrl;
    private final Connection connection;
    private final Channel channel;
    private final String queue;
    private EventReadModel readModel; // once the ledger's schema is there
    private RelayChaos relay; // with relay kills asked for
    private final java.util.concurrent.atomic.AtomicInteger brokerCloses =
            new java.util.concurrent.atomic.AtomicInteger();

    private StormEvents(String amqpUrl, String exchange, Connection connection, Channel channel, String queue) {
        this.amqpUrl = amqpUrl;
        this.exchange = exchange;
        this.transferQueue = exchange + ".transfers";
        this.connection = connection;
        this.channel = channel;
        this.queue = queue;
    }

    /**
     * Declares the exchange {@code exchange} (topic, durable, as the ledger does) and a queue bound to
     * it for each of the routing key patterns {@code keys}, or for every key when none is given.
     */
    static StormEvents declare(String amqpUrl, String exchange, String... keys) throws IOException {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(amqpUrl);
        } catch (Exception e) {
            throw new IllegalArgumentException("no AMQP URI: " + amqpUrl.replaceAll("//[^@/]*@", "//"), e);
        }
        Connection connection;
        try {
            connection = factory.newConnection("ledger-storm-events " + exchange);
        } catch (TimeoutException e) {
            throw new IOException("the broker did not answer", e);
        }
        try {
            Channel channel = connection.createChannel();
            channel.exchangeDeclare(exchange, "topic", true);
            String queue = exchange + ".observed";
            channel.queueDeclare(queue, false, false, false, null);
            channel.queuePurge(queue);
            for (String key : keys.length == 0 ? new String[] {"#"} : keys) {
                channel.queueBind(queue, exchange, key);
            }
            return new StormEvents(amqpUrl, exchange, connection, channel, queue);
        } catch (IOException | RuntimeException e) {
            connection.abort();
            throw e;
        }
    }

    /**
     * The ledger's flags for its events: the broker, the exchange, a short lease (an event whose mark a
     * kill interrupted is sent again once its lease passes) and fast polls (one event per account and
     * poll, their ordering key: the drain at the end takes fewer polls).
     */
    List<String> ledgerArgs() {
        return ledgerArgs(50);
    }

    /** {@link #ledgerArgs} with a poll of {@code pollMs} instead. */
    List<String> ledgerArgs(int pollMs) {
        List<String> args = new java.util.ArrayList<>(List.of("--amqp-url=" + amqpUrl));
        args.addAll(exchangeArgs(pollMs));
        return args;
    }

    /** {@link #ledgerArgs} without the broker's URL, for a ledger given it already. */
    List<String> exchangeArgs() {
        return exchangeArgs(50);
    }

    private List<String> exchangeArgs(int pollMs) {
        return List.of("--events-exchange=" + exchange, "--events-lease-ms=3000", "--events-poll-ms=" + pollMs);
    }

    /** A transfer queue of the storm's own, for a ledger that needs one to reach the broker ({@link Storm}'s). */
    List<String> transferQueueArgs() {
        return List.of("--queue=" + transferQueue, "--queue-consumers=1");
    }

    /** Starts the read model's consumer on the queue, its table in the ledger's {@code schema}. */
    void startReadModel(SideDatabase db, String schema) throws IOException, SQLException {
        readModel = EventReadModel.start(db, schema, connection, queue);
    }

    /**
     * With {@code kills} above 0, starts a second relay of the events over the ledger's {@code schema}
     * in a process of its own ({@link RelayChaos}), to be SIGKILLed mid-batch that many times.
     */
    void startRelay(StormDatabase database, SideDatabase db, String schema, int kills) throws IOException {
        if (kills > 0) {
            relay = RelayChaos.start(database, db, schema, amqpUrl, kills);
        }
    }

    /** The relay kills during the load ({@link RelayChaos#killDuringLoad}); nothing without a relay process. */
    void killRelayDuringLoad(
            java.util.concurrent.atomic.AtomicBoolean running,
            java.util.concurrent.atomic.AtomicInteger done,
            int total,
            java.io.PrintStream progress) {
        if (relay != null) {
            relay.killDuringLoad(running, done, total, progress);
        }
    }

    /**
     * Once {@code done} reaches half of {@code total} (unless the load ended first), has the broker close
     * this run's connections: the ledger's events connection (its relay's) and the read model's, found by
     * the exchange in their names ({@code rabbitmqctl}; without it, says so and does nothing). Both
     * recover by themselves; what was unconfirmed or unacknowledged is sent or delivered again.
     */
    void closeConnectionsMidway(
            java.util.concurrent.atomic.AtomicBoolean running,
            java.util.concurrent.atomic.AtomicInteger done,
            int total,
            java.io.PrintStream progress) {
        while (running.get() && done.get() < total / 2) {
            ChildProcesses.sleep(50);
        }
        if (!running.get()) {
            return;
        }
        try {
            String listing = rabbitmqctl("-q", "list_connections", "pid", "client_properties");
            for (String line : listing.split("\n")) {
                if (line.contains(exchange + "\"") || line.contains(exchange + ">>")) {
                    String pid = line.substring(0, line.indexOf('\t')).trim();
                    rabbitmqctl("close_connection", pid, "storm: a broker fault");
                    brokerCloses.incrementAndGet();
                }
            }
            progress.println("storm: the broker closed " + brokerCloses.get() + " events connections mid-load");
        } catch (IOException | RuntimeException e) {
            progress.println("storm: could not have the broker close the events connections: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String rabbitmqctl(String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of("rabbitmqctl"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out.strip());
        }
        return out;
    }

    /** The exchange's name. */
    String exchange() {
        return exchange;
    }

    /** The read model: what reached the queue ({@link #startReadModel} first). */
    EventReadModel readModel() {
        return readModel;
    }

    /**
     * Waits until the relay has nothing pending and the read model has applied every message (at most two
     * minutes in all; what is missing then fails the checks below), and adds the checks to {@code results}.
     */
    void check(SideDatabase db, String schema, Map<String, Boolean> results, java.io.PrintStream progress)
            throws SQLException, IOException, InterruptedException {
        String outbox = schema + ".idempotency_outbox WHERE destination = '" + exchange + "'";
        long start = System.nanoTime();
        long until = start + DRAIN_NANOS;
        long pending;
        while ((pending = db.count("SELECT count(*) FROM " + outbox + " AND status = 'pending'")) > 0
                && System.nanoTime() < until) {
            Thread.sleep(200);
        }
        double relayed = (System.nanoTime() - start) / 1e9;
        // the read model has applied every message the outbox holds, and the queue is empty
        while ((db.count("SELECT count(DISTINCT message_id) FROM " + schema + "." + EventReadModel.TABLE)
                                < db.count("SELECT count(*) FROM " + outbox)
                        || channel.messageCount(queue) > 0)
                && System.nanoTime() < until) {
            Thread.sleep(200);
        }
        double waited = (System.nanoTime() - start) / 1e9;
        Map<String, Integer> seen = new HashMap<>(readModel.seen);
        long deliveries = readModel.deliveries.get();
        // deposits and transfers are announced; a payout's movements are not (its event, payout.paid, is
        // the payout's: PayoutEvents checks it)
        Set<String> transfers =
                db.strings("SELECT id FROM " + schema + ".transfer WHERE kind IN ('deposit', 'transfer')");
        Map<String, Integer> perTransfer = new HashMap<>();
        Set<String> messageIds = new HashSet<>();
        Set<String> delivered = new HashSet<>();
        long rows = db.count("SELECT count(*) FROM " + outbox);
        db.query(
                "SELECT message_id, status, convert_from(payload, 'UTF8')::jsonb ->> 'id', name FROM " + outbox, rs -> {
                    messageIds.add(rs.getString(1));
                    if ("delivered".equals(rs.getString(2))) {
                        delivered.add(rs.getString(1));
                    }
                    if (TRANSFER_EVENTS.contains(rs.getString(4))) {
                        perTransfer.merge(String.valueOf(rs.getString(3)), 1, Integer::sum);
                    }
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
                        + " pending after %.1f s, applied after %.1f s), %d deliveries on the queue (%d distinct ids, %d seen more than"
                        + " once)%n",
                transfers.size(),
                rows,
                messageIds.size(),
                delivered.size(),
                pending,
                relayed,
                waited,
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
        long left = db.count("SELECT count(*) FROM " + outbox + " AND (status = 'pending' OR lease_owner IS NOT NULL)");
        results.put("no outbox message left pending or leased after the drain (" + left + ")", left == 0);
        if (relay != null) {
            relay.check(delivered, seen.keySet(), results, progress);
        }
        results.put(
                "every outbox message reached the events queue at least once (" + (messageIds.size() - notSeen.size())
                        + " of " + messageIds.size() + ", in " + deliveries + " deliveries)",
                notSeen.isEmpty());
        results.put(
                "every message on the events queue is an outbox message (" + foreign.size() + " others)",
                foreign.isEmpty());
        String model = schema + "." + EventReadModel.TABLE;
        long rowsApplied = db.count("SELECT count(*) FROM " + model);
        long appliedOnce = db.count("SELECT count(*) FROM (SELECT r.message_id FROM " + model + " r JOIN " + schema
                + ".idempotency_outbox o ON o.message_id = r.message_id AND o.destination = '" + exchange + "'"
                + " AND o.status = 'delivered' AND (convert_from(o.payload, 'UTF8')::jsonb ->> 'id')::uuid = r.transfer_id"
                + " GROUP BY r.message_id HAVING count(*) = 1) x");
        progress.printf(
                "storm: read model: %d deliveries, %d requeued (a kill, or a copy still running), %d dead-lettered,"
                        + " %d rows%s%n",
                deliveries,
                readModel.requeued.get(),
                readModel.deadLettered.get(),
                rowsApplied,
                brokerCloses.get() == 0 ? "" : "; " + brokerCloses.get() + " events connections closed mid-load");
        results.put(
                "the read model applied every delivered event exactly once (" + appliedOnce + " of " + delivered.size()
                        + ", " + rowsApplied + " rows, " + readModel.deadLettered.get() + " dead-lettered)",
                appliedOnce == delivered.size()
                        && rowsApplied == delivered.size()
                        && readModel.deadLettered.get() == 0);
    }

    /** Deletes the queues (the storm's and the ledger's transfer queue) and the exchange. */
    @Override
    public void close() {
        if (relay != null) {
            relay.close();
        }
        if (readModel != null) {
            readModel.close();
        }
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
