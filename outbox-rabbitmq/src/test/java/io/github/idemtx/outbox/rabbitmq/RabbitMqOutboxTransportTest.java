package io.github.idemtx.outbox.rabbitmq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.jooq.outbox.Outbox;
import io.github.idemtx.jooq.outbox.OutboxDelivery;
import io.github.idemtx.jooq.outbox.OutboxMessage;
import java.io.IOException;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A message counts as delivered on the broker's confirm, routed, with its id; anything else fails the attempt. */
class RabbitMqOutboxTransportTest {

    private Connection connection;
    private Channel admin;
    private final String exchange = "outbox-test-" + UUID.randomUUID();
    private String queue;
    private RabbitMqOutboxTransport transport;

    @BeforeEach
    void connect() throws Exception {
        LocalBroker.assumeAvailable();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(LocalBroker.url());
        connection = factory.newConnection("outbox-test");
        admin = connection.createChannel();
        admin.exchangeDeclare(exchange, "direct", false, true, null);
        queue = admin.queueDeclare("", false, true, true, null).getQueue();
        admin.queueBind(queue, exchange, "account-1");
        transport = RabbitMqOutboxTransport.create(connection);
    }

    @AfterEach
    void close() throws Exception {
        if (connection != null) {
            transport.close();
            connection.close();
        }
    }

    private static OutboxDelivery delivery(String exchange, String orderingKey) {
        return OutboxDelivery.of(
                Scope.of("tenant"),
                IdempotencyKey.of("key-1"),
                OutboxMessage.builder("transfer-applied", exchange, "{\"amount\":10}".getBytes(UTF_8))
                        .orderingKey(orderingKey)
                        .header("content-type", "application/json")
                        .header("event-type", "TransferApplied")
                        .build(),
                1);
    }

    @Test
    void publishesRoutedByTheOrderingKeyWithTheMessageIdAndReturnsOnTheConfirm() throws Exception {
        transport.send(delivery(exchange, "account-1"));

        GetResponse got = admin.basicGet(queue, true);
        assertThat(got).isNotNull();
        assertThat(new String(got.getBody(), UTF_8)).isEqualTo("{\"amount\":10}");
        assertThat(got.getEnvelope().getRoutingKey()).isEqualTo("account-1");
        assertThat(got.getProps().getMessageId())
                .isEqualTo(Outbox.messageId(Scope.of("tenant"), IdempotencyKey.of("key-1"), "transfer-applied")
                        .toString());
        assertThat(got.getProps().getContentType()).isEqualTo("application/json");
        assertThat(got.getProps().getDeliveryMode()).isEqualTo(2);
        assertThat(got.getProps().getHeaders().get("event-type")).hasToString("TransferApplied");
    }

    @Test
    void aMessageNoQueueTakesIsAFailedAttemptNotADelivery() {
        assertThatThrownBy(() -> transport.send(delivery(exchange, "account-nobody")))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("unroutable");
    }

    @Test
    void aMissingExchangeFailsTheAttemptAndTheNextSendOpensAFreshChannel() throws Exception {
        assertThatThrownBy(() -> transport.send(delivery(exchange + "-missing", "account-1")))
                .isInstanceOf(IOException.class);

        transport.send(delivery(exchange, "account-1"));

        assertThat(admin.basicGet(queue, true)).isNotNull();
    }
}
