package io.github.idemtx.ledger.bank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import java.io.ByteArrayInputStream;
import java.math.BigDecimal;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The statement bank over HTTP: payments never deduplicated, its faults, and its camt.053 statements. */
@DatabaseTest
class StatementBankTest {

    static final String SUFFIX = "stmtbank";
    static final ObjectMapper JSON = new ObjectMapper();
    static BankServer bank;

    /** A payment as the bank's table holds it. */
    record Row(
            String id,
            String reference,
            BigDecimal amount,
            String currency,
            String destination,
            Instant createdAt,
            Instant bookedAt) {}

    @BeforeAll
    static void start() throws Exception {
        bank = BankFixture.start(SUFFIX, "--mode=statement", "--hang-ms=5000");
    }

    @AfterAll
    static void stop() {
        bank.close();
        BankFixture.drop(SUFFIX);
    }

    @AfterEach
    void calm() {
        bank.faults()
                .set(Map.of(
                        "errorBeforeApplyRate", "0",
                        "timeoutAfterApplyRate", "0",
                        "declineRate", "0",
                        "bookingDelayMs", "0",
                        "lateBookingRate", "0"));
    }

    static String payment(String amount, String currency, String destination, String reference) throws Exception {
        var body = JSON.createObjectNode()
                .put("amount", amount)
                .put("destination", destination)
                .put("reference", reference);
        if (currency != null) {
            body.put("currency", currency);
        }
        return JSON.writeValueAsString(body);
    }

    static HttpResponse<String> pay(String body, String idempotencyKey) throws Exception {
        var request = BankFixture.request(bank, "POST", "/payments", body);
        if (idempotencyKey != null) {
            request.header("Idempotency-Key", idempotencyKey);
        }
        return BankFixture.HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Pays 10.00 EUR to "DE89 3704" with this reference; the bank's entry id. */
    static String pay(String reference) throws Exception {
        HttpResponse<String> r = pay(payment("10.00", null, "DE89 3704", reference), null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
        JsonNode answer = JSON.readTree(r.body());
        assertThat(answer.get("status").asText()).isEqualTo("accepted");
        return answer.get("id").asText();
    }

    static HttpResponse<byte[]> statementResponse(String from, String to) throws Exception {
        String query = "/statements?from=" + URLEncoder.encode(from, StandardCharsets.UTF_8) + "&to="
                + URLEncoder.encode(to, StandardCharsets.UTF_8);
        return BankFixture.HTTP.send(
                BankFixture.request(bank, "GET", query, null).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static Camt053.Statement statement(Instant from, Instant to) throws Exception {
        HttpResponse<byte[]> r = statementResponse(from.toString(), to.toString());
        assertThat(r.statusCode())
                .as(new String(r.body(), StandardCharsets.UTF_8))
                .isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/xml");
        return Camt053.parse(new ByteArrayInputStream(r.body()));
    }

    /** The entries of the statement of [from, to) with this reference. */
    static List<Camt053.Entry> entries(Instant from, Instant to, String reference) throws Exception {
        return statement(from, to).entries().stream()
                .filter(e -> reference.equals(e.reference()))
                .toList();
    }

    static List<Row> rows(String reference) throws Exception {
        List<Row> rows = new ArrayList<>();
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT id, reference, amount, currency, destination, created_at, booked_at FROM "
                                + BankFixture.schema(SUFFIX) + ".payment WHERE reference = ? ORDER BY booked_at, id")) {
            ps.setString(1, reference);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(
                            rs.getString(1),
                            rs.getString(2),
                            rs.getBigDecimal(3),
                            rs.getString(4),
                            rs.getString(5),
                            rs.getObject(6, OffsetDateTime.class).toInstant(),
                            rs.getObject(7, OffsetDateTime.class).toInstant()));
                }
            }
        }
        return rows;
    }

    static String reference() {
        return "payout:" + UUID.randomUUID();
    }

    @Test
    void theSameReferenceTwiceIsTwoPaymentsAndTwoEntriesWhateverTheIdempotencyKey() throws Exception {
        Instant start = BankFixture.now();
        String reference = reference();
        String body = payment("10.00", null, "DE89 3704", reference);
        HttpResponse<String> first = pay(body, "the-same-key");
        HttpResponse<String> second = pay(body, "the-same-key");
        assertThat(first.statusCode()).isEqualTo(202);
        assertThat(second.statusCode()).isEqualTo(202);
        String one = JSON.readTree(first.body()).get("id").asText();
        String two = JSON.readTree(second.body()).get("id").asText();
        assertThat(one).isNotEqualTo(two).matches("E[0-9A-Z]{20}");
        assertThat(rows(reference)).extracting(Row::id).containsExactlyInAnyOrder(one, two);
        List<Camt053.Entry> entries = entries(start, BankFixture.now(), reference);
        assertThat(entries).extracting(Camt053.Entry::entryId).containsExactlyInAnyOrder(one, two);
        assertThat(entries).allSatisfy(e -> {
            assertThat(e.amount()).isEqualByComparingTo("10.00");
            assertThat(e.currency()).isEqualTo("EUR");
            assertThat(e.creditDebit()).isEqualTo("DBIT");
        });
    }

    @Test
    void theServedStatementParsesBackToThePaymentsAsRecorded() throws Exception {
        Instant start = BankFixture.now().truncatedTo(ChronoUnit.SECONDS);
        String marker = UUID.randomUUID().toString();
        String tricky = marker + " <&>\"' ünïcødé 😀 ]]> &amp;";
        String longest = marker + "x".repeat(140 - marker.length() - 2) + "😀😀"; // 140 characters, 142 chars in UTF-16
        assertThat(pay(payment("0.01", "USD", "Ana <ana@example.com> & Co", tricky), null)
                        .statusCode())
                .isEqualTo(202);
        assertThat(pay(payment("1234567.89", "BRL", "BR12 3456", longest), null).statusCode())
                .isEqualTo(202);
        pay(marker + "-plain");
        Instant end = BankFixture.now().plusSeconds(1).truncatedTo(ChronoUnit.SECONDS);
        BankFixture.awaitPast(end);
        HttpResponse<byte[]> response = statementResponse(start.toString(), end.toString());
        String xml = new String(response.body(), StandardCharsets.UTF_8);
        assertThat(xml)
                .startsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Document xmlns=\"" + Camt053Writer.NAMESPACE)
                .contains("&lt;&amp;&gt;")
                .contains("<EndToEndId>NOTPROVIDED</EndToEndId>");
        Camt053.Statement statement = Camt053.parse(new ByteArrayInputStream(response.body()));
        assertThat(statement.id())
                .isEqualTo(Camt053Writer.statementId(start, end))
                .hasSizeLessThanOrEqualTo(35);
        assertThat(statement.from()).isEqualTo(start);
        assertThat(statement.to()).isEqualTo(end);
        List<Row> recorded = new ArrayList<>();
        for (String reference : List.of(tricky, longest, marker + "-plain")) {
            recorded.addAll(rows(reference));
        }
        recorded.sort((a, b) -> a.bookedAt().equals(b.bookedAt())
                ? a.id().compareTo(b.id())
                : a.bookedAt().compareTo(b.bookedAt()));
        assertThat(recorded).extracting(Row::currency).containsExactlyInAnyOrder("USD", "BRL", "EUR");
        assertThat(statement.entries().stream()
                        .filter(e -> e.reference() != null && e.reference().startsWith(marker))
                        .toList())
                .as("in the order booked, as recorded")
                .containsExactlyElementsOf(recorded.stream()
                        .map(r -> new Camt053.Entry(
                                r.id(),
                                r.reference(),
                                r.amount(),
                                r.currency(),
                                r.bookedAt().atOffset(ZoneOffset.UTC).toLocalDate(),
                                "DBIT"))
                        .toList());
        assertThat(statement.entries()).extracting(Camt053.Entry::entryId).doesNotHaveDuplicates();
    }

    @Test
    void aDeclineOrAnErrorBeforeApplyingRecordsNothing() throws Exception {
        String reference = reference();
        bank.faults().set(Map.of("declineRate", "1"));
        HttpResponse<String> declined = pay(payment("5.00", null, "X", reference), null);
        assertThat(declined.statusCode()).isEqualTo(402);
        assertThat(JSON.readTree(declined.body()).get("status").asText()).isEqualTo("declined");
        bank.faults().set(Map.of("declineRate", "0", "errorBeforeApplyRate", "1"));
        assertThat(pay(payment("5.00", null, "X", reference), null).statusCode())
                .isEqualTo(503);
        assertThat(rows(reference)).isEmpty();
        bank.faults().set(Map.of("errorBeforeApplyRate", "0"));
        pay(reference);
        assertThat(rows(reference)).as("the fault switched off").hasSize(1);
    }

    @Test
    void aTimeoutAfterApplyingRecordsThePaymentAndNeverAnswers() throws Exception {
        String reference = reference();
        bank.faults().set(Map.of("timeoutAfterApplyRate", "1"));
        var request = BankFixture.request(bank, "POST", "/payments", payment("7.00", null, "X", reference))
                .timeout(Duration.ofSeconds(1))
                .build();
        assertThatThrownBy(() -> BankFixture.HTTP.send(request, HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(HttpTimeoutException.class);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (rows(reference).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(rows(reference)).as("recorded though unanswered").hasSize(1);
    }

    @Test
    void aStatementHoldsThePaymentsBookedInItsHalfOpenPeriod() throws Exception {
        String reference = reference();
        String id = pay(reference);
        Instant booked = rows(reference).get(0).bookedAt();
        Instant micro = booked.plus(1, ChronoUnit.MICROS);
        BankFixture.awaitPast(micro);
        assertThat(entries(booked, micro, reference))
                .extracting(Camt053.Entry::entryId)
                .containsExactly(id);
        assertThat(entries(booked.minusSeconds(1), booked.plusNanos(1), reference))
                .as("to a nanosecond after its booking")
                .hasSize(1);
        assertThat(entries(booked.minusSeconds(1), booked, reference))
                .as("to its booking: excluded")
                .isEmpty();
        assertThat(entries(booked.plusNanos(1), micro, reference))
                .as("from a nanosecond after its booking")
                .isEmpty();
    }

    @Test
    void aBookingDelayKeepsAPaymentOutOfAStatementThatEndsBeforeItIsBooked() throws Exception {
        Instant start = BankFixture.now();
        String reference = reference();
        BankFixture.send(bank, "POST", "/faults", "{\"bookingDelayMs\": 300}");
        pay(reference);
        Row row = rows(reference).get(0);
        assertThat(Duration.between(row.createdAt(), row.bookedAt())).isEqualTo(Duration.ofMillis(300));
        BankFixture.awaitPast(row.bookedAt());
        assertThat(entries(start, row.createdAt().plus(1, ChronoUnit.MICROS), reference))
                .as("received in the period, booked after it")
                .isEmpty();
        assertThat(entries(start, row.bookedAt(), reference)).isEmpty();
        assertThat(entries(start, row.bookedAt().plus(1, ChronoUnit.MICROS), reference))
                .extracting(Camt053.Entry::entryId)
                .containsExactly(row.id());

        String later = reference();
        BankFixture.send(bank, "POST", "/faults", "{\"bookingDelayMs\": 3600000}");
        pay(later);
        Row hour = rows(later).get(0);
        assertThat(Duration.between(hour.createdAt(), hour.bookedAt())).isEqualTo(Duration.ofHours(1));
        assertThat(entries(start, BankFixture.now(), later)).isEmpty();
        HttpResponse<byte[]> early = statementResponse(
                start.toString(), hour.bookedAt().plusSeconds(1).toString());
        assertThat(early.statusCode()).isEqualTo(400);
        assertThat(new String(early.body(), StandardCharsets.UTF_8)).contains("the period has not ended");
    }

    @Test
    void aLateBookingRateOfOneBooksEveryPaymentLate() throws Exception {
        HttpResponse<String> set = BankFixture.send(
                bank, "POST", "/faults", "{\"lateBookingRate\": 1, \"lateBookingMs\": 7200000, \"bookingDelayMs\": 5}");
        assertThat(set.statusCode()).isEqualTo(200);
        JsonNode faults =
                JSON.readTree(BankFixture.send(bank, "GET", "/faults", null).body());
        assertThat(faults.get("lateBookingRate").asDouble()).isEqualTo(1.0);
        assertThat(faults.get("lateBookingMs").asLong()).isEqualTo(7_200_000L);
        assertThat(faults.get("bookingDelayMs").asLong()).isEqualTo(5L);
        Instant start = BankFixture.now();
        String reference = reference();
        pay(reference);
        pay(reference);
        List<Row> late = rows(reference);
        assertThat(late)
                .hasSize(2)
                .allSatisfy(r -> assertThat(Duration.between(r.createdAt(), r.bookedAt()))
                        .isEqualTo(Duration.ofHours(2)));
        assertThat(entries(start, BankFixture.now(), reference)).isEmpty();
        bank.faults().set(Map.of("lateBookingRate", "0"));
        String onTime = reference();
        pay(onTime);
        Row row = rows(onTime).get(0);
        assertThat(Duration.between(row.createdAt(), row.bookedAt())).isEqualTo(Duration.ofMillis(5));
    }

    @Test
    void aStatementWaitsForThePaymentsBeingRecorded() throws Exception {
        String schema = BankFixture.schema(SUFFIX);
        String reference = reference();
        try (Connection c = TestDatabase.get().connect()) {
            c.setAutoCommit(false);
            Instant booked;
            try (var s = c.createStatement()) {
                // a payment the bank is recording: it holds the lock shared, its clock read before the period ends
                s.execute("SELECT pg_advisory_xact_lock_shared(hashtext('" + schema + ".payment'))");
                try (ResultSet rs = s.executeQuery("INSERT INTO " + schema
                        + ".payment (id, reference, amount, destination, booked_at) VALUES ('E" + "0".repeat(19)
                        + "1', '" + reference + "', 3.00, 'X', clock_timestamp()) RETURNING booked_at")) {
                    rs.next();
                    booked = rs.getObject(1, OffsetDateTime.class).toInstant();
                }
            }
            BankFixture.awaitPast(booked);
            Instant to = BankFixture.now();
            CompletableFuture<HttpResponse<byte[]>> statement = BankFixture.HTTP.sendAsync(
                    BankFixture.request(bank, "GET", "/statements?from=" + booked.minusSeconds(60) + "&to=" + to, null)
                            .build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            TestDatabase.get()
                    .awaitLockWaiters(
                            "position('pg_advisory_xact_lock(hashtext(''" + schema + ".payment'')' in query) > 0", 1);
            assertThat(statement).as("waiting for the payment being recorded").isNotDone();
            c.commit();
            HttpResponse<byte[]> r = statement.get(30, TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(Camt053.parse(new ByteArrayInputStream(r.body())).entries())
                    .extracting(Camt053.Entry::reference)
                    .contains(reference);
        }
    }

    @Test
    void aBadPeriodIs400NamingWhatIsWrong() throws Exception {
        Instant now = BankFixture.now().truncatedTo(ChronoUnit.SECONDS);
        String ok = now.minusSeconds(60).toString();
        Map<String, String> cases = new java.util.LinkedHashMap<>();
        cases.put("/statements", "from is required");
        cases.put("/statements?from=" + ok, "to is required");
        cases.put("/statements?from=yesterday&to=" + now, "from must be an ISO-8601 instant");
        cases.put("/statements?from=" + ok + "&to=2024-05-01", "to must be an ISO-8601 instant");
        cases.put("/statements?from=" + now + "&to=" + now, "from must be before to");
        cases.put("/statements?from=" + now + "&to=" + ok, "from must be before to");
        cases.put(
                "/statements?from=" + now.minus(Duration.ofDays(31)).minusSeconds(1) + "&to=" + now,
                "a statement spans at most 31 days");
        cases.put("/statements?from=" + ok + "&to=" + now.plusSeconds(3600), "the period has not ended");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            HttpResponse<String> r = BankFixture.send(bank, "GET", c.getKey(), null);
            assertThat(r.statusCode()).as(c.getKey()).isEqualTo(400);
            assertThat(JSON.readTree(r.body()).get("error").asText())
                    .as(c.getKey())
                    .contains(c.getValue());
        }
        assertThat(statement(now.minus(Duration.ofDays(31)), now).entries())
                .as("31 days exactly")
                .isNotNull();
    }

    @Test
    void aBadPaymentIs400NamingTheFieldAndRecordsNothing() throws Exception {
        String reference = reference();
        String x = "D" + UUID.randomUUID();
        String over = reference + "y".repeat(141 - reference.length());
        Map<String, String> cases = new java.util.LinkedHashMap<>();
        cases.put("not json", "the body must be a JSON object");
        cases.put("[\"" + reference + "\"]", "the body must be a JSON object");
        cases.put("{\"destination\": \"" + x + "\", \"reference\": \"" + reference + "\"}", "amount is required");
        cases.put(payment("ten", null, x, reference), "amount must be a decimal number");
        cases.put(payment("-1.00", null, x, reference), "amount must be positive");
        cases.put(payment("0", null, x, reference), "amount must be positive");
        cases.put(payment("1.001", null, x, reference), "amount must have at most two decimals");
        cases.put(payment("1.00", "eur", x, reference), "currency must be three upper-case letters");
        cases.put(payment("1.00", "EURO", x, reference), "currency must be three upper-case letters");
        cases.put("{\"amount\": \"1.00\", \"reference\": \"" + reference + "\"}", "destination is required");
        cases.put(
                payment("1.00", null, x + "d".repeat(141 - x.length()), reference),
                "destination must be at most 140 characters");
        cases.put("{\"amount\": \"1.00\", \"destination\": \"" + x + "\"}", "reference is required");
        cases.put("{\"amount\": \"1.00\", \"destination\": \"" + x + "\", \"reference\": 42}", "reference is required");
        cases.put(payment("1.00", null, x, "   "), "reference must not be blank");
        cases.put(payment("1.00", null, x, over), "reference must be at most 140 characters");
        cases.put(payment("1.00", null, x, reference + "\u0001"), "reference must not contain control characters");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            HttpResponse<String> r = pay(c.getKey(), null);
            assertThat(r.statusCode()).as(c.getKey()).isEqualTo(400);
            assertThat(JSON.readTree(r.body()).get("error").asText())
                    .as(c.getKey())
                    .contains(c.getValue());
        }
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + BankFixture.schema(SUFFIX)
                        + ".payment WHERE position(? in reference) > 0 OR position(? in destination) > 0")) {
            ps.setString(1, reference);
            ps.setString(2, x);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1)).isZero();
            }
        }
        assertThat(pay(payment("1.000", null, "ok", reference), null).statusCode())
                .as("1.000 is 1.00")
                .isEqualTo(202);
    }

    @Test
    void thisBankAnswersNoLookup() throws Exception {
        for (String[] route : new String[][] {
            {"GET", "/charges?idempotency_key=k"},
            {"POST", "/charges"},
            {"GET", "/payments"},
            {"GET", "/payments?ref=x"}
        }) {
            HttpResponse<String> r = BankFixture.send(bank, route[0], route[1], route[0].equals("POST") ? "{}" : null);
            assertThat(r.statusCode()).as(route[1]).isEqualTo(404);
            assertThat(JSON.readTree(r.body()).get("error").asText())
                    .isEqualTo("this bank answers no lookup; read its statement");
        }
        assertThat(BankFixture.send(bank, "GET", "/health", null).statusCode()).isEqualTo(200);
    }
}
