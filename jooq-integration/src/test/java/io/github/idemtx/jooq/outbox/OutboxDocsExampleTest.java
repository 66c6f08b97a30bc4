package io.github.idemtx.jooq.outbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** docs/outbox.md's example runs as shown: the transfer's event reaches an HTTP endpoint once, by the relay. */
@DatabaseTest
class OutboxDocsExampleTest {

    @Test
    void theTransfersEventIsPostedByTheRelay() throws Exception {
        OutboxDb.settleOthers();
        OutboxDb.DSL_CONTEXT.execute("CREATE TABLE IF NOT EXISTS " + OutboxDb.SCHEMA + ".outbox_transfer ("
                + " id bigserial PRIMARY KEY, source text NOT NULL, target text NOT NULL, cents bigint NOT NULL)");
        List<String> posted = new CopyOnWriteArrayList<>();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/events", exchange -> {
            posted.add(new String(exchange.getRequestBody().readAllBytes(), UTF_8));
            exchange.sendResponseHeaders(202, -1);
            exchange.close();
        });
        server.start();
        TransferEvents events = new TransferEvents(OutboxDb.transactions(), OutboxDb.outbox(), OutboxDb.SCHEMA);
        Scope scope = OutboxDb.freshScope();
        IdempotencyKey key = OutboxDb.freshKey();
        try (OutboxRelay relay = TransferEvents.startRelay(
                OutboxDb.DSL_CONTEXT,
                OutboxDb.SCHEMA,
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events"))) {
            Outcome<String> first = events.transfer(scope, key, "acc-1", "acc-2", 500);
            Outcome<String> retry = events.transfer(scope, key, "acc-1", "acc-2", 500);
            assertThat(first).isInstanceOf(Outcome.Executed.class);
            assertThat(retry).isInstanceOf(Outcome.Replayed.class);
            Instant deadline = Instant.now().plusSeconds(30);
            while (posted.isEmpty() && Instant.now().isBefore(deadline)) {
                Thread.sleep(50);
            }
            assertThat(relay.isRunning()).isTrue();
        } finally {
            server.stop(0);
        }
        assertThat(posted).hasSize(1);
        assertThat(posted.get(0)).contains("\"cents\":500");
    }
}
