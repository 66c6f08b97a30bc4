package io.github.idemtx.ledger.docs;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.db.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * docs/message-consumers.md's plain RabbitMQ client consumer, {@link PlainClientConsumer}, against
 * the machine's RabbitMQ ({@link LocalBroker}; skipped with a warning where none answers, failed
 * under CI) and the test database: an intent delivered twice applies once, a reused intent id and an
 * undecodable message are parked with their reason, and nothing stays unacknowledged.
 */
@DatabaseTest
class PlainClientConsumerTest {

    private static final TestDatabase DATABASE = TestDatabase.get();
    private static final String QUEUE = "test.plain-client." + UUID.randomUUID();
    private static final String DLQ = QUEUE + ".dlq";

    private static HikariDataSource pool;
    private static DSLContext dsl;
    private static Connection broker;
    private static Channel producer;

    private final String tenant = "tenant-" + UUID.randomUUID();

    @BeforeAll
    static void start() throws Exception {
        LocalBroker.assumeAvailable();
        try (HikariDataSource direct = DATABASE.newServerPool(2)) {
            IdempotencySchema.migrate(direct, DATABASE.schema());
        }
        pool = DATABASE.newPool(4);
        dsl = DSL.using(pool, SQLDialect.POSTGRES);
        PlainClientConsumer.createTable(dsl, DATABASE.schema());

        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(LocalBroker.url());
        broker = factory.newConnection("plain-client-consumer-test");
        producer = broker.createChannel();
        producer.queueDeclare(DLQ, true, false, false, Map.of("x-queue-type", "quorum"));
        producer.queueDeclare(QUEUE, true, false, false, Map.of("x-queue-type", "quorum"));
        new PlainClientConsumer(dsl, DATABASE.schema(), broker.createChannel(), QUEUE, DLQ).start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (broker != null) {
            producer.queueDelete(QUEUE);
            producer.queueDelete(DLQ);
            broker.close();
        }
        if (pool != null) {
            pool.close();
        }
    }

    @Test
    void anIntentDeliveredTwiceAppliesOnce() throws Exception {
        String id = UUID.randomUUID().toString();
        byte[] intent = intent("alice", "bob", 1_000);

        publish(id, intent);
        publish(id, intent); // the producer re-publishes (a confirm it never got)

        await("both copies delivered, one applied", () -> ready(QUEUE) == 0 && transfers() == 1);
        Thread.sleep(500); // the second copy's call replays: nothing more may appear
        assertThat(transfers()).as("the intent took effect once").isEqualTo(1);
    }

    @Test
    void anIntentIdReusedForAnotherIntentIsParkedWithItsReason() throws Exception {
        String id = UUID.randomUUID().toString();
        publish(id, intent("carol", "dave", 500));
        await("the first applied", () -> transfers() == 1);

        publish(id, intent("carol", "dave", 999));

        GetResponse parked = parked();
        assertThat(parked.getProps().getMessageId()).isEqualTo(id);
        assertThat(parked.getProps()
                        .getHeaders()
                        .get(PlainClientConsumer.REASON)
                        .toString())
                .contains("already used for a message with other content");
        assertThat(transfers()).as("the second intent was never applied").isEqualTo(1);
    }

    @Test
    void anUndecodableMessageIsParkedAndNothingIsWritten() throws Exception {
        publish(UUID.randomUUID().toString(), "not json".getBytes(StandardCharsets.UTF_8));

        GetResponse parked = parked();
        assertThat(parked.getProps()
                        .getHeaders()
                        .get(PlainClientConsumer.REASON)
                        .toString())
                .startsWith("cannot decode the message");
        assertThat(transfers()).isZero();
    }

    private byte[] intent(String from, String to, long amountCents) {
        return ("{\"tenant\":\"" + tenant + "\",\"from\":\"" + from + "\",\"to\":\"" + to + "\",\"amountCents\":"
                        + amountCents + ",\"createdAt\":\"" + Instant.now().truncatedTo(ChronoUnit.SECONDS) + "\"}")
                .getBytes(StandardCharsets.UTF_8);
    }

    private static void publish(String messageId, byte[] body) throws Exception {
        producer.basicPublish(
                "",
                QUEUE,
                new AMQP.BasicProperties.Builder()
                        .messageId(messageId)
                        .deliveryMode(2)
                        .build(),
                body);
    }

    private int transfers() {
        return dsl.resultQuery(
                        "SELECT count(*)::int FROM " + DATABASE.schema() + ".queued_transfer WHERE tenant = ?", tenant)
                .fetchSingle()
                .get(0, Integer.class);
    }

    /** How many messages wait in the queue, not yet delivered. */
    private static long ready(String queue) {
        try {
            return producer.messageCount(queue);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static GetResponse parked() throws Exception {
        GetResponse[] got = new GetResponse[1];
        await("a parked message", () -> {
            try {
                got[0] = producer.basicGet(DLQ, true);
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
            return got[0] != null;
        });
        return got[0];
    }

    private static void await(String what, BooleanSupplier done) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!done.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waiting for " + what).isLessThan(until);
            Thread.sleep(50);
        }
    }
}
