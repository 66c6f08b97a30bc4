package io.github.idemtx.jooq.outbox;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * Delivers outbox messages as HTTP {@code POST}s with the JDK's {@link HttpClient}: a 2xx answer is
 * a delivery. The body is the payload; the message's headers become request headers (a
 * {@code content-type} header sets the content type, default {@code application/octet-stream}); the
 * message id goes as {@code Idempotency-Key: "<id>"} (an RFC 8941 string, as the IETF draft and this
 * library's {@code idemtx-http} read it) and as {@code Message-Id}, so the receiver deduplicates a
 * repeated delivery.
 *
 * <p>Answers: 2xx, delivered; 400, 401, 403, 404, 405, 410, 413, 415 and 422 refuse the message for good
 * ({@link DeliveryRefusedException}: kept as failed); anything else (408, 409, 425, 429, 5xx), a
 * timeout or a lost connection is retried after the relay's backoff. Thread-safe.
 */
public final class HttpOutboxTransport implements OutboxTransport {

    /** Default per-request timeout: 10 seconds. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

    private static final Set<Integer> REFUSED = Set.of(400, 401, 403, 404, 405, 410, 413, 415, 422);
    private static final Set<String> RESTRICTED = Set.of("connection", "content-length", "expect", "host", "upgrade");

    private final HttpClient client;
    private final Function<String, URI> endpoints;
    private final Duration timeout;

    private HttpOutboxTransport(HttpClient client, Function<String, URI> endpoints, Duration timeout) {
        this.client = client;
        this.endpoints = endpoints;
        this.timeout = timeout;
    }

    /**
     * {@return a transport that posts each message to its destination read as an absolute URI}
     *
     * @param client the client
     * @throws NullPointerException if {@code client} is null
     */
    public static HttpOutboxTransport create(HttpClient client) {
        return create(client, URI::create, DEFAULT_TIMEOUT);
    }

    /**
     * {@return a transport that posts each message to the URI its destination maps to}
     *
     * @param client the client
     * @param endpoints a destination's URI (a name such as {@code "bank"} to its endpoint)
     * @param timeout each request's timeout
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code timeout} is not positive
     */
    public static HttpOutboxTransport create(HttpClient client, Function<String, URI> endpoints, Duration timeout) {
        Objects.requireNonNull(client, "client must not be null");
        Objects.requireNonNull(endpoints, "endpoints must not be null");
        Objects.requireNonNull(timeout, "timeout must not be null");
        if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be positive, was " + timeout);
        }
        return new HttpOutboxTransport(client, endpoints, timeout);
    }

    @Override
    public void send(OutboxDelivery delivery) throws IOException, InterruptedException {
        URI uri = Objects.requireNonNull(endpoints.apply(delivery.destination()), "the destination's URI");
        HttpRequest.Builder request = HttpRequest.newBuilder(uri)
                .timeout(timeout)
                .POST(HttpRequest.BodyPublishers.ofByteArray(delivery.payload()))
                .header("Idempotency-Key", "\"" + delivery.messageId() + "\"")
                .header("Message-Id", delivery.messageId().toString());
        boolean typed = false;
        for (var header : delivery.headers().entrySet()) {
            String name = header.getKey().toLowerCase(Locale.ROOT);
            if (RESTRICTED.contains(name) || name.equals("idempotency-key") || name.equals("message-id")) {
                continue;
            }
            typed |= name.equals("content-type");
            request.header(header.getKey(), header.getValue());
        }
        if (!typed) {
            request.header("Content-Type", "application/octet-stream");
        }
        HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        int status = response.statusCode();
        if (status >= 200 && status < 300) {
            return;
        }
        String body = response.body();
        String what = "POST " + uri + " answered " + status
                + (body == null || body.isBlank() ? "" : ": " + body.substring(0, Math.min(500, body.length())));
        if (REFUSED.contains(status)) {
            throw new DeliveryRefusedException(what);
        }
        throw new IOException(what);
    }
}
