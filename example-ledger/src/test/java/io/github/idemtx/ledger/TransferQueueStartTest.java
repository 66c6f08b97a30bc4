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
}
