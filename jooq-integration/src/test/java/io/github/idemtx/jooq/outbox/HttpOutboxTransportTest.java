package io.github.idemtx.jooq.outbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A 2xx answer is a delivery; a refusal is kept as failed; anything else is tried again. */
class HttpOutboxTransportTest {

    private HttpServer server;
    private final AtomicInteger status = new AtomicInteger(204);
    private final List<Map<String, List<String>>> requests = new CopyOnWriteArrayList<>();
    private final List<String> bodies = new CopyOnWriteArrayList<>();
    private final HttpClient client = HttpClient.newHttpClient();

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/events", exchange -> {
            requests.add(Map.copyOf(exchange.getRequestHeaders()));
            bodies.add(new String(exchange.getRequestBody().readAllBytes(), UTF_8));
            byte[] answer = status.get() == 204 ? new byte[0] : "no such account".getBytes(UTF_8);
            exchange.sendResponseHeaders(status.get(), status.get() == 204 ? -1 : answer.length);
            if (answer.length > 0) {
                exchange.getResponseBody().write(answer);
            }
            exchange.close();
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
        client.close();
    }

    private OutboxDelivery delivery() {
        return OutboxDelivery.of(
                Scope.of("s"),
                IdempotencyKey.of("k"),
                OutboxMessage.builder("applied", "bank", "{\"amount\":10}".getBytes(UTF_8))
                        .header("Content-Type", "application/json")
                        .header("X-Trace", "t1")
                        .build(),
                1);
    }

    private HttpOutboxTransport transport() {
        URI endpoint = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events");
        return HttpOutboxTransport.create(client, destination -> endpoint, Duration.ofSeconds(10));
    }

    @Test
    void postsThePayloadWithTheMessageIdAsIdempotencyKeyAndA2xxIsADelivery() throws Exception {
        transport().send(delivery());

        assertThat(bodies).containsExactly("{\"amount\":10}");
        Map<String, List<String>> headers = requests.get(0);
        String id = Outbox.messageId(Scope.of("s"), IdempotencyKey.of("k"), "applied")
                .toString();
        assertThat(headers.get("Idempotency-key")).containsExactly("\"" + id + "\"");
        assertThat(headers.get("Message-id")).containsExactly(id);
        assertThat(headers.get("Content-type")).containsExactly("application/json");
        assertThat(headers.get("X-trace")).containsExactly("t1");
    }

    @Test
    void aClientErrorThatARetryCannotChangeIsARefusal() {
        status.set(422);

        assertThatThrownBy(() -> transport().send(delivery()))
                .isInstanceOf(DeliveryRefusedException.class)
                .hasMessageContaining("answered 422: no such account");
    }

    @Test
    void aServerErrorOrTooManyRequestsIsTriedAgain() {
        for (int answer : new int[] {500, 503, 429, 409}) {
            status.set(answer);
            assertThatThrownBy(() -> transport().send(delivery()))
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(DeliveryRefusedException.class)
                    .hasMessageContaining("answered " + answer);
        }
    }

    @Test
    void anUnreachableDestinationIsTriedAgain() {
        int port = server.getAddress().getPort();
        server.stop(0);
        HttpOutboxTransport gone = HttpOutboxTransport.create(
                client, d -> URI.create("http://127.0.0.1:" + port + "/events"), Duration.ofSeconds(5));

        assertThatThrownBy(() -> gone.send(delivery())).isInstanceOf(IOException.class);
    }
}
