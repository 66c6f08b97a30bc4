package io.github.idemtx.ledger.bank;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;

/**
 * The statement mode of {@link BankServer}: a bank that takes no idempotency key and answers no
 * lookup, whose only evidence of what it did is its account statement in ISO 20022 camt.053.
 *
 * <ul>
 *   <li>{@code POST /payments} {@code {"amount": "10.00", "currency": "EUR", "destination": "...",
 *       "reference": "..."}}: 202 {@code {"id": entry id, "status": "accepted"}}. Every accepted
 *       request is a new payment (an {@code Idempotency-Key} is ignored; the same reference twice is
 *       two payments), booked {@code bookingDelayMs} after receipt, or {@code lateBookingMs} for a
 *       {@code lateBookingRate} share. 400 naming the field for bad input; 503 (nothing recorded)
 *       and 402 {@code {"status": "declined"}} (nothing recorded) by the faults, or the connection
 *       hangs after the payment was recorded.
 *   <li>{@code GET /statements?from=<instant>&to=<instant>}: a camt.053.001.08 document of the
 *       payments booked in [from, to), ordered by booking time then entry id; only for a closed
 *       period ({@code to} not after the bank's clock) of at most 31 days. A payment recorded before
 *       the period ended is in it: the statement waits for payments being recorded (an advisory
 *       lock), so that a statement served once never gains an entry later. Written by {@link
 *       Camt053Writer}.
 *   <li>{@code /charges} and {@code GET /payments}: 404, this bank answers no lookup.
 * </ul>
 */
final class StatementBank {

    /** The longest period a statement covers. */
    static final Duration MAX_SPAN = Duration.ofDays(31);

    private static final String NO_LOOKUP = "{\"error\":\"this bank answers no lookup; read its statement\"}";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final DataSource pool;
    private final String schema;
    private final BankServer.Faults faults;
    /** Taken shared by each payment's transaction, exclusively by a statement before it reads. */
    private final String lock;

    StatementBank(DataSource pool, String schema, BankServer.Faults faults) {
        this.pool = pool;
        this.schema = schema;
        this.faults = faults;
        this.lock = "hashtext('" + schema + ".payment')"; // schema: a plain identifier, checked
    }

    /** Creates the payments' table in {@code schema} (a plain identifier) unless it is there. */
    static void createTables(Statement s, String schema) throws SQLException {
        s.execute("CREATE TABLE IF NOT EXISTS " + schema + ".payment (id text PRIMARY KEY,"
                + " reference text NOT NULL CHECK (char_length(reference) BETWEEN 1 AND 140),"
                + " amount numeric(18,2) NOT NULL CHECK (amount > 0),"
                + " currency text NOT NULL DEFAULT 'EUR' CHECK (currency ~ '^[A-Z]{3}$'),"
                + " destination text NOT NULL CHECK (char_length(destination) BETWEEN 1 AND 140),"
                + " created_at timestamptz NOT NULL DEFAULT clock_timestamp(),"
                + " booked_at timestamptz NOT NULL, CHECK (booked_at >= created_at))");
        s.execute("CREATE INDEX IF NOT EXISTS payment_booked_at ON " + schema + ".payment (booked_at, id)");
    }

    /** Answers the request if it is one of this mode's routes; whether it was. */
    boolean handle(HttpExchange exchange, String method, String path) throws IOException, SQLException {
        if (path.equals("/payments") && method.equals("POST")) {
            pay(exchange);
        } else if (path.equals("/statements") && method.equals("GET")) {
            statement(exchange);
        } else if (path.equals("/charges") || path.equals("/payments")) {
            BankServer.send(exchange, 404, NO_LOOKUP);
        } else {
            return false;
        }
        return true;
    }

    // ---------------------------------------------------------------- payments

    /** A payment as asked for, checked. */
    record PaymentRequest(String reference, BigDecimal amount, String currency, String destination) {

        /** Reads and checks a request body; an {@link IllegalArgumentException} names what is wrong. */
        static PaymentRequest of(byte[] raw) {
            JsonNode body;
            try {
                body = MAPPER.readTree(raw);
            } catch (IOException e) { // not JSON
                body = null;
            }
            if (body == null || !body.isObject()) {
                throw new IllegalArgumentException(
                        "the body must be a JSON object:"
                                + " {\"amount\": \"10.00\", \"currency\": \"EUR\", \"destination\": \"...\", \"reference\": \"...\"}");
            }
            JsonNode a = body.path("amount");
            if (!a.isTextual() && !a.isNumber()) {
                throw new IllegalArgumentException("amount is required: a positive decimal string such as \"10.00\"");
            }
            BigDecimal amount;
            try {
                amount = new BigDecimal(a.asText().strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "amount must be a decimal number such as \"10.00\", was '" + a.asText() + "'");
            }
            if (amount.signum() <= 0) {
                throw new IllegalArgumentException("amount must be positive, was " + amount.toPlainString());
            }
            if (amount.stripTrailingZeros().scale() > 2) {
                throw new IllegalArgumentException(
                        "amount must have at most two decimals, was " + amount.toPlainString());
            }
            if (amount.compareTo(BigDecimal.TEN.pow(16)) >= 0) {
                throw new IllegalArgumentException("amount must be below 10^16, was " + amount.toPlainString());
            }
            JsonNode c = body.path("currency");
            String currency = c.isMissingNode() || c.isNull() ? "EUR" : c.asText();
            if (!c.isMissingNode() && !c.isNull() && (!c.isTextual() || !currency.matches("[A-Z]{3}"))) {
                throw new IllegalArgumentException("currency must be three upper-case letters (ISO 4217), was " + c);
            }
            return new PaymentRequest(text(body, "reference"), amount.setScale(2), currency, text(body, "destination"));
        }

        /** A required text field of 1 to 140 characters, not blank, without control characters. */
        private static String text(JsonNode body, String field) {
            JsonNode n = body.path(field);
            if (!n.isTextual()) {
                throw new IllegalArgumentException(field + " is required: a string of 1 to 140 characters");
            }
            String v = n.asText();
            if (v.isBlank()) {
                throw new IllegalArgumentException(field + " must not be blank");
            }
            if (v.codePointCount(0, v.length()) > 140) {
                throw new IllegalArgumentException(
                        field + " must be at most 140 characters (camt.053's Max140Text), was "
                                + v.codePointCount(0, v.length()));
            }
            if (!v.codePoints().allMatch(PaymentRequest::printable)) {
                throw new IllegalArgumentException(
                        field + " must not contain control characters or unpaired surrogates");
            }
            return v;
        }

        /** A character XML 1.0 can carry that is no control character. */
        private static boolean printable(int cp) {
            return !Character.isISOControl(cp) && (cp <= 0xD7FF || (cp >= 0xE000 && cp <= 0xFFFD) || cp >= 0x10000);
        }
    }

    private void pay(HttpExchange exchange) throws IOException, SQLException {
        PaymentRequest p = PaymentRequest.of(BankServer.read(exchange));
        BankServer.pause(faults.latencyMs);
        if (BankServer.chance(faults.errorBeforeApplyRate)) {
            BankServer.send(exchange, 503, "{\"error\":\"temporarily unavailable\"}");
            return;
        }
        if (BankServer.chance(faults.declineRate)) {
            BankServer.send(exchange, 402, "{\"status\":\"declined\"}");
            return;
        }
        long delayMs = BankServer.chance(faults.lateBookingRate) ? faults.lateBookingMs : faults.bookingDelayMs;
        String id = entryId();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement();
                    PreparedStatement insert = c.prepareStatement("INSERT INTO " + schema
                            + ".payment (id, reference, amount, currency, destination, created_at, booked_at)"
                            + " SELECT ?, ?, ?, ?, ?, t, t + ? * interval '1 millisecond'"
                            + " FROM (SELECT clock_timestamp() AS t) now")) {
                s.execute("SELECT pg_advisory_xact_lock_shared(" + lock + ")");
                insert.setString(1, id);
                insert.setString(2, p.reference());
                insert.setBigDecimal(3, p.amount());
                insert.setString(4, p.currency());
                insert.setString(5, p.destination());
                insert.setLong(6, delayMs);
                insert.executeUpdate();
                c.commit();
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
        if (BankServer.chance(faults.timeoutAfterApplyRate)) {
            BankServer.pause(faults.hangMs); // recorded; the answer never comes in time
            return;
        }
        BankServer.send(
                exchange,
                202,
                MAPPER.createObjectNode()
                        .put("id", id)
                        .put("status", "accepted")
                        .toString());
    }

    /** "E" and 20 random upper-case letters and digits: the bank's entry id, its AcctSvcrRef. */
    static String entryId() {
        String alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        StringBuilder id = new StringBuilder("E");
        for (int i = 0; i < 20; i++) {
            id.append(alphabet.charAt(ThreadLocalRandom.current().nextInt(alphabet.length())));
        }
        return id.toString();
    }

    // ---------------------------------------------------------------- statements

    private void statement(HttpExchange exchange) throws IOException, SQLException {
        Map<String, String> query = new HashMap<>();
        String raw = exchange.getRequestURI().getRawQuery();
        if (raw != null) {
            for (String pair : raw.split("&")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    query.put(pair.substring(0, eq), URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
                }
            }
        }
        Instant from = instant(query, "from");
        Instant to = instant(query, "to");
        if (!from.isBefore(to)) {
            throw new IllegalArgumentException("from must be before to; from " + from + ", to " + to);
        }
        if (Duration.between(from, to).compareTo(MAX_SPAN) > 0) {
            throw new IllegalArgumentException("a statement spans at most 31 days; from " + from + " to " + to
                    + " spans " + Duration.between(from, to));
        }
        try (Connection c = pool.getConnection()) {
            Instant now = settle(c);
            if (to.isAfter(now)) {
                throw new IllegalArgumentException(
                        "the period has not ended: to " + to + " is later than the bank's clock " + now
                                + "; a statement is served only for a closed period");
            }
            BankServer.send(exchange, 200, "application/xml", camt053(c, from, to, now));
        }
    }

    private static Instant instant(Map<String, String> query, String name) {
        String v = query.get(name);
        String example = "an ISO-8601 instant such as 2024-05-01T00:00:00Z (an offset's '+' encoded as %2B)";
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException(name + " is required: " + example);
        }
        try {
            return DateTimeFormatter.ISO_OFFSET_DATE_TIME.parse(v, Instant::from);
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(name + " must be " + example + ", was '" + v + "'");
        }
    }

    /**
     * Waits until no payment is being recorded, then reads the bank's clock: every payment recorded
     * later reads the clock after it, so is booked after it too, and a period that ended by then is
     * closed for good.
     */
    private Instant settle(Connection c) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("SELECT pg_advisory_xact_lock(" + lock + ")");
            try (ResultSet rs = s.executeQuery("SELECT clock_timestamp()")) {
                rs.next();
                Instant now = rs.getObject(1, OffsetDateTime.class).toInstant();
                c.commit();
                return now;
            }
        } finally {
            c.setAutoCommit(true);
        }
    }

    /** The payments booked in [from, to), ordered by booking time then id, and the balances. */
    private byte[] camt053(Connection c, Instant from, Instant to, Instant now) throws SQLException {
        List<Camt053Writer.Balance> balances = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT currency, coalesce(sum(amount) FILTER (WHERE booked_at < ?)," + " 0), sum(amount) FROM "
                        + schema + ".payment WHERE booked_at < ? GROUP BY currency ORDER BY currency")) {
            ps.setObject(1, sqlInstant(from));
            ps.setObject(2, sqlInstant(to));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    balances.add(new Camt053Writer.Balance(rs.getString(1), rs.getBigDecimal(2), rs.getBigDecimal(3)));
                }
            }
        }
        List<Camt053Writer.Booked> entries = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT id, reference, amount, currency, destination, booked_at"
                + " FROM " + schema + ".payment WHERE booked_at >= ? AND booked_at < ? ORDER BY booked_at, id")) {
            ps.setObject(1, sqlInstant(from));
            ps.setObject(2, sqlInstant(to));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    entries.add(new Camt053Writer.Booked(
                            rs.getString(1),
                            rs.getString(2),
                            rs.getBigDecimal(3),
                            rs.getString(4),
                            rs.getString(5),
                            rs.getObject(6, OffsetDateTime.class).toInstant()));
                }
            }
        }
        return Camt053Writer.write(from, to, now, balances, entries);
    }

    /**
     * The instant rounded up to the database's microseconds: for a booking time {@code b} (whole
     * microseconds), {@code b >= i} and {@code b < i} hold exactly when they hold for the result.
     */
    private static OffsetDateTime sqlInstant(Instant i) {
        Instant micros = i.truncatedTo(ChronoUnit.MICROS);
        return (micros.equals(i) ? micros : micros.plus(1, ChronoUnit.MICROS)).atOffset(ZoneOffset.UTC);
    }
}
