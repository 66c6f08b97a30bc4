package io.github.idemtx.spring.amqp;

import com.rabbitmq.client.Channel;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.Scope;
import io.github.idemtx.http.RequestFingerprint;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.keys.DerivedKeys;
import io.github.idemtx.messaging.Acknowledgement;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.JsonMapperCodec;
import java.io.IOException;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.AmqpException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.MessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import tools.jackson.databind.json.JsonMapper;

/**
 * Applies transfer intents from a RabbitMQ quorum queue exactly once: the claim, the transfer and
 * the recorded answer commit in one transaction, and the message is acknowledged only after it.
 */
public class TransferListener {

    /** The header that says why a message was dead-lettered. */
    public static final String REASON = "x-idemtx-reason";
    /** Deliveries before a message that keeps failing is dead-lettered instead of requeued. */
    public static final int DELIVERY_LIMIT = 5;
    /** The listener container's id, which {@code STOP} stops. */
    public static final String CONTAINER = "transfers";

    private static final Log LOG = LogFactory.getLog(TransferListener.class);

    private static final Duration LONGEST_PAUSE = Duration.ofSeconds(5);
    private static final long CONFIRM_TIMEOUT_MS = 10_000;

    /** A transfer intent as the producer publishes it; {@code createdAt} is set once, by the producer. */
    public record TransferIntent(String tenant, String from, String to, long amountCents, Instant createdAt) {
        public TransferIntent {
            Objects.requireNonNull(tenant, "tenant");
            Objects.requireNonNull(from, "from");
            Objects.requireNonNull(to, "to");
            Objects.requireNonNull(createdAt, "createdAt");
            if (amountCents <= 0) {
                throw new IllegalArgumentException("amountCents must be positive, was " + amountCents);
            }
        }
    }

    /** The result recorded with the claim and replayed to every later delivery of the intent. */
    public record Transfer(long id, String from, String to, long amountCents) {}

    /** What the producer gets on its reply queue: the transfer, or the recorded refusal. */
    public record Answer(
            @Nullable Transfer transfer, @Nullable Failure refusal) {}

    private final DerivedKeys derivedKeys;
    private final JsonMapper json;
    private final RabbitTemplate rabbit;
    private final String deadLetterQueue;
    private final RabbitListenerEndpointRegistry containers;
    private final IdempotentTransaction<Transfer> transfers;
    /** The oldest intent applied: see {@link #tooOld}. */
    private final Duration maxAge;

    // [docs/message-consumers.md: door]
    public TransferListener(
            IdempotentTransactions transactions,
            DerivedKeys derivedKeys,
            JsonMapper json,
            RabbitTemplate rabbit,
            String deadLetterQueue,
            RabbitListenerEndpointRegistry containers) {
        // OWN: run commits before it returns, or refuses (STOP) a call made inside an open transaction,
        // which would return before anything committed and the ack could lose the message
        this.transfers = transactions
                .builder(JsonMapperCodec.of(json, Transfer.class))
                .transactionMode(TransactionMode.OWN)
                .build();
        Duration ttl = transactions.policy().ttl();
        this.maxAge = ttl.compareTo(Duration.ofMinutes(1)) > 0 ? ttl.minusMinutes(1) : Duration.ZERO;
        this.derivedKeys = derivedKeys;
        this.json = json;
        this.rabbit = rabbit;
        this.deadLetterQueue = deadLetterQueue;
        this.containers = containers;
    }

    // [docs/message-consumers.md: end door]

    // [docs/message-consumers.md: listener]
    @RabbitListener(id = CONTAINER, queues = "${transfers.queue}", ackMode = "MANUAL", concurrency = "2")
    public void onTransfer(Message message, Channel channel) throws IOException {
        settle(channel, message, decide(message));
    }

    /** Nothing here acknowledges: the decision is made after {@code run} returned, i.e. after its commit. */
    Acknowledgement decide(Message message) {
        TransferIntent intent;
        Scope scope;
        IdempotencyKey key;
        Fingerprint fingerprint;
        try {
            intent = json.readValue(message.getBody(), TransferIntent.class);
            // the queue's producers are trusted (broker permissions): the tenant in the intent is the scope
            scope = Scope.of(intent.tenant());
            key = keyOf(message.getMessageProperties(), scope, intent);
            fingerprint = fingerprintOf(intent);
        } catch (RuntimeException e) {
            return Acknowledgement.deadLetter("cannot decode the message, nothing was written: " + e.getMessage());
        }
        if (tooOld(intent)) {
            return Acknowledgement.deadLetter("too old to apply safely: created at " + intent.createdAt()
                    + ", and claims are kept " + maxAge + " (the ttl less a minute for clock skew): an earlier"
                    + " application's claim may be gone, so it could apply twice");
        }
        if (Duration.between(Instant.now(), intent.createdAt()).compareTo(Duration.ofMinutes(1)) > 0) {
            // the ttl argument needs the creation in the past: applied now, the claim would expire too early
            return Acknowledgement.deadLetter("dated in the future: created at " + intent.createdAt()
                    + ", more than the minute allowed for clock skew ahead of this consumer's clock");
        }
        Acknowledgement ack;
        try {
            Outcome<Transfer> outcome = transfers.run(scope, key, fingerprint, tx -> apply(tx, intent));
            ack = Acknowledgement.of(outcome);
            if (ack.action() == Acknowledgement.Action.ACK) {
                answer(message, key, outcome); // before the ack: a redelivery answers again, identically
            }
        } catch (RuntimeException | Error e) { // nothing recorded: the same key runs again on the next delivery
            ack = Acknowledgement.of(e);
        }
        return ack.giveUpAfter(deliveries(message), DELIVERY_LIMIT); // every RETRY, bounded
    }

    /**
     * A claim expires {@code ttl} after its commit, and its commit came after the intent's creation:
     * while an intent is younger than the ttl (less a minute for the producer's clock), every earlier
     * application of it still has its claim and a redelivery replays. An older one might apply twice.
     */
    boolean tooOld(TransferIntent intent) {
        return Duration.between(intent.createdAt(), Instant.now()).compareTo(maxAge) > 0;
    }

    /**
     * Over the decoded intent, a fixed serialisation of its fields: the same intent however its JSON
     * was spelled (whitespace, member order, {@code 1.0} or {@code 1}, {@code ...00Z} or
     * {@code ...00.000Z}), and fields the consumer ignores do not count.
     */
    Fingerprint fingerprintOf(TransferIntent intent) {
        Map<String, Object> fields = Map.of(
                "tenant", intent.tenant(),
                "from", intent.from(),
                "to", intent.to(),
                "amountCents", intent.amountCents(),
                "createdAt", intent.createdAt().toString());
        return Fingerprint.sha256(RequestFingerprint.canonicalJson(json.writeValueAsBytes(fields)));
    }

    /**
     * The intent's key: the producer's intent id (AMQP {@code message_id}), else one derived from the
     * intent's fields and creation instant. Never the delivery tag, a timestamp of the delivery or a
     * random id: those differ on a redelivery, and the transfer would be applied twice.
     */
    IdempotencyKey keyOf(MessageProperties properties, Scope scope, TransferIntent intent) {
        String intentId = properties.getMessageId();
        if (intentId != null) {
            return IdempotencyKey.of(intentId);
        }
        Map<String, Object> fields = Map.of(
                "from", intent.from(),
                "to", intent.to(),
                "amount", BigDecimal.valueOf(intent.amountCents(), 2));
        return derivedKeys.derive(scope, fields, intent.createdAt());
    }

    /** The one place a delivery is settled: acknowledged, requeued, parked with its reason, or stopped. */
    protected void settle(Channel channel, Message message, Acknowledgement ack) throws IOException {
        long tag = message.getMessageProperties().getDeliveryTag();
        switch (ack.action()) {
            case ACK -> channel.basicAck(tag, false);
            case RETRY -> {
                pause(ack.retryAfter(), deliveries(message)); // backoff, bounded; the next delivery counts
                channel.basicNack(tag, false, true);
            }
            case DEAD_LETTER -> {
                try {
                    park(message, ack.reason());
                } catch (AmqpException e) { // not parked: keep it in the queue, never lose it
                    channel.basicNack(tag, false, true);
                    return;
                }
                channel.basicAck(tag, false);
            }
            case STOP -> {
                channel.basicNack(tag, false, true); // back in the queue, for the consumer once it is fixed
                stopConsuming(ack.reason());
            }
        }
    }

    /**
     * No message can be applied until the code or setup changes: stop taking them, rather than
     * failing (or parking) the whole backlog, and say why. From another thread: a container waits
     * for its listeners to return before it stops.
     */
    private void stopConsuming(String reason) {
        LOG.error("stopping the consumer of " + CONTAINER + ", the message is back in the queue: " + reason);
        MessageListenerContainer container = containers.getListenerContainer(CONTAINER);
        if (container != null) {
            Thread.ofVirtual().name("stop-" + CONTAINER).start(container::stop);
        }
    }

    /**
     * Publishes a copy to the dead-letter queue with the reason in a header and waits for the
     * broker's confirm; only then is the original acknowledged (a consumer dying between the two
     * parks it twice, never zero times).
     */
    private void park(Message message, String reason) {
        Message parked = MessageBuilder.fromClonedMessage(message)
                .removeHeader("x-delivery-count")
                .setHeader(REASON, reason)
                .build();
        rabbit.invoke(ops -> {
            ops.send("", deadLetterQueue, parked);
            ops.waitForConfirmsOrDie(CONFIRM_TIMEOUT_MS);
            return null;
        });
    }

    /** This delivery's number: 1, plus the deliveries before it that the quorum queue counted. */
    static int deliveries(Message message) {
        Object earlier = message.getMessageProperties().getHeader("x-delivery-count");
        return earlier instanceof Number n ? n.intValue() + 1 : 1;
    }

    // [docs/message-consumers.md: end listener]

    /** The business write, through {@code tx} only; a refusal is recorded and replayed like a result. */
    private static Transfer apply(DSLContext tx, TransferIntent intent) {
        int debited = tx.execute(
                "update account set balance_cents = balance_cents - ?"
                        + " where tenant = ? and id = ? and balance_cents >= ?",
                intent.amountCents(),
                intent.tenant(),
                intent.from(),
                intent.amountCents());
        if (debited == 0) {
            throw new Rejection(
                    "insufficient-funds", "account " + intent.from() + " cannot pay " + intent.amountCents());
        }
        int credited = tx.execute(
                "update account set balance_cents = balance_cents + ? where tenant = ? and id = ?",
                intent.amountCents(),
                intent.tenant(),
                intent.to());
        if (credited == 0) {
            throw new Rejection("unknown-account", "no account " + intent.to());
        }
        Number id = (Number) tx.fetchValue(
                "insert into transfer (tenant, from_account, to_account, amount_cents) values (?, ?, ?, ?) returning id",
                intent.tenant(),
                intent.from(),
                intent.to(),
                intent.amountCents());
        return new Transfer(id.longValue(), intent.from(), intent.to(), intent.amountCents());
    }

    /** To the producer's reply queue, if it named one; correlated by the key. */
    private void answer(Message request, IdempotencyKey key, Outcome<Transfer> outcome) {
        String replyTo = request.getMessageProperties().getReplyTo();
        Answer answer = switch (outcome) {
            case Outcome.Executed<Transfer> e -> new Answer(e.value(), null);
            case Outcome.Replayed<Transfer> r -> new Answer(r.value(), null);
            case Outcome.Rejected<Transfer> f -> new Answer(null, f.failure());
            default -> throw new IllegalStateException("no answer for " + outcome);
        };
        if (replyTo != null) {
            boolean replayed = outcome instanceof Outcome.Replayed<Transfer>
                    || outcome instanceof Outcome.Rejected<Transfer> f && f.replayed();
            rabbit.send(
                    "",
                    replyTo,
                    MessageBuilder.withBody(json.writeValueAsBytes(answer))
                            .setContentType(MessageProperties.CONTENT_TYPE_JSON)
                            .setCorrelationId(key.value())
                            .setHeader("idempotent-replayed", replayed)
                            .build());
        }
    }

    /** The outcome's hint, at least a doubling backoff per delivery, at most {@link #LONGEST_PAUSE}. */
    private static void pause(Duration hint, int deliveries) {
        Duration backoff = Duration.ofMillis(100L << Math.min(deliveries - 1, 6));
        Duration pause = hint.compareTo(backoff) > 0 ? hint : backoff;
        try {
            Thread.sleep(pause.compareTo(LONGEST_PAUSE) > 0 ? LONGEST_PAUSE : pause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
