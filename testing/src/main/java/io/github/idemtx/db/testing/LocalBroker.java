package io.github.idemtx.db.testing;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.util.Optional;

/**
 * The RabbitMQ the queue tests and {@code storm --queue} use: {@value #URL_ENV} if set, else
 * {@value #DEFAULT_URL} (the machine's broker; .ci/run starts it).
 */
public final class LocalBroker {

    /** The environment variable that names another broker, as an AMQP URI. */
    public static final String URL_ENV = "IDEMTX_AMQP_URL";
    /** The broker used when {@value #URL_ENV} is unset. */
    public static final String DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672";

    private LocalBroker() {}

    /** The broker's AMQP URI. */
    public static String url() {
        String url = System.getenv(URL_ENV);
        return url == null || url.isBlank() ? DEFAULT_URL : url.trim();
    }

    /** Why no broker answers at {@link #url()}, with how to start one; empty when one accepts a connection. */
    public static Optional<String> unavailable() {
        return unavailable(url());
    }

    /** Why no broker answers at {@code url} (an AMQP URI), with how to start one; empty when one accepts a connection. */
    public static Optional<String> unavailable(String url) {
        URI uri = URI.create(url);
        String host = uri.getHost() == null ? "127.0.0.1" : uri.getHost();
        int port = uri.getPort() > 0 ? uri.getPort() : uri.getScheme().equals("amqps") ? 5671 : 5672;
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 2_000);
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of("no RabbitMQ answers at " + host + ":" + port + " (" + e.getMessage() + "): start one"
                    + " (rabbitmq-server -detached; or docker run -d -p 5672:5672 rabbitmq:3) or name one in "
                    + URL_ENV);
        }
    }

    /**
     * Skips the calling test, with a warning saying how to start a broker, where none answers; under
     * CI ({@code CI} set, as .ci/run runs) fails instead, since there the broker must run.
     */
    public static void assumeAvailable() {
        Optional<String> why = unavailable();
        if (why.isEmpty()) {
            return;
        }
        if (System.getenv("CI") != null) {
            throw new IllegalStateException("CI runs the queue tests, but " + why.get());
        }
        System.err.println("WARNING skipped: " + why.get());
        org.junit.jupiter.api.Assumptions.abort("skipped: " + why.get());
    }
}
