package io.github.idemtx.ledger.storm;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.jooq.outbox.OutboxDelivery;
import io.github.idemtx.jooq.outbox.OutboxRelay;
import io.github.idemtx.jooq.outbox.OutboxTransport;
import io.github.idemtx.ledger.Flags;
import io.github.idemtx.outbox.rabbitmq.RabbitMqOutboxTransport;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * A second relay of the ledger's events, in a process of its own for the storm to SIGKILL mid-batch
 * ({@link RelayChaos}): the library's {@link OutboxRelay} over the ledger's schema, publishing to
 * RabbitMQ as the ledger's own relay does ({@link RabbitMqOutboxTransport}, publisher confirms, the
 * routing key from the {@code event-type} header), beside it. It leases small batches under the
 * owner {@code --owner} with a short lease, and each send waits {@code --send-delay-ms} after the
 * broker's confirm before the relay marks the message delivered: its batches stay in flight long
 * enough for a kill to find one, sent but unmarked messages included. It runs until it is killed.
 *
 * <p>Flags: {@code --schema}, {@code --amqp-url}, {@code --owner}, {@code --lease-ms},
 * {@code --send-delay-ms}, {@code --batch-size}, {@code --poll-ms}, and the database's
 * {@code --db-url}, {@code --db-user}, {@code --db-password}; a missing or bad one is refused by name.
 */
public final class StormRelay {

    private StormRelay() {}

    /** The relay's settings, from its flags. */
    record Settings(
            String schema,
            String amqpUrl,
            String owner,
            Duration lease,
            Duration sendDelay,
            int batchSize,
            Duration poll,
            String dbUrl,
            String dbUser,
            String dbPassword) {}

    /** Parses the flags, each checked and refused by name. */
    static Settings parse(String[] args) {
        Map<String, String> flags = Flags.parse("storm relay arguments", args);
        Set<String> known = Set.of(
                "schema",
                "amqp-url",
                "owner",
                "lease-ms",
                "send-delay-ms",
                "batch-size",
                "poll-ms",
                "db-url",
                "db-user",
                "db-password");
        for (String name : flags.keySet()) {
            if (!known.contains(name)) {
                throw new IllegalArgumentException(
                        "unknown storm relay flag --" + name + "; known: " + new java.util.TreeSet<>(known));
            }
        }
        for (String name : new String[] {"schema", "amqp-url", "owner", "db-url"}) {
            if (flags.get(name) == null || flags.get(name).isBlank()) {
                throw new IllegalArgumentException("the storm relay needs --" + name);
            }
        }
        if (!flags.get("schema").matches("[a-z_][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException(
                    "--schema must be a plain lower-case identifier, was '" + flags.get("schema") + "'");
        }
        if (flags.get("owner").length() > 64) {
            throw new IllegalArgumentException("--owner must be 1 to 64 characters, was '" + flags.get("owner") + "'");
        }
        return new Settings(
                flags.get("schema"),
                flags.get("amqp-url"),
                flags.get("owner"),
                Duration.ofMillis(Flags.intFlag(flags, "lease-ms", 1000, 1000, 3_600_000)),
                Duration.ofMillis(Flags.intFlag(flags, "send-delay-ms", 40, 0, 10_000)),
                Flags.intFlag(flags, "batch-size", 5, 1, 1000),
                Duration.ofMillis(Flags.intFlag(flags, "poll-ms", 10, 1, 60_000)),
                flags.get("db-url"),
                flags.get("db-user"),
                flags.get("db-password"));
    }

    /** Starts the relay and runs until the process is killed; exits 2 on a bad flag. */
    public static void main(String[] args) throws Exception {
        Settings settings;
        try {
            settings = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("storm relay: " + e.getMessage());
            System.exit(2);
            return;
        }
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(settings.dbUrl());
        hikari.setUsername(settings.dbUser());
        hikari.setPassword(settings.dbPassword());
        hikari.setMaximumPoolSize(2);
        hikari.setPoolName("storm-relay");
        // not the ledger's application name: the storm's connection kills leave this relay's leases alone
        hikari.addDataSourceProperty("ApplicationName", "storm-relay:" + settings.schema());
        HikariDataSource pool = new HikariDataSource(hikari);
        DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES);
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(settings.amqpUrl());
        factory.setAutomaticRecoveryEnabled(true);
        factory.setNetworkRecoveryInterval(500);
        Connection connection = factory.newConnection("storm-relay " + settings.owner());
        RabbitMqOutboxTransport rabbit = RabbitMqOutboxTransport.builder(connection)
                .routingKey(d -> Objects.requireNonNullElse(d.headers().get("event-type"), "event"))
                .build();
        OutboxRelay relay = OutboxRelay.builder(dsl, slow(rabbit, settings.sendDelay()))
                .schema(settings.schema())
                .owner(settings.owner())
                .batchSize(settings.batchSize())
                .pollInterval(settings.poll())
                .lease(settings.lease())
                .build();
        relay.start();
        System.out.println("storm relay " + settings.owner() + " started on " + settings.schema());
        new java.util.concurrent.CountDownLatch(1).await(); // until the storm kills it
    }

    /** {@code transport}, then a pause of {@code delay} between the broker's confirm and the relay's mark. */
    static OutboxTransport slow(OutboxTransport transport, Duration delay) {
        return (OutboxDelivery delivery) -> {
            transport.send(delivery);
            Thread.sleep(delay);
        };
    }
}
