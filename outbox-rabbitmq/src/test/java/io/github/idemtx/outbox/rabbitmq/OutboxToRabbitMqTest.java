package io.github.idemtx.outbox.rabbitmq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.outbox.Outbox;
import io.github.idemtx.jooq.outbox.OutboxMessage;
import io.github.idemtx.jooq.outbox.OutboxRelay;
import io.github.idemtx.jooq.outbox.OutboxStatus;
import io.github.idemtx.jooq.outbox.OutboxTransport;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** From the work's commit to the broker: the relay publishes the committed message, at least once, under its claim's id. */
@DatabaseTest
class OutboxToRabbitMqTest {

    static final TestDatabase DATABASE = TestDatabase.get();
    static HikariDataSource pool;
    static DSLContext dsl;

    private Connection connection;
    private Channel admin;
    private final String exchange = "outbox-e2e-" + UUID.randomUUID();
    private String queue;
    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());

    @BeforeAll
    static void migrate() {
        try (HikariDataSource direct = DATABASE.newServerPool(2)) {
            IdempotencySchema.migrate(direct, DATABASE.schema());
        }
        pool = DATABASE.newPool(4);
        dsl = DSL.using(pool, SQLDialect.POSTGRES);
    }

    @AfterAll
    static void closePool() {
        if (pool != null) {
            pool.close();
        }
    }

    @BeforeEach
    void connect() throws Exception {
        LocalBroker.assumeAvailable();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(LocalBroker.url());
        connection = factory.newConnection("outbox-e2e");
        admin = connection.createChannel();
        admin.exchangeDeclare(exchange, "fanout", false, true, null);
        queue = admin.queueDeclare("", false, true, true, null).getQueue();
        admin.queueBind(queue, exchange, "");
        dsl.execute("UPDATE " + DATABASE.schema() + ".idempotency_outbox SET status = 'discarded',"
                + " settled_at = clock_timestamp() WHERE status IN ('pending', 'failed')");
    }

    @AfterEach
    void close() throws Exception {
        if (connection != null) {
            connection.close();
        }
    }

    private UUID commitTransfer(IdempotencyKey key) {
        IdempotentTransaction<String> transfers = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .schema(DATABASE.schema())
                .build();
        Outbox outbox = Outbox.builder(dsl).schema(DATABASE.schema()).build();
        transfers.run(scope, key, Fingerprint.sha256("transfer"), tx -> {
            outbox.add(
                    tx,
                    OutboxMessage.builder("transfer-applied", exchange, "10".getBytes(UTF_8))
                            .orderingKey("account-1")
                            .build());
            return "ok";
        });
        return Outbox.messageId(scope, key, "transfer-applied");
    }

    private List<String> receivedIds() throws Exception {
        List<String> ids = new ArrayList<>();
        GetResponse got;
        while ((got = admin.basicGet(queue, true)) != null) {
            ids.add(got.getProps().getMessageId());
        }
        return ids;
    }

    @Test
    void theRelayPublishesTheCommittedMessageAndMarksItDelivered() throws Exception {
        UUID id = commitTransfer(IdempotencyKey.random());
        try (RabbitMqOutboxTransport transport = RabbitMqOutboxTransport.create(connection)) {
            OutboxRelay relay = OutboxRelay.builder(dsl, transport)
                    .schema(DATABASE.schema())
                    .build();

            assertThat(relay.deliverDue()).isEqualTo(1);
        }

        assertThat(receivedIds()).containsExactly(id.toString());
        assertThat(Outbox.builder(dsl)
                        .schema(DATABASE.schema())
                        .build()
                        .find(id)
                        .orElseThrow()
                        .status())
                .isEqualTo(OutboxStatus.DELIVERED);
    }

    /** The relay "dies" after the broker confirmed and before the mark. */
    static final class Killed extends Error {
        private static final long serialVersionUID = 1L;
    }

    @Test
    void aRelayKilledAfterTheConfirmHasTheSameMessageIdPublishedAgain() throws Exception {
        UUID id = commitTransfer(IdempotencyKey.random());
        try (RabbitMqOutboxTransport transport = RabbitMqOutboxTransport.create(connection)) {
            OutboxTransport dying = d -> {
                transport.send(d);
                throw new Killed();
            };
            OutboxRelay dead = OutboxRelay.builder(dsl, dying)
                    .schema(DATABASE.schema())
                    .lease(Duration.ofSeconds(1))
                    .build();
            assertThatThrownBy(dead::deliverDue).isInstanceOf(Killed.class);

            OutboxRelay survivor = OutboxRelay.builder(dsl, transport)
                    .schema(DATABASE.schema())
                    .build();
            Instant deadline = Instant.now().plusSeconds(30);
            while (survivor.deliverDue() == 0 && Instant.now().isBefore(deadline)) {
                Thread.sleep(100);
            }
        }

        assertThat(receivedIds()).containsExactly(id.toString(), id.toString());
    }
}
