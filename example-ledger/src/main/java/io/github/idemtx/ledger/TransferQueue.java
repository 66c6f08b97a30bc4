package io.github.idemtx.ledger;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.http.StoredResponse;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.keys.DerivedKeys;
import io.github.idemtx.messaging.Acknowledgement;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The ledger's second front door: transfer intents from a RabbitMQ queue, each applied exactly once
 * however often the broker delivers it.
 *
 * <ul>
 *   <li><b>Topology.</b> {@code <queue>}, a quorum queue whose messages this consumer acknowledges
 *       by hand, {@code prefetch} unacknowledged at a time per consumer; {@code <queue>.replies},
 *       where each intent's answer goes; {@code <queue>.dlq}, where a message goes that no delivery
 *       can apply, with the reason in its {@value #REASON_HEADER} header. The broker dead-letters
 *       there too a message delivered {@value #BROKER_DELIVERY_LIMIT} times (one that kills its
 *       consumer each time).
 *   <li><b>One transaction.</b> The key (the intent's, {@link TransferIntent}), the transfer and the
 *       recorded answer commit together in {@link IdempotentTransaction#run}; the message is
 *       acknowledged only after that, and after its answer was published and confirmed by the broker.
 *       A consumer killed in between gets the message redelivered: the same key replays the recorded
 *       answer, which is published again, byte for byte, and acknowledged.
 *   <li><b>Each outcome</b>, as {@link Acknowledgement} decides: an executed or replayed transfer
 *       and a recorded refusal (insufficient funds, an unknown account) are answered and
 *       acknowledged; a key reused for other content and an undecodable message (whatever failed in
 *       decoding it or deriving its key) are dead-lettered, the latter at once and before anything is
 *       written, and so is an intent older than the claims' ttl (less {@link #CLOCK_SKEW}), whose
 *       earlier application's claim may have expired, or dated more than {@link #CLOCK_SKEW} in the
 *       future, for which the same argument fails; a failure that recorded nothing (the database
 *       unreachable, an account's row lock not granted within {@code lockTimeoutMillis}) is tried again here with
 *       backoff ({@value #ATTEMPTS} attempts), then the message is requeued, and dead-lettered with
 *       the reason at its {@code deliveryLimit}-th delivery; a failure no message can get past
 *       (the claim table missing, a call that would join a transaction: the ledger's door owns its
 *       transactions, {@code TransactionMode.OWN}) puts the message back and stops consuming.
 * </ul>
 *
 * <p>Replies carry the intent's key as {@code message_id}, the producer's {@code correlation_id},
 * and headers {@code status} (the HTTP status the same transfer would have answered) and
 * {@code outcome} ({@code executed}, {@code replayed}, {@code rejected}); the body is the answer's
 * JSON, the same bytes on every delivery.
 */
final class TransferQueue implements AutoCloseable {

    /** The dead-letter queue's header with the reason. */
    static final String REASON_HEADER = LedgerConfig.Queue.REASON_HEADER;
    /** The broker's own bound on deliveries, for a message that kills its consumer before any decision. */
    static final int BROKER_DELIVERY_LIMIT = 50;
    /** Attempts per delivery of a failure that recorded nothing, before the message is requeued. */
    static final int ATTEMPTS = 3;
    /** The exit status of {@code --queue-fault-halt-every}'s halt before the answer was published. */
    static final int HALT_BEFORE_ANSWER = LedgerConfig.Queue.HALT_BEFORE_ANSWER;
    /** The exit status of {@code --queue-fault-halt-every}'s halt after the answer, before the acknowledgement. */
    static final int HALT_BEFORE_ACK = LedgerConfig.Queue.HALT_BEFORE_ACK;

    private final LedgerConfig.Queue config;
    private final IdempotentTransaction<StoredResponse> idempotent;
    private final Ledger ledger;
    private final DerivedKeys keys;
    private final Duration maxAge;
    private final Connection connection;
    private final AtomicInteger executed = new AtomicInteger();
    private final java.util.concurrent.atomic.AtomicBoolean stopped = new java.util.concurrent.atomic.AtomicBoolean();
    private final List<Channel> channels = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Map<Channel, List<String>> consumerTags = new java.util.concurrent.ConcurrentHashMap<>();

    private TransferQueue(
            LedgerConfig.Queue config, IdempotentTransaction<StoredResponse> idempotent, Ledger ledger, Duration ttl)
            throws IOException, TimeoutException {
        this.config = config;
        this.idempotent = idempotent;
        this.ledger = ledger;
        this.keys = TransferIntent.derivedKeys(config.keySecret());
        this.maxAge = maxAge(ttl);
        this.connection = factory(config.amqpUrl()).newConnection("ledger-transfers");
        try {
            try (Channel channel = connection.createChannel()) {
                declare(channel, config.name());
            }
            for (int i = 0; i < config.consumers(); i++) {
                Channel channel = connection.createChannel();
                channel.basicQos(config.prefetch());
                channel.confirmSelect(); // answers and dead letters are confirmed before the acknowledgement
                String consumerTag = channel.basicConsume(config.name(), false, "ledger-" + i, new Deliveries(channel));
                channels.add(channel);
                consumerTags.put(channel, List.of(consumerTag));
            }
        } catch (IOException | RuntimeException e) {
            connection.abort(); // never throws
            throw e;
        }
    }

    /**
     * Declares the queues and starts {@code config.consumers()} consumers.
     *
     * @throws BrokerUnavailableException when no broker answers at the URL, naming it and how to start one
     */
    static TransferQueue start(
            LedgerConfig.Queue config, IdempotentTransaction<StoredResponse> idempotent, Ledger ledger, Duration ttl) {
        for (int attempt = 1; ; attempt++) {
            try {
                return new TransferQueue(config, idempotent, ledger, ttl);
            } catch (TimeoutException | IOException | ShutdownSignalException e) {
                ShutdownSignalException closed = e instanceof ShutdownSignalException s
                        ? s
                        : e.getCause() instanceof ShutdownSignalException s ? s : null;
                if (closed != null
                        && closed.getReason() instanceof AMQP.Connection.Close close
                        && close.getReplyCode() == AMQP.CONNECTION_FORCED
                        && attempt < 10) {
                    // an operator (or storm --queue) closed the connection while the queues were being set up
                    pause(Duration.ofMillis(500), 1);
                    continue;
                }
                throw new BrokerUnavailableException(describe(config.amqpUrl(), e, closed), e);
            }
        }
    }

    /** What went wrong at the broker, in words that name the cause: unreachable, credentials, or a refusal. */
    private static String describe(String url, Exception e, ShutdownSignalException closed) {
        String at = "RabbitMQ at " + url.replaceAll("//[^@/]*@", "//");
        if (e instanceof com.rabbitmq.client.AuthenticationFailureException) {
            return at + " refused the credentials of LEDGER_AMQP_URL (" + e.getMessage() + ")";
        }
        if (closed != null && closed.getReason() instanceof AMQP.Channel.Close refusal) {
            return at + " refused to set up the queues: " + refusal.getReplyText()
                    + " (a queue of that name declared with other arguments? delete it or choose another LEDGER_QUEUE)";
        }
        if (closed != null && closed.getReason() instanceof AMQP.Connection.Close close) {
            return at + " closed the connection: " + close.getReplyText();
        }
        return "no " + at + " answers (" + e + "); start one (rabbitmq-server -detached, or docker run -p"
                + " 5672:5672 rabbitmq:3) or unset LEDGER_AMQP_URL";
    }

    /** No broker answers, or it refused the queue's declaration: the message says which and what to do. */
    static final class BrokerUnavailableException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BrokerUnavailableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A connection factory for {@code url} that recovers from a lost connection within about a second. */
    static ConnectionFactory factory(String url) {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(url);
        } catch (Exception e) {
            throw new IllegalArgumentException("LEDGER_AMQP_URL (--amqp-url) is no AMQP URI: " + e.getMessage());
        }
        factory.setAutomaticRecoveryEnabled(true);
        factory.setTopologyRecoveryEnabled(true);
        factory.setNetworkRecoveryInterval(500);
        factory.setConnectionTimeout(5_000);
        factory.setRequestedHeartbeat(10);
        return factory;
    }

    /** The queue, its replies and its dead letters; declaring them again with the same arguments changes nothing. */
    static void declare(Channel channel, String queue) throws IOException {
        Map<String, Object> quorum = Map.of("x-queue-type", "quorum");
        channel.queueDeclare(queue + ".dlq", true, false, false, quorum);
        channel.queueDeclare(queue + ".replies", true, false, false, quorum);
        channel.queueDeclare(
                queue,
                true,
                false,
                false,
                Map.of(
                        "x-queue-type",
                        "quorum",
                        "x-delivery-limit",
                        BROKER_DELIVERY_LIMIT,
                        "x-dead-letter-exchange",
                        "",
                        "x-dead-letter-routing-key",
                        queue + ".dlq"));
    }

    /** Closes the connection; what was delivered and not acknowledged goes back to the queue. */
    @Override
    public void close() {
        try {
            connection.close(5_000);
        } catch (IOException | RuntimeException e) {
            System.err.println("ledger: closing the queue's connection: " + e);
        }
    }

    /** One consumer: its channel's deliveries, one at a time, on the client's dispatch thread for the channel. */
    private final class Deliveries extends DefaultConsumer {

        Deliveries(Channel channel) {
            super(channel);
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
            long deliveryTag = envelope.getDeliveryTag();
            try {
                handle(getChannel(), deliveryTag, properties, body);
            } catch (IOException | TimeoutException | RuntimeException e) {
                // the channel or its connection went away (an acknowledgement or a confirm failed): the broker
                // delivers the message again, and its key replays whatever was committed
                System.err.println("ledger: queue delivery " + deliveryTag + " left unacknowledged: " + e);
                try {
                    getChannel().basicNack(deliveryTag, false, true);
                } catch (IOException | RuntimeException ignored) {
                    // closed: the broker requeues it anyway
                }
            }
        }
    }

    private void handle(Channel channel, long tag, AMQP.BasicProperties properties, byte[] body)
            throws IOException, TimeoutException {
        TransferIntent intent;
        try {
            intent = TransferIntent.decode(properties.getMessageId(), body, keys);
        } catch (TransferIntent.Undecodable e) {
            deadLetter(channel, tag, properties, body, Acknowledgement.deadLetter("undecodable: " + e.getMessage()));
            return;
        } catch (RuntimeException e) {
            // no message decodes by being delivered again: only channel and database faults requeue
            deadLetter(channel, tag, properties, body, Acknowledgement.deadLetter("undecodable: " + e));
            return;
        }
        Duration age = Duration.between(intent.createdAt(), Instant.now());
        if (age.compareTo(CLOCK_SKEW.negated()) < 0) {
            // maxAge's argument needs the creation in the past: a claim committed now expires ttl from now,
            // before a redelivery at createdAt + maxAge if createdAt were far ahead
            deadLetter(
                    channel,
                    tag,
                    properties,
                    body,
                    Acknowledgement.deadLetter("dated in the future: created at " + intent.createdAt() + ", "
                            + age.negated().toSeconds() + " s ahead of this consumer's clock, more than the "
                            + CLOCK_SKEW.toSeconds() + " s allowed for clock skew; fix the producer's clock"));
            return;
        }
        if (age.compareTo(maxAge) > 0) {
            // its first application's claim may have expired and been purged: applying it could apply it twice
            deadLetter(
                    channel,
                    tag,
                    properties,
                    body,
                    Acknowledgement.deadLetter(
                            "too old to apply safely: created " + age.toSeconds()
                                    + " s ago, and keys are kept " + maxAge.toSeconds()
                                    + " s (the claims' ttl less a minute for clock skew); an earlier delivery's claim may be gone"));
            return;
        }
        Outcome<StoredResponse> outcome = null;
        Acknowledgement ack = null;
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            try {
                outcome = idempotent.run(intent.scope(), intent.key(), intent.fingerprint(), tx -> {
                    // a row lock held elsewhere fails this attempt in time, rather than holding a consumer
                    tx.execute("SET LOCAL lock_timeout = " + config.lockTimeoutMillis());
                    return LedgerJson.transfer(
                            ledger.transfer(tx, intent.tenant(), intent.from(), intent.to(), intent.amount()), 201);
                });
                ack = Acknowledgement.of(outcome);
            } catch (RuntimeException | Error e) { // an Error escaping here would leave the consumer stuck
                outcome = null;
                ack = Acknowledgement.of(e);
            }
            if (ack.action() != Acknowledgement.Action.RETRY || attempt == ATTEMPTS) {
                break;
            }
            pause(ack.retryAfter(), attempt);
        }
        ack = ack.giveUpAfter(deliveries(properties), config.deliveryLimit());
        switch (ack.action()) {
            case ACK -> {
                int halt = outcome instanceof Outcome.Executed<StoredResponse> ? faultHalt() : 0;
                if (halt == HALT_BEFORE_ANSWER) {
                    halt(halt);
                }
                answer(channel, intent, properties, outcome);
                if (halt == HALT_BEFORE_ACK) {
                    halt(halt);
                }
                channel.basicAck(tag, false);
            }
            case RETRY -> {
                System.err.println("ledger: queue message " + intent.key() + " requeued: " + ack.reason());
                channel.basicNack(tag, false, true);
            }
            case DEAD_LETTER -> deadLetter(channel, tag, properties, body, ack);
            case STOP -> {
                channel.basicNack(tag, false, true);
                stopConsuming(ack.reason());
            }
        }
    }

    /**
     * Cancels every consumer of this process, leaving the messages in the queue: no message can be
     * applied until the service or its database is fixed, and parking them all would empty the
     * queue into the dead-letter queue. Loud, for someone to act; the HTTP side keeps serving.
     */
    private void stopConsuming(String reason) {
        if (!stopped.compareAndSet(false, true)) {
            return;
        }
        System.err.println("ledger: ERROR stopped consuming " + config.name() + ": " + reason);
        for (Channel channel : channels) {
            try {
                for (String consumerTag : List.copyOf(consumerTags.getOrDefault(channel, List.of()))) {
                    channel.basicCancel(consumerTag);
                }
            } catch (IOException | RuntimeException e) {
                System.err.println("ledger: cancelling a consumer: " + e);
            }
        }
    }

    /** Publishes the intent's answer to the replies queue and waits for the broker's confirm. */
    private void answer(
            Channel channel, TransferIntent intent, AMQP.BasicProperties request, Outcome<StoredResponse> outcome)
            throws IOException, TimeoutException {
        StoredResponse response;
        String kind;
        switch (outcome) {
            case Outcome.Executed<StoredResponse> e -> {
                response = e.value();
                kind = "executed";
            }
            case Outcome.Replayed<StoredResponse> r -> {
                response = r.value();
                kind = "replayed";
            }
            case Outcome.Rejected<StoredResponse> f -> {
                response = LedgerJson.rejection(f.failure());
                kind = "rejected";
            }
            default -> throw new IllegalStateException("no answer for " + outcome); // Acknowledgement acks no other
        }
        Map<String, Object> headers = new HashMap<>();
        headers.put("status", response.status());
        headers.put("outcome", kind);
        AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                .messageId(intent.key().value())
                .correlationId(request.getCorrelationId())
                .contentType("application/json")
                .deliveryMode(2)
                .headers(headers)
                .build();
        channel.basicPublish("", config.name() + ".replies", properties, response.body());
        confirm(channel);
    }

    /** Publishes the message to the dead-letter queue with the reason, waits for the confirm, acknowledges it. */
    private void deadLetter(Channel channel, long tag, AMQP.BasicProperties request, byte[] body, Acknowledgement ack)
            throws IOException, TimeoutException {
        System.err.println("ledger: queue message " + request.getMessageId() + " dead-lettered: " + ack.reason());
        Map<String, Object> headers = new HashMap<>(request.getHeaders() == null ? Map.of() : request.getHeaders());
        headers.put(REASON_HEADER, ack.reason());
        AMQP.BasicProperties properties =
                request.builder().headers(headers).deliveryMode(2).build();
        channel.basicPublish("", config.name() + ".dlq", properties, body);
        confirm(channel);
        channel.basicAck(tag, false);
    }

    /** Waits up to 10 s for the broker to confirm what this channel published; fails otherwise. */
    private static void confirm(Channel channel) throws IOException, TimeoutException {
        try {
            channel.waitForConfirmsOrDie(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the broker's confirm", e);
        }
    }

    /**
     * The oldest intent this consumer applies: the claims' {@code ttl} less a minute for the
     * producer's clock. A claim expires {@code ttl} after its commit, and its commit came after the
     * intent's creation, so while an intent is younger than the ttl every earlier application of it
     * still has its claim, and a redelivery replays it.
     */
    static Duration maxAge(Duration ttl) {
        return ttl.minus(CLOCK_SKEW).isNegative() ? Duration.ZERO : ttl.minus(CLOCK_SKEW);
    }

    /**
     * How far a producer's clock may differ from this consumer's: an intent is applied from
     * {@code CLOCK_SKEW} before its {@code createdAt} (a producer's clock ahead) to {@link #maxAge}
     * after it. An intent dated further ahead is dead-lettered: applied now, its claim would expire
     * {@code ttl} from now, before a redelivery accepted up to {@code createdAt + maxAge} would come.
     */
    static final Duration CLOCK_SKEW = Duration.ofMinutes(1);

    /** This delivery's number, 1 for the first: a quorum queue counts the earlier ones in {@code x-delivery-count}. */
    static int deliveries(AMQP.BasicProperties properties) {
        Object count =
                properties.getHeaders() == null ? null : properties.getHeaders().get("x-delivery-count");
        return count instanceof Number n ? (int) Math.min(Integer.MAX_VALUE - 1, n.longValue()) + 1 : 1;
    }

    /**
     * {@code --queue-fault-halt-every=N}: for the N-th transfer this process executed, where to halt
     * ({@link #HALT_BEFORE_ANSWER} or {@link #HALT_BEFORE_ACK}, at random); else 0.
     */
    private int faultHalt() {
        int n = executed.incrementAndGet();
        if (config.haltEvery() == 0 || n < config.haltEvery()) {
            return 0;
        }
        return ThreadLocalRandom.current().nextBoolean() ? HALT_BEFORE_ANSWER : HALT_BEFORE_ACK;
    }

    /** Stops the process as a SIGKILL would: no shutdown hook, the broker connection and the pool's just dropped. */
    private static void halt(int status) {
        System.err.println("ledger: --queue-fault-halt-every: halting with status " + status + " after a commit");
        System.err.flush();
        Runtime.getRuntime().halt(status);
    }

    /** Waits before another attempt: the outcome's hint, else 100 ms, 400 ms, ... */
    private static void pause(Duration hint, int attempt) {
        long millis = hint.isZero() ? 100L << (2 * (attempt - 1)) : Math.min(hint.toMillis(), 5_000);
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
