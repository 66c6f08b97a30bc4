package io.github.idemtx.spring.amqp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.rabbitmq.client.Channel;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.keys.DerivedKeys;
import io.github.idemtx.messaging.Acknowledgement;
import io.github.idemtx.spring.Committed;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.amqp.TransferListener.Answer;
import io.github.idemtx.spring.amqp.TransferListener.TransferIntent;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.connection.ChannelProxy;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.MessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@link TransferListener}, the example of docs/message-consumers.md, against a real RabbitMQ (quorum
 * queues: 3.10 or later) and PostgreSQL. Each run declares queues of its own and deletes them when
 * its context closes. Everything waited for is a bounded poll; nothing is timed.
 */
@DatabaseTest
@SpringBootTest(
        classes = {TransfersApplication.class, TransferListenerTest.Observed.class},
        properties = "spring.main.allow-bean-definition-overriding=true", // Observed's listener replaces the app's
        webEnvironment = SpringBootTest.WebEnvironment.NONE)
@DirtiesContext
class TransferListenerTest {

    static final String HOST = "127.0.0.1";
    static final int PORT = 5672;
    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final String QUEUE = "idemtx-test-transfers-" + RUN;
    static final String DEAD_LETTERS = QUEUE + ".dead";
    /** Only a guard against a hang, generous for a noisy machine; nothing is timed. */
    static final Duration PATIENCE = Duration.ofSeconds(120);

    @BeforeAll
    static void brokerAnswers() {
        boolean answers;
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(HOST, PORT), 2000);
            answers = true;
        } catch (IOException e) {
            answers = false;
        }
        if (!answers) {
            System.err.println("WARNING: TransferListenerTest skipped: no RabbitMQ at " + HOST + ":" + PORT
                    + " (guest/guest). Start one with `rabbitmq-server -detached`, or"
                    + " `docker run -d -p 5672:5672 rabbitmq:3`.");
        }
        assumeTrue(answers, "no RabbitMQ at " + HOST + ":" + PORT + ": start one with `rabbitmq-server -detached`");
    }

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        TransfersApplication.properties(
                        HOST, PORT, QUEUE, DEAD_LETTERS, Base64.getEncoder().encodeToString(secret))
                .forEach((k, v) -> registry.add(k, () -> v));
    }

    /** Replaces the application's listener with one that records how each delivery was settled. */
    @TestConfiguration(proxyBeanMethods = false)
    static class Observed {

        @Bean
        TransferListener transferListener(
                IdempotentTransactions transactions,
                DerivedKeys transferKeys,
                JsonMapper json,
                RabbitTemplate rabbit,
                @Value("${transfers.dead-letter-queue}") String deadLetterQueue,
                RabbitListenerEndpointRegistry containers,
                PlatformTransactionManager transactionManager) {
            return new ObservedListener(
                    transactions,
                    transferKeys,
                    json,
                    rabbit,
                    deadLetterQueue,
                    containers,
                    new TransactionTemplate(transactionManager));
        }

        /** The run's queues go when the context closes, after its listener containers stopped. */
        @Bean
        DisposableBean deleteQueues(AmqpAdmin admin) {
            return () -> {
                admin.deleteQueue(QUEUE);
                admin.deleteQueue(DEAD_LETTERS);
            };
        }
    }

    /** How one delivery was settled; {@code action} is null where the consumer died before settling. */
    record Settled(
            @Nullable String messageId,
            Acknowledgement.@Nullable Action action,
            String reason,
            int deliveries,
            boolean redelivered) {}

    static final class ObservedListener extends TransferListener {
        final Queue<Settled> settled = new ConcurrentLinkedQueue<>();
        /** Message ids whose next delivery ends with its consumer's death between commit and ack. */
        final Set<String> dieBeforeAck = ConcurrentHashMap.newKeySet();
        /**
         * Message ids whose deliveries the listener handles inside a Spring transaction of its own, as a
         * {@code @Transactional} listener would: its call must not ack before that commits.
         */
        final Set<String> inSpringTransaction = ConcurrentHashMap.newKeySet();

        private final TransactionTemplate springTransaction;

        ObservedListener(
                IdempotentTransactions transactions,
                DerivedKeys keys,
                JsonMapper json,
                RabbitTemplate rabbit,
                String deadLetterQueue,
                RabbitListenerEndpointRegistry containers,
                TransactionTemplate springTransaction) {
            super(transactions, keys, json, rabbit, deadLetterQueue, containers);
            this.springTransaction = springTransaction;
        }

        @Override
        Acknowledgement decide(Message message) {
            String id = message.getMessageProperties().getMessageId();
            if (id != null && inSpringTransaction.contains(id)) {
                return springTransaction.execute(status -> super.decide(message));
            }
            return super.decide(message);
        }

        @Override
        protected void settle(Channel channel, Message message, Acknowledgement ack) throws IOException {
            MessageProperties p = message.getMessageProperties();
            String id = p.getMessageId();
            if (ack.action() == Acknowledgement.Action.ACK && id != null && dieBeforeAck.remove(id)) {
                // the process dies after the commit (and the answer), before the ack: its channel goes,
                // and the broker delivers the unacknowledged message again
                settled.add(new Settled(id, null, "died before the ack", deliveries(message), p.isRedelivered()));
                Channel target = channel instanceof ChannelProxy proxy ? proxy.getTargetChannel() : channel;
                target.abort();
                return;
            }
            super.settle(channel, message, ack);
            settled.add(new Settled(id, ack.action(), ack.reason(), deliveries(message), p.isRedelivered()));
        }
    }

    @Autowired
    TransferListener listener;

    @Autowired
    RabbitTemplate rabbit;

    @Autowired
    AmqpAdmin admin;

    @Autowired
    JsonMapper json;

    @Autowired
    DerivedKeys transferKeys;

    @Autowired
    IdempotentTransactions transactions;

    @Autowired
    RabbitListenerEndpointRegistry containers;

    private final String tenant = "tenant-" + UUID.randomUUID();
    private final List<String> replyQueues = new ArrayList<>();
    /** What this test class found in the dead-letter queue, by message id. */
    private static final Map<String, Message> PARKED = new ConcurrentHashMap<>();

    private ObservedListener observed;

    @BeforeEach
    void accounts() {
        assertThat(listener)
                .as("the test's listener replaced the application's")
                .isInstanceOf(ObservedListener.class);
        observed = (ObservedListener) listener;
        account("alice", 1000);
        account("bob", 0);
    }

    @AfterEach
    void deleteReplyQueues() {
        replyQueues.forEach(admin::deleteQueue);
    }

    @Test
    void theSameIntentPublishedTwiceAppliesOnceAndBothDeliveriesGetTheSameAnswer() {
        String id = UUID.randomUUID().toString();
        String replies = replyQueue();
        byte[] body = intent("alice", "bob", 300, Instant.now());

        publish(id, body, replies);
        publish(id, body, replies);

        List<Message> answers = receive(replies, 2);
        assertThat(answers)
                .extracting(m -> m.getMessageProperties().getCorrelationId())
                .containsOnly(id);
        assertThat(answers.get(0).getBody())
                .as("identical answers")
                .isEqualTo(answers.get(1).getBody());
        assertThat(answers)
                .extracting(m -> m.getMessageProperties().getHeader("idempotent-replayed"))
                .containsExactlyInAnyOrder(false, true);
        Answer answer = json.readValue(answers.get(0).getBody(), Answer.class);
        assertThat(answer.refusal()).isNull();
        assertThat(answer.transfer().amountCents()).isEqualTo(300);

        awaitSettled(id, 2);
        assertThat(settledOf(id)).extracting(Settled::action).containsOnly(Acknowledgement.Action.ACK);
        assertThat(transfers()).as("applied once").isEqualTo(1);
        assertThat(balance("alice")).isEqualTo(700);
        assertThat(balance("bob")).isEqualTo(300);
        assertThat(claims(id)).isEqualTo(1);
    }

    @Test
    void aRefusalForInsufficientFundsIsRecordedAnsweredAndAcknowledgedAndAnsweredAgainTheSame() {
        String id = UUID.randomUUID().toString();
        String replies = replyQueue();
        byte[] body = intent("alice", "bob", 5000, Instant.now());

        publish(id, body, replies);
        Message first = receive(replies, 1).get(0);
        publish(id, body, replies);
        Message again = receive(replies, 1).get(0);

        Answer answer = json.readValue(first.getBody(), Answer.class);
        assertThat(answer.transfer()).isNull();
        assertThat(answer.refusal().code()).isEqualTo("insufficient-funds");
        assertThat(again.getBody()).as("the recorded refusal, replayed").isEqualTo(first.getBody());
        assertThat(first.getMessageProperties().<Boolean>getHeader("idempotent-replayed"))
                .isFalse();
        assertThat(again.getMessageProperties().<Boolean>getHeader("idempotent-replayed"))
                .isTrue();

        awaitSettled(id, 2);
        assertThat(settledOf(id)).allSatisfy(s -> {
            assertThat(s.action()).isEqualTo(Acknowledgement.Action.ACK);
            assertThat(s.reason()).contains("insufficient-funds");
        });
        assertThat(Committed.count(
                        "select count(*) from {schema}.idempotency_claim where scope = ? and idem_key = ? and state = 2",
                        tenant,
                        id))
                .as("the refusal is recorded with the claim")
                .isEqualTo(1);
        assertThat(transfers()).isZero();
        assertThat(balance("alice")).isEqualTo(1000);
        assertThat(balance("bob")).isZero();
    }

    @Test
    void aConsumerThatDiesBetweenTheCommitAndTheAckGetsTheMessageAgainAndReplaysIt() {
        String id = UUID.randomUUID().toString();
        String replies = replyQueue();
        observed.dieBeforeAck.add(id);

        publish(id, intent("alice", "bob", 250, Instant.now()), replies);

        List<Message> answers = receive(replies, 2);
        assertThat(answers.get(0).getMessageProperties().<Boolean>getHeader("idempotent-replayed"))
                .isFalse();
        assertThat(answers.get(1).getMessageProperties().<Boolean>getHeader("idempotent-replayed"))
                .as("the redelivery replays")
                .isTrue();
        assertThat(answers.get(1).getBody()).isEqualTo(answers.get(0).getBody());
        awaitSettled(id, 2);
        List<Settled> settled = settledOf(id);
        assertThat(settled.get(0).action()).as("died before settling").isNull();
        assertThat(settled.get(1).action()).isEqualTo(Acknowledgement.Action.ACK);
        assertThat(settled.get(1).redelivered()).as("the broker's redelivery").isTrue();
        assertThat(settled.get(1).reason()).startsWith("replayed");
        assertThat(transfers()).as("applied once").isEqualTo(1);
        assertThat(balance("alice")).isEqualTo(750);
        assertThat(balance("bob")).isEqualTo(250);
    }

    @Test
    void aMessageThatCannotBeDecodedIsDeadLetteredWithItsReasonAndNothingIsWritten() {
        String malformed = UUID.randomUUID().toString();
        String invalid = UUID.randomUUID().toString();
        byte[] notJson = "{\"tenant\": \"".getBytes(StandardCharsets.UTF_8);
        byte[] negative = ("{\"tenant\":\"" + tenant + "\",\"from\":\"alice\",\"to\":\"bob\",\"amountCents\":-5,"
                        + "\"createdAt\":\"2026-01-01T00:00:00Z\"}")
                .getBytes(StandardCharsets.UTF_8);

        publish(malformed, notJson, null);
        publish(invalid, negative, null);

        Message parkedMalformed = awaitParked(malformed);
        Message parkedInvalid = awaitParked(invalid);
        assertThat(parkedMalformed.getBody()).as("parked as it came").isEqualTo(notJson);
        assertThat(parkedMalformed.getMessageProperties().<String>getHeader(TransferListener.REASON))
                .startsWith("cannot decode the message, nothing was written");
        assertThat(parkedInvalid.getMessageProperties().<String>getHeader(TransferListener.REASON))
                .startsWith("cannot decode the message, nothing was written")
                .contains("amountCents must be positive");
        awaitSettled(malformed, 1);
        awaitSettled(invalid, 1);
        assertThat(settledOf(malformed))
                .extracting(Settled::action)
                .containsExactly(Acknowledgement.Action.DEAD_LETTER);
        assertThat(Committed.count(
                        "select count(*) from {schema}.idempotency_claim where idem_key in (?, ?)", malformed, invalid))
                .as("no claim")
                .isZero();
        assertThat(transfers()).isZero();
        assertThat(balance("alice")).isEqualTo(1000);
    }

    @Test
    void aKeyReusedForAnotherIntentIsDeadLetteredAndTheFirstIntentStands() {
        String id = UUID.randomUUID().toString();
        String replies = replyQueue();
        publish(id, intent("alice", "bob", 300, Instant.now()), replies);
        receive(replies, 1);

        publish(id, intent("alice", "bob", 400, Instant.now()), replies);

        Message parked = awaitParked(id);
        assertThat(parked.getMessageProperties().<String>getHeader(TransferListener.REASON))
                .contains("already used for a message with other content");
        assertThat(json.readValue(parked.getBody(), TransferIntent.class).amountCents())
                .isEqualTo(400);
        awaitSettled(id, 2);
        assertThat(settledOf(id))
                .extracting(Settled::action)
                .containsExactly(Acknowledgement.Action.ACK, Acknowledgement.Action.DEAD_LETTER);
        assertThat(transfers()).isEqualTo(1);
        assertThat(balance("alice")).isEqualTo(700);
        assertThat(balance("bob")).isEqualTo(300);
    }

    @Test
    void withoutAMessageIdTheKeyIsDerivedFromTheIntentSoARepublishAppliesOnceAndANewIntentApplies() {
        String replies = replyQueue();
        Instant createdAt = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        byte[] body = intent("alice", "bob", 100, createdAt);
        String key = transferKeys
                .derive(
                        Scope.of(tenant),
                        Map.of("from", "alice", "to", "bob", "amount", new java.math.BigDecimal("1.00")),
                        createdAt)
                .value();

        publish(null, body, replies);
        publish(null, body, replies);
        List<Message> answers = receive(replies, 2);
        assertThat(answers)
                .extracting(m -> m.getMessageProperties().getCorrelationId())
                .containsOnly(key);
        assertThat(answers.get(0).getBody()).isEqualTo(answers.get(1).getBody());
        assertThat(transfers()).as("applied once").isEqualTo(1);
        assertThat(claims(key)).isEqualTo(1);

        // the same fields created an hour earlier: another intent, another key
        publish(null, intent("alice", "bob", 100, createdAt.minus(Duration.ofHours(1))), replies);
        Message third = receive(replies, 1).get(0);
        assertThat(third.getMessageProperties().getCorrelationId()).isNotEqualTo(key);
        assertThat(claims(third.getMessageProperties().getCorrelationId()))
                .as("the later intent's own claim")
                .isEqualTo(1);
        assertThat(transfers()).isEqualTo(2);
        assertThat(balance("alice")).isEqualTo(800);
    }

    @Test
    void aFailureThatNeverClearsIsRequeuedWithBackoffThenDeadLetteredAtTheDeliveryLimit() {
        String id = UUID.randomUUID().toString();
        account("carol", Long.MAX_VALUE - 10); // a credit to carol overflows bigint: the work throws, every time

        publish(id, intent("alice", "carol", 100, Instant.now()), null);

        Message parked = awaitParked(id);
        assertThat(parked.getMessageProperties().<String>getHeader(TransferListener.REASON))
                .startsWith("gave up after " + TransferListener.DELIVERY_LIMIT + " deliveries");
        awaitSettled(id, TransferListener.DELIVERY_LIMIT);
        List<Settled> settled = settledOf(id);
        assertThat(settled).extracting(Settled::deliveries).containsExactly(1, 2, 3, 4, 5);
        assertThat(settled.subList(0, TransferListener.DELIVERY_LIMIT - 1))
                .extracting(Settled::action)
                .containsOnly(Acknowledgement.Action.RETRY);
        assertThat(settled.get(TransferListener.DELIVERY_LIMIT - 1).action())
                .isEqualTo(Acknowledgement.Action.DEAD_LETTER);
        assertThat(claims(id)).as("nothing recorded: the key stays free").isZero();
        assertThat(transfers()).isZero();
        assertThat(balance("alice")).as("the debit rolled back").isEqualTo(1000);
    }

    @Test
    void aCallMadeInsideAnOpenSpringTransactionIsRefusedAndTheConsumerStopsWithTheMessageKept() {
        String id = UUID.randomUUID().toString();
        String replies = replyQueue();
        MessageListenerContainer container = containers.getListenerContainer(TransferListener.CONTAINER);
        observed.inSpringTransaction.add(id);
        try {
            publish(id, intent("alice", "bob", 300, Instant.now()), replies);

            awaitSettled(id, 1);
            assertThat(settledOf(id)).allSatisfy(s -> {
                assertThat(s.action()).isEqualTo(Acknowledgement.Action.STOP);
                assertThat(s.reason()).contains("TransactionOwnershipException");
            });
            await("the consumer stopped", () -> stopped(container) ? true : null);
            await("the message back in the queue", () -> messagesIn(QUEUE) == 1 ? true : null);
            assertThat(settledOf(id))
                    .extracting(Settled::action)
                    .as("never acknowledged, never parked")
                    .containsOnly(Acknowledgement.Action.STOP);
            assertThat(claims(id)).as("nothing committed").isZero();
            assertThat(transfers()).isZero();
            assertThat(balance("alice")).isEqualTo(1000);

            // the consumer is fixed (its call owns its transaction again) and restarted: the kept message applies
            observed.inSpringTransaction.remove(id);
            restart(container);
            Answer answer = json.readValue(receive(replies, 1).get(0).getBody(), Answer.class);
            assertThat(answer.transfer().amountCents()).isEqualTo(300);
            await(
                    "the message acknowledged",
                    () -> settledOf(id).getLast().action() == Acknowledgement.Action.ACK ? true : null);
            assertThat(transfers()).as("applied once").isEqualTo(1);
            assertThat(balance("bob")).isEqualTo(300);
        } finally {
            observed.inSpringTransaction.remove(id);
            restart(container);
        }
    }

    @Test
    void anIntentOlderThanTheClaimsTtlIsDeadLetteredBeforeAnyCallAndAYoungerOneApplies() {
        String old = UUID.randomUUID().toString();
        String young = UUID.randomUUID().toString();
        String replies = replyQueue();
        Duration ttl = transactions.policy().ttl();

        publish(old, intent("alice", "bob", 100, Instant.now().minus(ttl)), null);
        publish(young, intent("alice", "bob", 200, Instant.now().minus(ttl).plusSeconds(120)), replies);

        Message parked = awaitParked(old);
        assertThat(parked.getMessageProperties().<String>getHeader(TransferListener.REASON))
                .startsWith("too old to apply safely");
        assertThat(claims(old)).as("no call: nothing written").isZero();

        // dated beyond the clock-skew allowance: the ttl argument needs the creation in the past
        String future = UUID.randomUUID().toString();
        publish(future, intent("alice", "bob", 300, Instant.now().plus(Duration.ofDays(3))), null);
        assertThat(awaitParked(future).getMessageProperties().<String>getHeader(TransferListener.REASON))
                .startsWith("dated in the future");
        assertThat(claims(future)).as("no call: nothing written").isZero();
        receive(replies, 1);
        awaitSettled(young, 1);
        assertThat(settledOf(young)).extracting(Settled::action).containsExactly(Acknowledgement.Action.ACK);
        assertThat(transfers()).as("only the younger one").isEqualTo(1);
        assertThat(balance("bob")).isEqualTo(200);
    }

    @Test
    void theSameIntentSpelledOtherwiseReplaysWhileOtherFieldsAreAMismatch() {
        String id = UUID.randomUUID().toString();
        String replies = replyQueue();
        String createdAt = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        byte[] first = ("{\"tenant\":\"" + tenant + "\",\"from\":\"alice\",\"to\":\"bob\",\"amountCents\":300,"
                        + "\"createdAt\":\"" + createdAt + "\"}")
                .getBytes(StandardCharsets.UTF_8);
        // other member order, whitespace, instant spelling, and a field the consumer does not apply
        byte[] respelled = ("{ \"createdAt\": \"" + createdAt.replace("Z", ".000Z") + "\", \"amountCents\": 300,"
                        + " \"to\": \"bob\", \"from\": \"alice\", \"tenant\": \"" + tenant + "\","
                        + " \"note\": \"resent\" }")
                .getBytes(StandardCharsets.UTF_8);

        publish(id, first, replies);
        publish(id, respelled, replies);

        List<Message> answers = receive(replies, 2);
        // the listener's consumers run side by side: the replay's answer may be sent before the first's
        assertThat(answers)
                .as("the same intent: one executed, one replayed, not a mismatch")
                .filteredOn(
                        m -> Boolean.TRUE.equals(m.getMessageProperties().<Boolean>getHeader("idempotent-replayed")))
                .hasSize(1);
        assertThat(answers.get(1).getBody()).isEqualTo(answers.get(0).getBody());
        assertThat(transfers()).isEqualTo(1);
    }

    // --- helpers

    /** Stopped, its consumers gone: their unacknowledged messages are back in the queue. */
    private static boolean stopped(MessageListenerContainer container) {
        return !container.isRunning()
                && (!(container instanceof SimpleMessageListenerContainer simple)
                        || simple.getActiveConsumerCount() == 0);
    }

    /** Starts it once its stop completed (a container still stopping refuses to start). */
    private static void restart(MessageListenerContainer container) {
        await("the consumer restarted", () -> {
            if (container.isRunning()) {
                return true;
            }
            try {
                container.start();
            } catch (RuntimeException stillStopping) {
                return null;
            }
            return container.isRunning() ? true : null;
        });
    }

    private long messagesIn(String queue) {
        var info = admin.getQueueInfo(queue);
        return info == null ? -1 : info.getMessageCount();
    }

    private byte[] intent(String from, String to, long amountCents, Instant createdAt) {
        return json.writeValueAsBytes(new TransferIntent(tenant, from, to, amountCents, createdAt));
    }

    /** Publishes and waits for the broker's confirm: the message is in the queue when this returns. */
    private void publish(@Nullable String messageId, byte[] body, @Nullable String replyTo) {
        var message = MessageBuilder.withBody(body).setContentType(MessageProperties.CONTENT_TYPE_JSON);
        if (messageId != null) {
            message.setMessageId(messageId);
        }
        if (replyTo != null) {
            message.setReplyTo(replyTo);
        }
        Message built = message.build();
        rabbit.invoke(ops -> {
            ops.send("", QUEUE, built);
            ops.waitForConfirmsOrDie(PATIENCE.toMillis());
            return null;
        });
    }

    private String replyQueue() {
        String name = QUEUE + ".replies-" + UUID.randomUUID().toString().substring(0, 8);
        admin.declareQueue(new org.springframework.amqp.core.Queue(name, false, false, false));
        replyQueues.add(name);
        return name;
    }

    /** The next {@code count} messages of {@code queue}, in order. */
    private List<Message> receive(String queue, int count) {
        List<Message> received = new ArrayList<>();
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (received.size() < count) {
            assertThat(System.nanoTime())
                    .as("%d of %d messages on %s within %s", received.size(), count, queue, PATIENCE)
                    .isLessThan(deadline);
            Message m = rabbit.receive(queue, 1000);
            if (m != null) {
                received.add(m);
            }
        }
        return received;
    }

    /** The dead-letter queue's message with {@code messageId}; others found on the way are kept for their tests. */
    private Message awaitParked(String messageId) {
        return await("a dead-lettered message " + messageId, () -> {
            Message m = rabbit.receive(DEAD_LETTERS, 1000);
            if (m != null && m.getMessageProperties().getMessageId() != null) {
                PARKED.put(m.getMessageProperties().getMessageId(), m);
            }
            return PARKED.get(messageId);
        });
    }

    private void awaitSettled(String messageId, int count) {
        await(
                count + " settled deliveries of " + messageId,
                () -> settledOf(messageId).size() >= count ? true : null);
    }

    private List<Settled> settledOf(String messageId) {
        return observed.settled.stream()
                .filter(s -> messageId.equals(s.messageId()))
                .toList();
    }

    private static <T> T await(String what, Supplier<@Nullable T> poll) {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (true) {
            T value = poll.get();
            if (value != null) {
                return value;
            }
            assertThat(System.nanoTime()).as("%s within %s", what, PATIENCE).isLessThan(deadline);
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    private void account(String id, long balanceCents) {
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement("insert into "
                        + TestDatabase.get().schema() + ".account (tenant, id, balance_cents) values (?, ?, ?)")) {
            ps.setString(1, tenant);
            ps.setString(2, id);
            ps.setLong(3, balanceCents);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private long balance(String account) {
        return Committed.number(
                "select balance_cents from {schema}.account where tenant = ? and id = ?", tenant, account);
    }

    private int transfers() {
        return Committed.count("select count(*) from {schema}.transfer where tenant = ?", tenant);
    }

    private int claims(String key) {
        return Committed.count(
                "select count(*) from {schema}.idempotency_claim where scope = ? and idem_key = ?", tenant, key);
    }
}
