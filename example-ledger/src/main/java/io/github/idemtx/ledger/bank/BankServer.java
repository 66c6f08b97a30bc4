package io.github.idemtx.ledger.bank;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A bank to pay out to: a separate HTTP service with storage of its own (table {@code charge} in
 * its own schema, so it survives its own restarts), which honours an {@code Idempotency-Key} the way
 * payment providers do, answers lookups by key, and misbehaves on request.
 *
 * <ul>
 *   <li>{@code POST /charges} {@code {"amount": "10.00", "destination": "..."}} with an
 *       {@code Idempotency-Key}: 201 with the charge ({@code status} succeeded), or 402 when declined
 *       (insufficient funds at the bank; recorded too); the same key again returns the first answer;
 *       the same key with another request is 422.
 *   <li>{@code GET /charges?idempotency_key=K}: 200 with the charge (succeeded or declined), 404 when
 *       there is none (or, with a lookup lag, none visible yet).
 *   <li>{@code POST /faults} with any of {@code latencyMs}, {@code errorBeforeApplyRate} (503, nothing
 *       applied), {@code timeoutAfterApplyRate} (applied, then the connection hangs past the caller's
 *       deadline), {@code declineRate}, {@code lookupLagMs}, {@code lookupErrorRate} (503),
 *       {@code lookupTimeoutRate} (the lookup hangs {@code hangMs}, then no answer); {@code GET /faults}
 *       shows them. The same names are flags at start-up ({@code --latency-ms=20}).
 * </ul>
 *
 * <p>Flags: {@code --port=8090} (0: a free one), {@code --db-url}, {@code --db-user},
 * {@code --db-password}, {@code --schema=bank}, {@code --fresh=true} (empty the schema first),
 * {@code --mode=keyed} (the default: the routes above) or {@code --mode=statement}.
 *
 * <p>In statement mode ({@link StatementBank}) the bank is one that takes no idempotency key and
 * answers no lookup, like most banks' file and statement interfaces: {@code POST /payments} records a
 * new payment on every accepted request (the same reference twice is two payments), {@code /charges}
 * and {@code GET /payments} answer 404, and the only evidence of what it did is its account statement,
 * {@code GET /statements?from=...&to=...}, in ISO 20022 camt.053 (read it with {@link Camt053}). The
 * faults {@code latencyMs}, {@code errorBeforeApplyRate}, {@code timeoutAfterApplyRate} and
 * {@code declineRate} apply to its payments, and two more to when it books them:
 * {@code bookingDelayMs} (every payment is booked that long after receipt) and
 * {@code lateBookingRate} with {@code lateBookingMs} (that share of the payments is booked that long
 * after receipt instead).
 */
public final class BankServer implements AutoCloseable {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final String JSON = "application/json";

    /** What the bank does wrong, switchable at run time. */
    public static final class Faults {
        volatile long latencyMs;
        volatile double errorBeforeApplyRate;
        volatile double timeoutAfterApplyRate;
        volatile double declineRate;
        volatile long lookupLagMs;
        volatile double lookupErrorRate;
        volatile double lookupTimeoutRate;
        /** How long a "timed out" answer hangs before the connection is dropped. */
        volatile long hangMs = 30_000;
        /** Statement mode: how long after receipt a payment is booked. */
        volatile long bookingDelayMs;
        /** Statement mode: the share of payments booked {@link #lateBookingMs} after receipt instead. */
        volatile double lateBookingRate;
        /** Statement mode: how long after receipt a late payment is booked. */
        volatile long lateBookingMs = 60_000;

        /**
         * Sets the faults named (camelCase or the flags' kebab-case), leaving the others; an unknown
         * name, a rate outside 0..1 or a negative or malformed duration is refused, naming it.
         */
        public void set(Map<String, String> values) {
            values.forEach((k, v) -> {
                switch (k) {
                    case "latencyMs", "latency-ms" -> latencyMs = millis(k, v);
                    case "errorBeforeApplyRate", "error-before-apply-rate" -> errorBeforeApplyRate = rate(k, v);
                    case "timeoutAfterApplyRate", "timeout-after-apply-rate" -> timeoutAfterApplyRate = rate(k, v);
                    case "declineRate", "decline-rate" -> declineRate = rate(k, v);
                    case "lookupLagMs", "lookup-lag-ms" -> lookupLagMs = millis(k, v);
                    case "lookupErrorRate", "lookup-error-rate" -> lookupErrorRate = rate(k, v);
                    case "lookupTimeoutRate", "lookup-timeout-rate" -> lookupTimeoutRate = rate(k, v);
                    case "hangMs", "hang-ms" -> hangMs = millis(k, v);
                    case "bookingDelayMs", "booking-delay-ms" -> bookingDelayMs = millis(k, v);
                    case "lateBookingRate", "late-booking-rate" -> lateBookingRate = rate(k, v);
                    case "lateBookingMs", "late-booking-ms" -> lateBookingMs = millis(k, v);
                    default -> throw new IllegalArgumentException("unknown fault '" + k + "'");
                }
            });
        }

        private static double rate(String name, String v) {
            double d;
            try {
                d = Double.parseDouble(v);
            } catch (NumberFormatException e) {
                d = Double.NaN;
            }
            if (!(d >= 0 && d <= 1)) {
                throw new IllegalArgumentException(name + " must be between 0 and 1, was '" + v + "'");
            }
            return d;
        }

        private static long millis(String name, String v) {
            long ms;
            try {
                ms = Long.parseLong(v);
            } catch (NumberFormatException e) {
                ms = -1;
            }
            if (ms < 0) {
                throw new IllegalArgumentException(
                        name + " must be a whole number of milliseconds >= 0, was '" + v + "'");
            }
            return ms;
        }

        ObjectNode json() {
            return MAPPER.createObjectNode()
                    .put("latencyMs", latencyMs)
                    .put("errorBeforeApplyRate", errorBeforeApplyRate)
                    .put("timeoutAfterApplyRate", timeoutAfterApplyRate)
                    .put("declineRate", declineRate)
                    .put("lookupLagMs", lookupLagMs)
                    .put("lookupErrorRate", lookupErrorRate)
                    .put("lookupTimeoutRate", lookupTimeoutRate)
                    .put("hangMs", hangMs)
                    .put("bookingDelayMs", bookingDelayMs)
                    .put("lateBookingRate", lateBookingRate)
                    .put("lateBookingMs", lateBookingMs);
        }
    }

    private final HikariDataSource pool;
    private final String schema;
    private final HttpServer server;
    private final ExecutorService executor;
    final Faults faults = new Faults();
    /** The statement mode's routes; null in keyed mode. */
    private final StatementBank statements;

    /** The bank's faults, to switch at run time. */
    public Faults faults() {
        return faults;
    }

    private BankServer(Map<String, String> flags) throws IOException {
        String mode = flags.getOrDefault("mode", "keyed");
        if (!mode.equals("keyed") && !mode.equals("statement")) {
            throw new IllegalArgumentException("--mode must be keyed or statement, was '" + mode + "'");
        }
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(flags.getOrDefault("db-url", "jdbc:postgresql://127.0.0.1:5432/postgres"));
        hikari.setUsername(flags.getOrDefault("db-user", "postgres"));
        if (flags.containsKey("db-password")) {
            hikari.setPassword(flags.get("db-password"));
        }
        hikari.setMaximumPoolSize(16);
        hikari.setMinimumIdle(2); // a simulator: connections as the load asks, not sixteen held from the start
        hikari.setPoolName("bank");
        hikari.addDataSourceProperty("ApplicationName", "bank");
        this.pool = new HikariDataSource(hikari);
        this.schema = flags.getOrDefault("schema", "bank");
        if (!schema.matches("[a-z_][a-z0-9_]{0,62}")) {
            pool.close();
            throw new IllegalArgumentException("--schema must be a plain lower-case identifier, was '" + schema + "'");
        }
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            if (Boolean.parseBoolean(flags.getOrDefault("fresh", "false"))) {
                s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            }
            s.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
            s.execute(
                    "CREATE TABLE IF NOT EXISTS " + schema
                            + ".charge (idem_key text PRIMARY KEY, request_hash text NOT NULL,"
                            + " id text NOT NULL UNIQUE, amount numeric(18,2) NOT NULL, destination text NOT NULL,"
                            + " status text NOT NULL CHECK (status IN ('succeeded', 'declined')), created_at timestamptz NOT NULL DEFAULT clock_timestamp())");
            // every lookup and whether it was answered (200 or 404) or not (503): what a verifier checks
            // "a claim needs reconciliation only if its lookups went unanswered" against
            s.execute("CREATE TABLE IF NOT EXISTS " + schema
                    + ".lookup (idem_key text NOT NULL, answered boolean NOT NULL,"
                    + " at timestamptz NOT NULL DEFAULT clock_timestamp())");
            if (mode.equals("statement")) {
                StatementBank.createTables(s, schema);
            }
        } catch (SQLException e) {
            pool.close();
            throw new IllegalStateException("the bank cannot prepare its storage", e);
        }
        Map<String, String> faultFlags = new HashMap<>(flags);
        for (String k : new String[] {"db-url", "db-user", "db-password", "schema", "fresh", "port", "mode"}) {
            faultFlags.remove(k);
        }
        faults.set(faultFlags);
        this.statements = mode.equals("statement") ? new StatementBank(pool, schema, faults) : null;
        this.executor = Executors.newVirtualThreadPerTaskExecutor();
        this.server = HttpServer.create(
                new InetSocketAddress("127.0.0.1", Integer.parseInt(flags.getOrDefault("port", "8090"))), 256);
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
    }

    /** Starts a bank with {@code --name=value} flags. */
    public static BankServer start(String... args) throws IOException {
        return new BankServer(io.github.idemtx.ledger.Flags.parse("arguments", args));
    }

    public static void main(String[] args) throws Exception {
        BankServer bank = start(args);
        Runtime.getRuntime().addShutdownHook(new Thread(bank::close, "bank-shutdown"));
        System.out.println("bank listening on http://127.0.0.1:" + bank.port() + " (schema " + bank.schema + ", faults "
                + bank.faults.json() + ")");
    }

    public int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow(); // requests that hang on purpose are interrupted
        pool.close();
    }

    // ---------------------------------------------------------------- HTTP

    private void handle(HttpExchange exchange) throws IOException {
        try {
            String method = exchange.getRequestMethod();
            String path = exchange.getRequestURI().getPath();
            if (statements != null && statements.handle(exchange, method, path)) {
                return; // a statement bank's route (its answer to /charges included)
            } else if (path.equals("/charges") && method.equals("POST")) {
                charge(exchange);
            } else if (path.equals("/charges") && method.equals("GET")) {
                lookup(exchange);
            } else if (path.equals("/faults") && method.equals("POST")) {
                JsonNode body = MAPPER.readTree(read(exchange));
                Map<String, String> values = new HashMap<>();
                body.fields()
                        .forEachRemaining(
                                e -> values.put(e.getKey(), e.getValue().asText()));
                faults.set(values);
                send(exchange, 200, faults.json().toString());
            } else if (path.equals("/faults") && method.equals("GET")) {
                send(exchange, 200, faults.json().toString());
            } else if (path.equals("/health")) {
                send(exchange, 200, "{\"status\":\"up\"}");
            } else {
                send(exchange, 404, "{\"error\":\"not found\"}");
            }
        } catch (IllegalArgumentException e) {
            send(
                    exchange,
                    400,
                    MAPPER.createObjectNode()
                            .put("error", String.valueOf(e.getMessage()))
                            .toString());
        } catch (SQLException | RuntimeException e) {
            send(exchange, 500, "{\"error\":\"internal\"}");
        } finally {
            exchange.close();
        }
    }

    private void charge(HttpExchange exchange) throws IOException, SQLException {
        String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
        byte[] raw = read(exchange);
        if (key == null || key.isBlank() || key.length() > 255) {
            send(exchange, 400, "{\"error\":\"an Idempotency-Key of 1 to 255 characters is required\"}");
            return;
        }
        JsonNode body = MAPPER.readTree(raw);
        BigDecimal amount = new BigDecimal(body.path("amount").asText("x"));
        String destination = body.path("destination").asText("");
        if (amount.signum() <= 0 || amount.scale() > 2 || destination.isEmpty()) {
            send(
                    exchange,
                    400,
                    "{\"error\":\"amount must be positive with at most two decimals; destination is required\"}");
            return;
        }
        String hash = sha256(amount.setScale(2).toPlainString() + "|" + destination);
        pause(faults.latencyMs);
        if (chance(faults.errorBeforeApplyRate)) {
            send(exchange, 503, "{\"error\":\"temporarily unavailable\"}");
            return;
        }
        String status = chance(faults.declineRate) ? "declined" : "succeeded";
        ObjectNode charge;
        int code;
        try (Connection c = pool.getConnection()) {
            try (PreparedStatement ps =
                    c.prepareStatement("INSERT INTO " + schema + ".charge (idem_key, request_hash, id, amount,"
                            + " destination, status) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (idem_key) DO NOTHING")) {
                ps.setString(1, key);
                ps.setString(2, hash);
                ps.setString(
                        3,
                        "ch_"
                                + java.util
                                        .UUID
                                        .randomUUID()
                                        .toString()
                                        .replace("-", "")
                                        .substring(0, 20));
                ps.setBigDecimal(4, amount);
                ps.setString(5, destination);
                ps.setString(6, status);
                ps.executeUpdate();
            }
            Map<String, Object> row = find(c, key);
            if (!hash.equals(row.get("request_hash"))) {
                send(exchange, 422, "{\"error\":\"this Idempotency-Key was used for another charge\"}");
                return;
            }
            charge = json(row);
            code = "succeeded".equals(row.get("status")) ? 201 : 402;
        }
        if (chance(faults.timeoutAfterApplyRate)) {
            pause(faults.hangMs); // applied; the answer never comes in time
            return;
        }
        send(exchange, code, charge.toString());
    }

    private void lookup(HttpExchange exchange) throws IOException, SQLException {
        String key = null;
        String query = exchange.getRequestURI().getRawQuery();
        if (query != null) {
            for (String pair : query.split("&")) {
                if (pair.startsWith("idempotency_key=")) {
                    key = URLDecoder.decode(pair.substring("idempotency_key=".length()), StandardCharsets.UTF_8);
                }
            }
        }
        if (key == null) {
            send(exchange, 400, "{\"error\":\"idempotency_key is required\"}");
            return;
        }
        pause(faults.latencyMs);
        boolean hangs = chance(faults.lookupTimeoutRate);
        boolean answered = !hangs && !chance(faults.lookupErrorRate);
        try (Connection c = pool.getConnection();
                PreparedStatement log =
                        c.prepareStatement("INSERT INTO " + schema + ".lookup (idem_key, answered) VALUES (?, ?)")) {
            log.setString(1, key);
            log.setBoolean(2, answered);
            log.executeUpdate();
        }
        if (hangs) {
            pause(faults.hangMs); // the caller's timeout ends it first
            return;
        }
        if (!answered) {
            send(exchange, 503, "{\"error\":\"temporarily unavailable\"}");
            return;
        }
        try (Connection c = pool.getConnection()) {
            Map<String, Object> row = find(c, key);
            boolean visible = row != null
                    && (faults.lookupLagMs <= 0
                            || ((java.sql.Timestamp) row.get("created_at"))
                                    .toInstant()
                                    .plusMillis(faults.lookupLagMs)
                                    .isBefore(java.time.Instant.now()));
            if (!visible) {
                send(exchange, 404, "{\"error\":\"no charge with this idempotency key\"}");
                return;
            }
            send(exchange, 200, json(row).toString());
        }
    }

    private Map<String, Object> find(Connection c, String key) throws SQLException {
        try (PreparedStatement ps =
                c.prepareStatement("SELECT id, amount, destination, status, request_hash, created_at, idem_key FROM "
                        + schema + ".charge WHERE idem_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                Map<String, Object> row = new HashMap<>();
                row.put("id", rs.getString(1));
                row.put("amount", rs.getBigDecimal(2));
                row.put("destination", rs.getString(3));
                row.put("status", rs.getString(4));
                row.put("request_hash", rs.getString(5));
                row.put("created_at", rs.getTimestamp(6));
                row.put("idem_key", rs.getString(7));
                return row;
            }
        }
    }

    private static ObjectNode json(Map<String, Object> row) {
        return MAPPER.createObjectNode()
                .put("id", (String) row.get("id"))
                .put("amount", ((BigDecimal) row.get("amount")).setScale(2).toPlainString())
                .put("destination", (String) row.get("destination"))
                .put("status", (String) row.get("status"))
                .put("idempotencyKey", (String) row.get("idem_key"));
    }

    static byte[] read(HttpExchange exchange) throws IOException {
        try (InputStream in = exchange.getRequestBody()) {
            return in.readNBytes(64 * 1024);
        }
    }

    static void send(HttpExchange exchange, int status, String body) throws IOException {
        send(exchange, status, JSON, body.getBytes(StandardCharsets.UTF_8));
    }

    static void send(HttpExchange exchange, int status, String contentType, byte[] bytes) throws IOException {
        exchange.getResponseHeaders().add("Content-Type", contentType);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    static boolean chance(double rate) {
        return rate > 0 && ThreadLocalRandom.current().nextDouble() < rate;
    }

    static void pause(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String sha256(String s) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
