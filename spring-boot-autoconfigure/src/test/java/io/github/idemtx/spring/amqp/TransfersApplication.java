package io.github.idemtx.spring.amqp;

import io.github.idemtx.keys.DerivedKeys;
import io.github.idemtx.keys.FieldNormalizer;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.sample.PaymentsApplication;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Spring AMQP example of docs/message-consumers.md: {@link TransferListener} on a quorum queue
 * with manual acknowledgement, a bounded prefetch and a dead-letter queue, on Spring Boot's own
 * RabbitMQ, jOOQ, Flyway and Jackson auto-configuration plus idemtx's.
 */
@SpringBootApplication(
        excludeName = {
            "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
            "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration"
        })
public class TransfersApplication {

    /** A bound on deliveries the broker enforces itself, above the listener's: a consumer that dies on every delivery. */
    static final int BROKER_DELIVERY_LIMIT = 2 * TransferListener.DELIVERY_LIMIT;

    /**
     * The settings of the example: the broker, manual acknowledgement, at most 10 unacknowledged
     * messages per consumer, confirms for what the listener parks, the queues' names and the
     * secret of derived keys (base64, at least 32 bytes; from a vault in production).
     */
    public static Map<String, Object> properties(
            String host, int port, String queue, String deadLetterQueue, String keySecret) {
        Map<String, Object> p = new HashMap<>(PaymentsApplication.databaseProperties());
        p.put("spring.rabbitmq.host", host);
        p.put("spring.rabbitmq.port", port);
        p.put("spring.rabbitmq.username", "guest");
        p.put("spring.rabbitmq.password", "guest");
        p.put("spring.rabbitmq.publisher-confirm-type", "simple");
        p.put("spring.rabbitmq.listener.simple.acknowledge-mode", "manual");
        p.put("spring.rabbitmq.listener.simple.prefetch", 10);
        p.put("transfers.queue", queue);
        p.put("transfers.dead-letter-queue", deadLetterQueue);
        p.put("transfers.key-secret", keySecret);
        return p;
    }

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(TransfersApplication.class);
        byte[] secret = new byte[32];
        new java.security.SecureRandom().nextBytes(secret);
        app.setDefaultProperties(properties(
                "127.0.0.1",
                5672,
                "transfers",
                "transfers.dead",
                Base64.getEncoder().encodeToString(secret)));
        app.run(args);
    }

    // [docs/message-consumers.md: queues]
    /**
     * Quorum: replicated, and it counts deliveries ({@code x-delivery-count}). What the broker
     * dead-letters itself (past its delivery limit) goes to the same dead-letter queue as what the
     * listener parks with its reason.
     */
    @Bean
    Queue transfersQueue(
            @Value("${transfers.queue}") String name, @Value("${transfers.dead-letter-queue}") String deadLetterQueue) {
        return QueueBuilder.durable(name)
                .quorum()
                .deliveryLimit(BROKER_DELIVERY_LIMIT)
                .deadLetterExchange("")
                .deadLetterRoutingKey(deadLetterQueue)
                .build();
    }

    @Bean
    Queue transfersDeadLetterQueue(@Value("${transfers.dead-letter-queue}") String name) {
        return QueueBuilder.durable(name).quorum().build();
    }

    /** Keys of intents whose producer set no message id: the same fields and creation instant, the same key. */
    @Bean
    DerivedKeys transferKeys(@Value("${transfers.key-secret}") String secret) {
        return DerivedKeys.builder()
                .secret(Base64.getDecoder().decode(secret))
                .action("transfer")
                .field("from", FieldNormalizer.CREDITOR_KEY)
                .field("to", FieldNormalizer.CREDITOR_KEY)
                .field("amount", FieldNormalizer.AMOUNT)
                // the default bucket, 15 minutes: the instant travels in the message and is in the
                // fingerprint, so twins within a bucket are parked as FingerprintMismatch, never merged
                .build();
    }

    // [docs/message-consumers.md: end queues]

    @Bean
    TransferListener transferListener(
            IdempotentTransactions transactions,
            DerivedKeys transferKeys,
            JsonMapper json,
            RabbitTemplate rabbit,
            @Value("${transfers.dead-letter-queue}") String deadLetterQueue,
            RabbitListenerEndpointRegistry containers) {
        return new TransferListener(transactions, transferKeys, json, rabbit, deadLetterQueue, containers);
    }
}
