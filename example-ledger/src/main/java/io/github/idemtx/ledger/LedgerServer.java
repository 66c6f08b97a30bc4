package io.github.idemtx.ledger;

import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.http.StoredResponse;
import io.github.idemtx.http.StoredResponseCodec;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.micrometer.MicrometerIdempotencyListener;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.flywaydb.core.Flyway;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * The ledger as an HTTP service, put together: the settings ({@link LedgerConfig}), a HikariCP pool
 * on the database they name, the claim table and the ledger's tables (Flyway), the library's
 * {@link IdempotentTransaction} with its Micrometer listener, and {@code com.sun.net.httpserver} on
 * virtual threads. What each request does is {@link LedgerHandlers}'; which handler answers it,
 * {@link LedgerRoutes}'; the JSON, {@link LedgerJson}'.
 *
 * <p>The database is the one the settings name, else {@value #DEFAULT_DB_URL} as {@code postgres};
 * the service starts none. (The example's launcher in {@code example-ledger-storm},
 * {@code LocalLedger}, finds or starts one first, embedded if need be: docs/ledger-example.md.)
 */
public final class LedgerServer implements AutoCloseable {

    /** The database used when {@code LEDGER_DB_URL} is unset (as user {@value #DEFAULT_DB_USER}). */
    public static final String DEFAULT_DB_URL = "jdbc:postgresql://127.0.0.1:5432/postgres";
    /** The user at {@link #DEFAULT_DB_URL}. */
    public static final String DEFAULT_DB_USER = "postgres";

    private final LedgerConfig config;
    private final HikariDataSource pool;
    private final Payouts payouts;
    private final TransferQueue queue; // null without LEDGER_AMQP_URL
    private final HttpServer server;
    private final ExecutorService executor;
    private final LedgerAdmin admin; // null without LEDGER_ADMIN_PORT
    private final LedgerEvents events; // null without LEDGER_EVENTS_EXCHANGE
    /** What the admin routes take: LEDGER_ADMIN_TOKEN, or one made here (printed by {@link #announce}). */
    private final String adminToken;

    private LedgerServer(LedgerConfig config, boolean fresh) throws IOException {
        this.config = config;
        this.adminToken = config.adminToken() != null ? config.adminToken() : LedgerConfig.randomToken();
        this.pool = pool(config);
        TransferQueue started = null;
        HttpServer http = null;
        LedgerAdmin operators = null;
        LedgerEvents announced = null;
        try {
            migrate(pool, config.schema(), fresh);
            DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES);
            PrometheusMeterRegistry metrics = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            MicrometerIdempotencyListener listener = MicrometerIdempotencyListener.of(metrics);
            IdempotencyPolicy policy = IdempotencyPolicy.builder()
                    .duplicateWait(Duration.ofSeconds(2))
                    .build();
            IdempotentTransaction<StoredResponse> idempotent = IdempotentTransaction.builder(
                            dsl, StoredResponseCodec.defaults())
                    .policy(policy)
                    .schema(config.schema())
                    .claimMode(config.claimMode())
                    // every call owns its transaction: one that would join a caller's is refused, never
                    // answered before anything committed (a queued message is acknowledged after run returns)
                    .transactionMode(TransactionMode.OWN)
                    .listener(listener)
                    .build();
            if (config.eventsExchange() != null) {
                announced = LedgerEvents.start(
                        config.queue().amqpUrl(),
                        config.eventsExchange(),
                        config.eventsLease(),
                        config.eventsPoll(),
                        dsl,
                        config.schema(),
                        metrics);
            }
            Ledger ledger = announced == null
                    ? new Ledger(config.schema())
                    : new Ledger(config.schema(), announced.outbox(), config.eventsExchange());
            // payouts: a demo-scale lease and lookup schedule (the library's defaults are 30 s and 1, 2, 4 minutes)
            this.payouts = config.bankUrl() == null
                    ? null
                    : new Payouts(
                            dsl,
                            ledger,
                            config.schema(),
                            config.bankName(),
                            config.bankUrl(),
                            Duration.ofSeconds(5),
                            Duration.ofSeconds(1),
                            config.payoutLookups(),
                            config.statementBank(),
                            listener);
            if (config.queue() != null && config.queue().demoSecret()) {
                System.err.println("ledger: WARNING LEDGER_KEY_SECRET is unset: keys derived for queued intents without"
                        + " an id use the demo secret, which is public; set 64 hexadecimal digits of your own");
            }
            LedgerRoutes routes = new LedgerRoutes(
                    new LedgerHandlers(dsl, ledger, idempotent, payouts), config.tokens(), metrics::scrape);
            this.executor = Executors.newVirtualThreadPerTaskExecutor();
            http = HttpServer.create(new InetSocketAddress("127.0.0.1", config.port()), 512);
            http.setExecutor(executor);
            http.createContext("/", routes::handle);
            http.start();
            if (config.adminPort() != null) {
                ClaimAdmin.Builder claims = ClaimAdmin.builder(dsl)
                        .schema(config.schema())
                        .policy(policy)
                        .listener(listener);
                if (payouts != null) {
                    claims.effect(payouts.effect());
                }
                operators = LedgerAdmin.start(claims.build(), payouts, config.adminPort(), adminToken);
            }
            // last: nothing after it can fail, so a failed start never leaves a consumer holding messages
            started = config.queue() == null
                    ? null
                    : TransferQueue.start(config.queue(), idempotent, ledger, policy.ttl());
        } catch (RuntimeException | IOException e) {
            if (operators != null) {
                operators.close();
            }
            if (http != null) {
                http.stop(0);
            }
            if (announced != null) {
                announced.close();
            }
            pool.close();
            throw e;
        }
        this.server = http;
        this.queue = started;
        this.admin = operators;
        this.events = announced;
    }

    private static HikariDataSource pool(LedgerConfig config) {
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(config.dbUrl());
        hikari.setUsername(config.dbUser());
        hikari.setPassword(config.dbPassword());
        hikari.setMaximumPoolSize(config.poolSize());
        hikari.setConnectionTimeout(5_000);
        hikari.setPoolName("ledger");
        // its sessions named after its books, so that a storm or a test picks this ledger's sessions,
        // never another program's (or another ledger's) on a shared server
        hikari.addDataSourceProperty("ApplicationName", applicationName(config.schema()));
        return new HikariDataSource(hikari);
    }

    /** The claim table (with its own Flyway history) and the ledger's tables, in {@code schema}; emptied first if {@code fresh}. */
    private static void migrate(HikariDataSource pool, String schema, boolean fresh) {
        if (fresh) {
            DSL.using(pool, SQLDialect.POSTGRES).execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
        IdempotencySchema.migrate(pool, schema);
        Flyway.configure(LedgerServer.class.getClassLoader())
                .dataSource(pool)
                .locations("classpath:db/ledger")
                .schemas(schema)
                .defaultSchema(schema)
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .load()
                .migrate();
    }

    /**
     * Starts the service with {@code config} on the database it names, else {@value #DEFAULT_DB_URL}.
     *
     * @throws IllegalArgumentException when the database setting is no JDBC URL (e.g. {@code embedded},
     *     which only the example's launcher resolves)
     */
    public static LedgerServer start(LedgerConfig config) throws IOException {
        return start(config, false);
    }

    /** {@link #start(LedgerConfig)} in a schema emptied first: for tests and {@code storm}. */
    public static LedgerServer startFresh(LedgerConfig config) throws IOException {
        return start(config, true);
    }

    /**
     * Starts the service configured by {@code args} and the {@code LEDGER_*} environment, in a
     * schema emptied first: for tests and {@code storm}.
     */
    public static LedgerServer startFresh(String[] args) throws IOException {
        return startFresh(LedgerConfig.from(args, System.getenv()));
    }

    private static LedgerServer start(LedgerConfig config, boolean fresh) throws IOException {
        if (config.dbUrl() == null) {
            config = config.withDatabase(DEFAULT_DB_URL, DEFAULT_DB_USER, null);
            System.out.println("ledger database: PostgreSQL at " + DEFAULT_DB_URL + " as " + DEFAULT_DB_USER + " ("
                    + LedgerConfig.DB_URL_SETTING + " is unset)");
        } else if (!config.dbUrl().startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException(LedgerConfig.DB_URL_SETTING + " must be a PostgreSQL JDBC URL"
                    + " (jdbc:postgresql://host:port/database) for the service alone, was '" + config.dbUrl() + "'; "
                    + "'embedded' and 'testcontainers' are for the example's launcher, io.github.idemtx.ledger.storm.LocalLedger"
                    + " (docs/ledger-example.md)");
        }
        return new LedgerServer(config, fresh);
    }

    public static void main(String[] args) throws Exception {
        LedgerConfig config = LedgerConfig.from(args, System.getenv());
        LedgerServer server;
        try {
            server = start(config);
        } catch (IllegalArgumentException
                | HikariPool.PoolInitializationException
                | TransferQueue.BrokerUnavailableException e) {
            // a setting to change, not a crash: the reason alone, without a stack trace
            System.err.println("ledger: " + e.getMessage()
                    + (e instanceof HikariPool.PoolInitializationException
                            ? "; set " + LedgerConfig.DB_URL_SETTING + ", " + LedgerConfig.DB_USER_SETTING + " and "
                                    + LedgerConfig.DB_PASSWORD_SETTING + " to a PostgreSQL that runs (docs/database.md)"
                            : ""));
            System.exit(2);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "ledger-shutdown"));
        announce(server, config);
    }

    /** Prints where the service listens and, for the demo tenants, their tokens. */
    public static void announce(LedgerServer server, LedgerConfig config) {
        System.out.println("ledger listening on http://127.0.0.1:" + server.port() + " (" + config + ")");
        if (server.adminPort() >= 0) {
            System.out.println(
                    "  operators: http://127.0.0.1:" + server.adminPort() + "/admin/backlog and /ops (loopback only)");
            if (config.adminToken() == null) {
                System.out.println("  operators' JSON routes: Authorization: Bearer " + server.adminToken()
                        + " (made at start: set LEDGER_ADMIN_TOKEN to keep one)");
            }
        }
        if (config.demoTokens()) {
            config.tokens()
                    .forEach((token, tenant) ->
                            System.out.println("  demo tenant " + tenant + ": Authorization: Bearer " + token));
        }
    }

    /** The {@code application_name} of the sessions of a ledger on {@code schema}: {@code ledger:<schema>}. */
    public static String applicationName(String schema) {
        return "ledger:" + schema;
    }

    /** The bearer token of the operators' JSON routes ({@link LedgerAdmin}). */
    public String adminToken() {
        return adminToken;
    }

    /** The operators' port ({@link LedgerAdmin}), or -1 when {@code LEDGER_ADMIN_PORT} is unset. */
    public int adminPort() {
        return admin == null ? -1 : admin.port();
    }

    /** The operators' side, or null when {@code LEDGER_ADMIN_PORT} is unset. */
    LedgerAdmin admin() {
        return admin;
    }

    /** The port the service listens on. */
    public int port() {
        return server.getAddress().getPort();
    }

    /** The JDBC URL of the ledger's database (for tools that inspect it, like {@code storm}). */
    public String dbUrl() {
        return config.dbUrl();
    }

    public String dbUser() {
        return config.dbUser();
    }

    public String dbPassword() {
        return config.dbPassword();
    }

    /** The schema holding the ledger's and the claims' tables. */
    public String schema() {
        return config.schema();
    }

    /** Stops accepting requests, lets running ones finish (up to 5 s), then closes the pool. */
    @Override
    public void close() {
        if (queue != null) {
            queue.close(); // first: what it holds unacknowledged goes back to the queue
        }
        server.stop(5);
        executor.close();
        if (admin != null) {
            admin.close();
        }
        if (payouts != null) {
            try {
                payouts.close();
            } catch (Exception e) {
                System.err.println("could not stop the payout recoverer: " + e);
            }
        }
        if (events != null) {
            events.close(); // before the pool: the relay marks the event it is publishing
        }
        pool.close();
    }
}
