package io.github.idemtx.ledger.bank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.db.testing.DatabaseTest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The bank in its default, keyed mode: its routes as before, none of the statement bank's; the flags. */
@DatabaseTest
class KeyedBankTest {

    static final String SUFFIX = "keyedbank";
    static final ObjectMapper JSON = new ObjectMapper();
    static BankServer bank;

    @BeforeAll
    static void start() throws Exception {
        bank = BankFixture.start(
                SUFFIX, "--booking-delay-ms=250", "--late-booking-rate=0.5", "--late-booking-ms=90000");
    }

    @AfterAll
    static void stop() {
        bank.close();
        BankFixture.drop(SUFFIX);
    }

    @Test
    void aChargeIsOncePerKeyAndFoundByIt() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = "{\"amount\": \"12.00\", \"destination\": \"BR12 3456\"}";
        HttpResponse<String> first = BankFixture.HTTP.send(
                BankFixture.request(bank, "POST", "/charges", body)
                        .header("Idempotency-Key", key)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> again = BankFixture.HTTP.send(
                BankFixture.request(bank, "POST", "/charges", body)
                        .header("Idempotency-Key", key)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(again.body()).isEqualTo(first.body());
        JsonNode charge = JSON.readTree(first.body());
        assertThat(charge.get("id").asText()).startsWith("ch_");
        HttpResponse<String> found = BankFixture.send(bank, "GET", "/charges?idempotency_key=" + key, null);
        assertThat(found.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(found.body()).get("id")).isEqualTo(charge.get("id"));
    }

    @Test
    void theStatementBanksRoutesAreNotFound() throws Exception {
        assertThat(BankFixture.send(bank, "POST", "/payments", "{}").statusCode())
                .isEqualTo(404);
        assertThat(BankFixture.send(bank, "GET", "/payments", null).statusCode())
                .isEqualTo(404);
        HttpResponse<String> statements =
                BankFixture.send(bank, "GET", "/statements?from=2024-05-01T00:00:00Z&to=2024-05-02T00:00:00Z", null);
        assertThat(statements.statusCode()).isEqualTo(404);
        assertThat(statements.body()).contains("not found");
    }

    @Test
    void theFaultsShowTheBookingOnesAndRefuseBadValuesNamingThem() throws Exception {
        JsonNode faults =
                JSON.readTree(BankFixture.send(bank, "GET", "/faults", null).body());
        assertThat(faults.get("bookingDelayMs").asLong()).as("from the flags").isEqualTo(250L);
        assertThat(faults.get("lateBookingRate").asDouble()).isEqualTo(0.5);
        assertThat(faults.get("lateBookingMs").asLong()).isEqualTo(90_000L);
        for (String[] bad : new String[][] {
            {"lateBookingRate", "1.5", "lateBookingRate must be between 0 and 1"},
            {"lateBookingRate", "NaN", "lateBookingRate must be between 0 and 1"},
            {"bookingDelayMs", "-1", "bookingDelayMs must be a whole number of milliseconds"},
            {"lateBookingMs", "soon", "lateBookingMs must be a whole number of milliseconds"},
            {"bookingDelay", "1", "unknown fault 'bookingDelay'"}
        }) {
            HttpResponse<String> r = BankFixture.send(
                    bank,
                    "POST",
                    "/faults",
                    JSON.createObjectNode().put(bad[0], bad[1]).toString());
            assertThat(r.statusCode()).as(bad[0] + "=" + bad[1]).isEqualTo(400);
            assertThat(JSON.readTree(r.body()).get("error").asText()).contains(bad[2]);
            assertThatThrownBy(() -> bank.faults().set(Map.of(bad[0], bad[1])))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(bad[2]);
        }
    }

    @Test
    void anUnknownModeIsRefusedNamingIt() {
        assertThatThrownBy(() -> BankFixture.start("badmode", "--mode=statements"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--mode must be keyed or statement, was 'statements'");
    }
}
