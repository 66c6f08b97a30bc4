package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalBroker;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** A ledger whose queue cannot start says why, naming the real cause, and does not start. */
@DatabaseTest
class TransferQueueStartTest {

    @AfterAll
    static void drop() {
        LedgerFixture.dropSchema("queue_start");
    }

    private static String[] args(String amqpUrl, String queue) {
        return LedgerFixture.args("queue_start", "--port=0", "--amqp-url=" + amqpUrl, "--queue=" + queue);
    }

    @Test
    void anUnreachableBrokerIsNamedWithHowToStartOne() {
        assertThatThrownBy(() -> LedgerServer.startFresh(args("amqp://guest:guest@127.0.0.1:1", "q")))
                .isInstanceOf(TransferQueue.BrokerUnavailableException.class)
                .hasMessageStartingWith("no RabbitMQ at amqp://127.0.0.1:1 answers")
                .hasMessageContaining("rabbitmq-server -detached")
                .hasMessageNotContaining("guest:guest");
    }

    @Test
    void wrongCredentialsAreCalledThatNotUnreachable() {
        LocalBroker.assumeAvailable();
        String url = LocalBroker.url().replaceFirst("//[^@/]*@", "//nobody:wrong-password@");
        assertThatThrownBy(() -> LedgerServer.startFresh(args(url, "q")))
                .isInstanceOf(TransferQueue.BrokerUnavailableException.class)
                .hasMessageContaining("refused the credentials of LEDGER_AMQP_URL")
                .hasMessageNotContaining("wrong-password");
    }

    @Test
    void aQueueDeclaredWithOtherArgumentsIsNamed() throws Exception {
        LocalBroker.assumeAvailable();
        String queue = "test.transfers.classic." + UUID.randomUUID();
        try (Connection c = TransferQueue.factory(LocalBroker.url()).newConnection();
                Channel channel = c.createChannel()) {
            channel.queueDeclare(queue, true, false, false, Map.of()); // a classic queue of the same name
            try {
                assertThatThrownBy(() -> LedgerServer.startFresh(args(LocalBroker.url(), queue)))
                        .isInstanceOf(TransferQueue.BrokerUnavailableException.class)
                        .hasMessageContaining("refused to set up the queues: PRECONDITION_FAILED")
                        .hasMessageContaining("choose another LEDGER_QUEUE");
            } finally {
                channel.queueDelete(queue);
                channel.queueDelete(queue + ".dlq");
                channel.queueDelete(queue + ".replies");
            }
        }
    }

    @Test
    void aFailureNoMessageGetsPastStopsConsumingAndLeavesTheMessagesQueued() throws Exception {
        LocalBroker.assumeAvailable();
        String queue = "test.transfers.stop." + UUID.randomUUID();
        try (LedgerServer server = LedgerServer.startFresh(args(LocalBroker.url(), queue));
                Connection c = TransferQueue.factory(LocalBroker.url()).newConnection();
                Channel channel = c.createChannel()) {
            String claims = server.schema() + ".idempotency_claim";
            io.github.idemtx.db.testing.TestDatabase db = io.github.idemtx.db.testing.TestDatabase.get();
            db.execute("ALTER TABLE " + claims + " RENAME TO idempotency_claim_away"); // a broken deploy
            try {
                String createdAt = java.time.Instant.now().toString();
                for (int i = 0; i < 3; i++) {
                    channel.basicPublish(
                            "",
                            queue,
                            new com.rabbitmq.client.AMQP.BasicProperties.Builder()
                                    .messageId("stop-" + i)
                                    .build(),
                            ("{\"tenant\":\"t\",\"from\":\"" + UUID.randomUUID() + "\",\"to\":\""
                                            + UUID.randomUUID() + "\",\"amount\":\"1.00\",\"createdAt\":\""
                                            + createdAt + "\"}")
                                    .getBytes(java.nio.charset.StandardCharsets.UTF_8));
                }
                long until =
                        System.nanoTime() + java.time.Duration.ofSeconds(60).toNanos();
                com.rabbitmq.client.AMQP.Queue.DeclareOk state = channel.queueDeclarePassive(queue);
                while (state.getConsumerCount() > 0 || state.getMessageCount() < 3) {
                    org.assertj.core.api.Assertions.assertThat(System.nanoTime())
                            .as("waiting for the consumers to stop with the 3 messages back in the queue")
                            .isLessThan(until);
                    Thread.sleep(100);
                    state = channel.queueDeclarePassive(queue);
                }
                org.assertj.core.api.Assertions.assertThat(state.getMessageCount())
                        .as("every message still queued, none parked")
                        .isEqualTo(3);
                org.assertj.core.api.Assertions.assertThat(
                                channel.queueDeclarePassive(queue + ".dlq").getMessageCount())
                        .isZero();
            } finally {
                db.execute("ALTER TABLE " + server.schema() + ".idempotency_claim_away RENAME TO idempotency_claim");
                channel.queueDelete(queue);
                channel.queueDelete(queue + ".dlq");
                channel.queueDelete(queue + ".replies");
            }
        }
    }
}
