package io.github.idemtx.ledger;

import io.github.idemtx.db.testing.ConnectionCheck;
import io.github.idemtx.db.testing.LocalPostgres;
import java.util.Optional;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.http.IdempotentResponses;
import io.github.idemtx.http.InvalidIdempotencyKeyException;
import io.github.idemtx.http.InvalidJsonException;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.http.Problem;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.http.RequestFingerprint;
import io.github.idemtx.core.Scope;
import io.github.idemtx.http.StoredResponse;
import io.github.idemtx.http.StoredResponseCodec;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionalWork;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.flywaydb.core.Flyway;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * The ledger as an HTTP service: {@code com.sun.net.httpserver} on virtual threads, HikariCP,
 * Flyway, jOOQ, Jackson, problem+json errors, and every POST made idempotent with
 * {@link IdempotentTransaction}. Each tenant's keys live in the tenant's scope, taken from the
 * bearer token, never from anything else the client sends.
 */
public final class LedgerServer implements AutoCloseable {

    static final int MAX_BODY = 64 * 1024;
    static final String JSON = "application/json";

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Pattern MONEY = Pattern.compile("(0|[1-9][0-9]{0,14})\\.[0-9]{2}");
    private static final Pattern CURRENCY = Pattern.compile("[A-Z]{3}");
    private static final Pattern ACCOUNT_PATH = Pattern.compile("/accounts/([^/]+)");
    private static final Pattern DEPOSIT_PATH = Pattern.compile("/accounts/([^/]+)/deposits");
    private static final Pattern TRANSFER_PATH = Pattern.compile("/transfers/([^/]+)");
    private static final Pattern PAYOUT_PATH = Pattern.compile("/payouts/([^/]+)");
    private static final java.util.Set<String> PAYOUT_STATES = java.util.Set.of("in_flight", "paid", "refused", "needs_reconciliation");

    private final LedgerConfig config;
    private final HikariDataSource pool;
    private final DSLContext dsl;
    private final Ledger ledger;
    private final IdempotentTransaction<StoredResponse> idempotent;
    private final Payouts payouts;
    private final io.micrometer.prometheusmetrics.PrometheusMeterRegistry metrics =
            new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
    private final HttpServer server;
    private final ExecutorService executor;
    private final AutoCloseable database;

    private LedgerServer(LedgerConfig config, AutoCloseable database, boolean fresh) throws IOException {
        this.config = config;
        this.database = database;
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(config.dbUrl());
        hikari.setUsername(config.dbUser());
        hikari.setPassword(config.dbPassword());
        hikari.setMaximumPoolSize(config.poolSize());
        hikari.setConnectionTimeout(5_000);
        hikari.setPoolName("ledger");
        hikari.addDataSourceProperty("ApplicationName", "ledger");
        this.pool = new HikariDataSource(hikari);
        try {
            if (fresh) {
                DSL.using(pool, SQLDialect.POSTGRES).execute("DROP SCHEMA IF EXISTS " + config.schema() + " CASCADE");
            }
            IdempotencySchema.migrate(pool, config.schema());
            Flyway.configure(LedgerServer.class.getClassLoader())
                    .dataSource(pool)
                    .locations("classpath:db/ledger")
                    .schemas(config.schema())
                    .defaultSchema(config.schema())
                    .baselineOnMigrate(true)
                    .baselineVersion("0")
                    .load()
                    .migrate();
            this.dsl = DSL.using(pool, SQLDialect.POSTGRES);
            this.ledger = new Ledger(config.schema());
            io.github.idemtx.micrometer.MicrometerIdempotencyListener listener =
                    io.github.idemtx.micrometer.MicrometerIdempotencyListener.of(metrics);
            this.idempotent = IdempotentTransaction.builder(dsl, StoredResponseCodec.defaults())
                    .policy(IdempotencyPolicy.builder().duplicateWait(Duration.ofSeconds(2)).build())
                    .schema(config.schema())
                    .claimMode(config.claimMode())
                    .listener(listener)
                    .build();
            // payouts: a demo-scale lease and lookup schedule (the library's defaults are 30 s and 1, 2, 4 minutes)
            this.payouts = config.bankUrl() == null ? null : new Payouts(dsl, config.schema(), config.bankUrl(),
                    Duration.ofSeconds(5), Duration.ofSeconds(1), List.of(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4)),
                    listener);
            this.executor = Executors.newVirtualThreadPerTaskExecutor();
            this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", config.port()), 512);
            server.setExecutor(executor);
            server.createContext("/", this::handle);
            server.start();
        } catch (RuntimeException | IOException e) {
            pool.close();
            throw e;
        }
    }

    /** Starts the service with {@code config}, its database resolved as {@link LedgerConfig} says. */
    public static LedgerServer start(LedgerConfig config) throws IOException {
        return start(config, false);
    }

    /**
     * Starts the service configured by {@code args} and the {@code LEDGER_*} environment, in a
     * schema emptied first: for tests and {@code storm}.
     */
    public static LedgerServer startFresh(String[] args) throws IOException {
        return start(LedgerConfig.from(args, System.getenv()), true);
    }

    /** The names of the ledger's database settings, for the messages of whoever resolves its database. */
    public static ConnectionCheck.Settings databaseSettings() {
        return LedgerConfig.DB_SETTINGS;
    }

    private static LedgerServer start(LedgerConfig config, boolean fresh) throws IOException {
        LocalPostgres db = LocalPostgres.resolve(config.dbUrl(), config.dbUser(), config.dbPassword(), LedgerConfig.DB_SETTINGS);
        System.out.println("ledger database: " + db.describe());
        try {
            return new LedgerServer(config.withDatabase(db.url(), db.user(), db.password()), db, fresh);
        } catch (RuntimeException | IOException e) {
            db.close();
            throw e;
        }
    }

    public static void main(String[] args) throws Exception {
        try {
            launch(args);
        } catch (io.github.idemtx.db.testing.LocalPostgres.NoDatabaseException e) {
            // a setting to change, not a crash: the reason alone, without a stack trace
            System.err.println("ledger: " + e.getMessage());
            System.exit(2);
        }
    }

    private static void launch(String[] args) throws Exception {
        LedgerConfig config = LedgerConfig.from(args, System.getenv());
        LedgerServer server = start(config);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "ledger-shutdown"));
        System.out.println("ledger listening on http://127.0.0.1:" + server.port() + " (" + config + ")");
        if (config.demoTokens()) {
            config.tokens().forEach((token, tenant) -> System.out.println("  demo tenant " + tenant + ": Authorization: Bearer " + token));
        }
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
        server.stop(5);
        executor.close();
        if (payouts != null) {
            try {
                payouts.close();
            } catch (Exception e) {
                System.err.println("could not stop the payout recoverer: " + e);
            }
        }
        pool.close();
        try {
            database.close();
        } catch (Exception e) {
            System.err.println("could not stop the database: " + e);
        }
    }

    // ---------------------------------------------------------------- routing

    private void handle(HttpExchange exchange) throws IOException {
        StoredResponse response;
        try {
            response = route(exchange);
        } catch (RuntimeException e) {
            // the body says nothing of the internals; the log says what happened
            String reason = String.valueOf(e.getMessage());
            int sql = reason.startsWith("SQL [") ? reason.indexOf("]; ") : -1; // jOOQ puts the SQL first
            if (sql >= 0) {
                reason = reason.substring(sql + 3);
            }
            reason = reason.lines().findFirst().orElse("").strip(); // one line: the server's "Where: ..." stays out
            System.err.println("ledger: " + exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath()
                    + " answered 503: " + e.getClass().getSimpleName() + ": " + reason);
            response = problem(503, "unavailable", "Service unavailable",
                    "the request could not be completed; retry it with the same Idempotency-Key").toResponse()
                    .withHeader("Retry-After", "1");
        }
        send(exchange, response);
    }

    private StoredResponse route(HttpExchange exchange) throws IOException {
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getRawPath();
        if (path.equals("/health") && method.equals("GET")) {
            return StoredResponse.of(200, JSON, "{\"status\":\"up\"}");
        }
        if (path.equals("/metrics") && method.equals("GET")) {
            // operational data, like /health: no tenant's data in it (the library tags no scope or key)
            return StoredResponse.of(200, "text/plain; version=0.0.4; charset=utf-8", metrics.scrape());
        }
        String tenant = tenant(exchange);
        if (tenant == null) {
            return Problem.unauthenticated().toResponse().withHeader("WWW-Authenticate", "Bearer");
        }
        Matcher m;
        if (method.equals("GET") && (m = ACCOUNT_PATH.matcher(path)).matches()) {
            return uuid(m.group(1)).flatMap(id -> ledger.account(dsl, tenant, id)).map(LedgerServer::accountResponse)
                    .orElseGet(() -> notFound("account"));
        }
        if (method.equals("GET") && (m = TRANSFER_PATH.matcher(path)).matches()) {
            return uuid(m.group(1)).flatMap(id -> ledger.transfer(dsl, tenant, id)).map(t -> transferResponse(t, 200))
                    .orElseGet(() -> notFound("transfer"));
        }
        if (method.equals("GET") && (m = PAYOUT_PATH.matcher(path)).matches()) {
            if (payouts == null) {
                return payoutsOff();
            }
            return uuid(m.group(1)).flatMap(id -> payouts.find(dsl, tenant, id)).map(p -> payoutResponse(p, 200))
                    .orElseGet(() -> notFound("payout"));
        }
        if (method.equals("GET") && path.equals("/payouts")) {
            if (payouts == null) {
                return payoutsOff();
            }
            String state = queryParameter(exchange, "state");
            if (state == null || !PAYOUT_STATES.contains(state)) {
                return problem(400, "invalid_request", "Invalid request", "state must be one of " + new java.util.TreeSet<>(PAYOUT_STATES))
                        .toResponse();
            }
            com.fasterxml.jackson.databind.node.ArrayNode list = MAPPER.createArrayNode();
            payouts.list(dsl, tenant, state, 1000).forEach(p -> list.add(payoutJson(p)));
            return StoredResponse.of(200, JSON, list.toString());
        }
        if (!method.equals("POST")) {
            return problem(404, "not_found", "Not found", "no such resource: " + method + " " + path).toResponse();
        }
        if (path.equals("/payouts")) {
            return payouts == null ? payoutsOff() : payout(exchange, tenant);
        }
        if (path.equals("/accounts")) {
            return idempotently(exchange, tenant, body -> tx -> {
                String currency = text(body, "currency");
                if (!CURRENCY.matcher(currency).matches()) {
                    throw new Rejection("invalid_request", "currency must be three upper-case letters, like BRL");
                }
                return accountResponse(ledger.openAccount(tx, tenant, currency), 201);
            });
        }
        if ((m = DEPOSIT_PATH.matcher(path)).matches()) {
            String account = m.group(1);
            return idempotently(exchange, tenant, body -> tx -> {
                UUID to = uuid(account).orElseThrow(() -> new Rejection("account_not_found", "account " + account + " does not exist"));
                return transferResponse(ledger.deposit(tx, tenant, to, money(body, "amount")), 201);
            });
        }
        if (path.equals("/transfers")) {
            return idempotently(exchange, tenant, body -> tx -> {
                UUID from = accountId(body, "from");
                UUID to = accountId(body, "to");
                return transferResponse(ledger.transfer(tx, tenant, from, to, money(body, "amount")), 201);
            });
        }
        return problem(404, "not_found", "Not found", "no such resource: " + method + " " + path).toResponse();
    }

    /** The work of a POST, given its parsed JSON body. */
    @FunctionalInterface
    private interface Handler {
        TransactionalWork<StoredResponse> work(JsonNode body);
    }

    /**
     * Runs a POST through the idempotency layer. The key and the body size are checked before any
     * SQL; the fingerprint covers method, path, query and the canonical JSON body; a body that is
     * not JSON is a recorded 400, like every other deterministic refusal.
     */
    private StoredResponse idempotently(HttpExchange exchange, String tenant, Handler handler) throws IOException {
        byte[] body = readBody(exchange);
        if (body == null) {
            return problem(413, "body_too_large", "Body too large",
                    "the body must be at most " + MAX_BODY + " bytes").toResponse();
        }
        IdempotencyKey key;
        try {
            key = IdempotencyKeyHeader.parse(exchange.getRequestHeaders().get(IdempotencyKeyHeader.NAME));
        } catch (InvalidIdempotencyKeyException e) {
            return Problem.invalidKey(e).toResponse();
        }
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getRawPath();
        String query = exchange.getRequestURI().getRawQuery();
        Fingerprint fingerprint;
        TransactionalWork<StoredResponse> work;
        try {
            fingerprint = RequestFingerprint.json(method, path, query, body);
            JsonNode json = MAPPER.readTree(body);
            work = json.isObject() ? handler.work(json) : tx -> {
                throw new Rejection("invalid_request", "the body must be a JSON object");
            };
        } catch (InvalidJsonException e) {
            fingerprint = RequestFingerprint.raw(method, path, query, body);
            String reason = e.getMessage();
            work = tx -> {
                throw new Rejection("invalid_json", reason);
            };
        }
        Outcome<StoredResponse> outcome = idempotent.run(Scope.of(tenant), key, fingerprint, work);
        return IdempotentResponses.toResponse(outcome, LedgerServer::rejection);
    }

    /**
     * {@code POST /payouts}: the body is checked before anything is claimed (a malformed one is a 400
     * that writes nothing); then the payout runs through the external-effect door.
     */
    private StoredResponse payout(HttpExchange exchange, String tenant) throws IOException {
        byte[] body = readBody(exchange);
        if (body == null) {
            return problem(413, "body_too_large", "Body too large", "the body must be at most " + MAX_BODY + " bytes").toResponse();
        }
        IdempotencyKey key;
        try {
            key = IdempotencyKeyHeader.parse(exchange.getRequestHeaders().get(IdempotencyKeyHeader.NAME));
        } catch (InvalidIdempotencyKeyException e) {
            return Problem.invalidKey(e).toResponse();
        }
        Payouts.PayoutRequest request;
        Fingerprint fingerprint;
        try {
            fingerprint = RequestFingerprint.json("POST", "/payouts", exchange.getRequestURI().getRawQuery(), body);
            JsonNode json = MAPPER.readTree(body);
            if (!json.isObject()) {
                throw new Rejection("invalid_request", "the body must be a JSON object");
            }
            String destination = text(json, "destination");
            if (destination.isBlank() || destination.length() > 200) {
                throw new Rejection("invalid_request", "destination must be 1 to 200 characters");
            }
            request = new Payouts.PayoutRequest(accountId(json, "from"), money(json, "amount"), destination);
        } catch (InvalidJsonException e) {
            return problem(400, "invalid_json", "Invalid json", e.getMessage()).toResponse();
        } catch (Rejection e) {
            return rejection(e.failure());
        }
        Scope scope = Scope.of(tenant);
        io.github.idemtx.core.RemoteOutcome<String> outcome = payouts.pay(scope, key, fingerprint, request);
        UUID id = Payouts.payoutId(scope, key);
        io.github.idemtx.core.RemoteOutcome<StoredResponse> answer = switch (outcome) {
            case Outcome.Executed<String> e -> new Outcome.Executed<>(paid(tenant, id));
            case Outcome.Replayed<String> r -> new Outcome.Replayed<>(paid(tenant, id), r.completedAt());
            case Outcome.Rejected<String> f -> new Outcome.Rejected<>(f.failure(), f.recordedAt(), f.replayed());
            case Outcome.FingerprintMismatch<String> m -> new Outcome.FingerprintMismatch<>();
            case Outcome.InProgress<String> p -> new Outcome.InProgress<>(p.retryAfter());
            case io.github.idemtx.core.RemoteOutcome.Unknown<String> u -> {
                System.err.println("ledger: payout " + id + " outcome unknown: " + u.reason());
                yield new io.github.idemtx.core.RemoteOutcome.Unknown<>(u.retryAfter(), u.reason());
            }
            case io.github.idemtx.core.RemoteOutcome.NeedsReconciliation<String> n ->
                    new io.github.idemtx.core.RemoteOutcome.NeedsReconciliation<>(n.since());
        };
        return IdempotentResponses.toResponse(answer, LedgerServer::rejection);
    }

    private StoredResponse paid(String tenant, UUID id) {
        return payouts.find(dsl, tenant, id).map(p -> payoutResponse(p, 201))
                .orElseThrow(() -> new IllegalStateException("payout " + id + " recorded but not found"));
    }

    private static StoredResponse payoutsOff() {
        return problem(503, "payouts_unavailable", "Payouts unavailable", "this ledger has no bank configured (LEDGER_BANK_URL)")
                .toResponse();
    }

    private static com.fasterxml.jackson.databind.node.ObjectNode payoutJson(Payouts.Payout p) {
        com.fasterxml.jackson.databind.node.ObjectNode json = MAPPER.createObjectNode()
                .put("id", p.id().toString())
                .put("from", p.account().toString())
                .put("amount", p.amount().setScale(2).toPlainString())
                .put("currency", p.currency())
                .put("destination", p.destination())
                .put("state", p.state())
                .put("createdAt", p.createdAt().toInstant().toString());
        if (p.chargeId() != null) {
            json.put("chargeId", p.chargeId());
        }
        return json;
    }

    private static StoredResponse payoutResponse(Payouts.Payout p, int status) {
        StoredResponse response = StoredResponse.of(status, JSON, payoutJson(p).toString());
        return status == 201 ? response.withHeader("Location", "/payouts/" + p.id()) : response;
    }

    private static String queryParameter(HttpExchange exchange, String name) {
        String query = exchange.getRequestURI().getRawQuery();
        if (query == null) {
            return null;
        }
        for (String pair : query.split("&")) {
            if (pair.startsWith(name + "=")) {
                return java.net.URLDecoder.decode(pair.substring(name.length() + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    /** The HTTP answer of a recorded refusal: it depends on the failure alone, so replays match. */
    static StoredResponse rejection(Failure failure) {
        int status = switch (failure.code()) {
            case "account_not_found" -> 404;
            case "invalid_json", "invalid_request" -> 400;
            default -> 422;
        };
        return problem(status, failure.code(), title(failure.code()), failure.message()).toResponse();
    }

    // ---------------------------------------------------------------- helpers

    private String tenant(HttpExchange exchange) {
        List<String> auth = exchange.getRequestHeaders().get("Authorization");
        if (auth == null || auth.size() != 1 || !auth.get(0).startsWith("Bearer ")) {
            return null;
        }
        return config.tokens().get(auth.get(0).substring("Bearer ".length()).trim());
    }

    /** The body, or null when it is larger than {@link #MAX_BODY}; read no further than that. */
    private static byte[] readBody(HttpExchange exchange) throws IOException {
        String length = exchange.getRequestHeaders().getFirst("Content-Length");
        if (length != null) {
            try {
                if (Long.parseLong(length.trim()) > MAX_BODY) {
                    return null;
                }
            } catch (NumberFormatException e) {
                return null;
            }
        }
        try (InputStream in = exchange.getRequestBody()) {
            byte[] body = in.readNBytes(MAX_BODY + 1);
            return body.length > MAX_BODY ? null : body;
        }
    }

    private static void send(HttpExchange exchange, StoredResponse response) throws IOException {
        for (StoredResponse.Header h : response.headers()) {
            exchange.getResponseHeaders().add(h.name(), h.value());
        }
        byte[] body = response.body();
        exchange.sendResponseHeaders(response.status(), body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    private static String text(JsonNode body, String field) {
        JsonNode value = body.get(field);
        if (value == null || !value.isTextual()) {
            throw new Rejection("invalid_request", field + " must be a JSON string");
        }
        return value.asText();
    }

    private static BigDecimal money(JsonNode body, String field) {
        String value = text(body, field);
        if (!MONEY.matcher(value).matches() || new BigDecimal(value).signum() <= 0) {
            throw new Rejection("invalid_request", field + " must be a positive amount with exactly two decimals, like \"10.00\"");
        }
        return new BigDecimal(value);
    }

    private static UUID accountId(JsonNode body, String field) {
        String value = text(body, field);
        return uuid(value).orElseThrow(() -> new Rejection("account_not_found", "account " + value + " does not exist"));
    }

    private static Optional<UUID> uuid(String value) {
        try {
            UUID id = UUID.fromString(value);
            return id.toString().equals(value.toLowerCase(java.util.Locale.ROOT)) ? Optional.of(id) : Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private static StoredResponse accountResponse(Ledger.Account a) {
        return accountResponse(a, 200);
    }

    private static StoredResponse accountResponse(Ledger.Account a, int status) {
        ObjectNode json = MAPPER.createObjectNode()
                .put("id", a.id().toString())
                .put("currency", a.currency())
                .put("balance", a.balance().setScale(2).toPlainString());
        StoredResponse response = StoredResponse.of(status, JSON, json.toString());
        return status == 201 ? response.withHeader("Location", "/accounts/" + a.id()) : response;
    }

    private static StoredResponse transferResponse(Ledger.Transfer t, int status) {
        ObjectNode json = MAPPER.createObjectNode()
                .put("id", t.id().toString())
                .put("from", t.from().toString())
                .put("to", t.to().toString())
                .put("amount", t.amount().setScale(2).toPlainString())
                .put("currency", t.currency())
                .put("createdAt", t.createdAt().toInstant().toString());
        StoredResponse response = StoredResponse.of(status, JSON, json.toString());
        return status == 201 ? response.withHeader("Location", "/transfers/" + t.id()) : response;
    }

    private static StoredResponse notFound(String what) {
        return problem(404, what + "_not_found", "Not found", "no such " + what + " in this tenant").toResponse();
    }

    static Problem problem(int status, String code, String title, String detail) {
        return new Problem("urn:ledger:problem:" + code, title, status, detail, Map.of("code", code));
    }

    private static String title(String code) {
        String spaced = code.replace('_', ' ');
        return Character.toUpperCase(spaced.charAt(0)) + spaced.substring(1);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
