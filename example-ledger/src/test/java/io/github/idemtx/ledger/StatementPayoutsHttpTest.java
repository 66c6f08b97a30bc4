package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.ledger.LedgerHttpTest.Reply;
import io.github.idemtx.ledger.bank.BankServer;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Payouts to the statement bank ({@code --bank-mode=statement}: no key, no lookup), both over HTTP:
 * a payout whose answer was lost is settled by the bank's camt.053 statement, one that never reached
 * the bank is found absent and sent again with the same reference, and none is paid twice.
 */
@DatabaseTest
class StatementPayoutsHttpTest {

    static final String TOKEN = "token-statement-payouts";
    static final String ADMIN_TOKEN = "admin-token-of-statement-payouts";
    static final String BANK_SCHEMA = TestDatabase.get().schema() + "_stmtbank";
    static final String LEDGER_SCHEMA = TestDatabase.get().schema() + "_stmtpayouts";
    static BankServer bank;
    static LedgerServer ledger;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        bank = io.github.idemtx.ledger.bank.BankFixture.start("stmtbank", "--mode=statement", "--hang-ms=4500");
        ledger = LedgerServer.startFresh(LedgerFixture.args(
                "stmtpayouts",
                "--port=0",
                "--tokens=" + TOKEN + "=tenant-s",
                "--bank-url=http://127.0.0.1:" + bank.port(),
                "--bank-mode=statement",
                "--statement-lag-ms=500",
                "--statement-poll-ms=200",
                "--admin-port=0",
                "--admin-token=" + ADMIN_TOKEN));
    }

    @AfterAll
    static void stop() {
        ledger.close();
        bank.close();
        LedgerFixture.dropSchema("stmtpayouts");
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + BANK_SCHEMA + " CASCADE");
    }

    @AfterEach
    void calm() {
        bank.faults()
                .set(Map.of(
                        "timeoutAfterApplyRate",
                        "0",
                        "errorBeforeApplyRate",
                        "0",
                        "declineRate",
                        "0",
                        "lateBookingRate",
                        "0"));
    }

    private static Reply call(String method, String path, String key, String body) throws Exception {
        return LedgerFixture.call(ledger.port(), TOKEN, method, path, key, body);
    }

    private static String fundedAccount() throws Exception {
        Reply opened = call("POST", "/accounts", UUID.randomUUID().toString(), "{\"currency\":\"EUR\"}");
        String account = opened.json().get("id").asText();
        assertThat(call(
                                "POST",
                                "/accounts/" + account + "/deposits",
                                UUID.randomUUID().toString(),
                                "{\"amount\":\"100.00\"}")
                        .status())
                .isEqualTo(201);
        return account;
    }

    private static String payout(String account) {
        return "{\"from\":\"" + account + "\",\"amount\":\"30.00\",\"destination\":\"DE89 3704\"}";
    }

    /** How many times the bank paid the payout claim of {@code key} (by the reference the claim sent). */
    private static int paymentsAtTheBank(String key) {
        String reference =
                ledgerText("SELECT reference FROM " + LEDGER_SCHEMA + ".idempotency_claim WHERE idem_key = ?", key);
        if (reference == null) {
            return 0;
        }
        TestDatabase db = TestDatabase.get();
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(
                        db.serverUrl(), db.user() == null ? "postgres" : db.user(), db.password());
                java.sql.PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*)::int FROM " + BANK_SCHEMA + ".payment WHERE reference = ?")) {
            ps.setString(1, reference);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One value of a query on the ledger's database, as text, or null. */
    private static String ledgerText(String sql, String key) {
        try (java.sql.Connection c = TestDatabase.get().connect();
                java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, key);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void await(String what, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 30 s: " + what);
            }
            Thread.sleep(50);
        }
    }

    private static String stateOf(String key, String account) {
        try {
            Reply r = call("POST", "/payouts", key, payout(account));
            return r.status() + " " + (r.status() == 201 ? r.json().get("state").asText() : "");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aPayoutWhoseAnswerWasLostIsSettledByTheStatementAndPaidOnce() throws Exception {
        String account = fundedAccount();
        String key = UUID.randomUUID().toString();
        bank.faults().set(Map.of("timeoutAfterApplyRate", "1", "hangMs", "4500"));

        Reply first = call("POST", "/payouts", key, payout(account));

        assertThat(first.status()).as(first.response().body()).isGreaterThanOrEqualTo(500);
        calm();
        // the statement may settle it before the call's deadline even ends: the listing answers, whichever
        assertThat(call("GET", "/payouts?state=awaiting_statement", null, null).status())
                .isEqualTo(200);
        await("the statement settles it", () -> stateOf(key, account).equals("201 paid"));
        assertThat(paymentsAtTheBank(key)).isEqualTo(1);
        Reply again = call("POST", "/payouts", key, payout(account));
        assertThat(again.json().get("chargeId").asText()).startsWith("E");
        assertThat(call("GET", "/accounts/" + account, null, null)
                        .json()
                        .get("balance")
                        .asText())
                .isEqualTo("70.00");
    }

    @Test
    void aPayoutThatNeverReachedTheBankIsFoundAbsentAndSentAgainOnce() throws Exception {
        String account = fundedAccount();
        String key = UUID.randomUUID().toString();
        bank.faults().set(Map.of("errorBeforeApplyRate", "1"));

        Reply first = call("POST", "/payouts", key, payout(account));

        assertThat(first.status()).as(first.response().body()).isGreaterThanOrEqualTo(500);
        assertThat(paymentsAtTheBank(key)).isZero();
        calm();
        await("absent, sent again, paid", () -> stateOf(key, account).equals("201 paid"));
        assertThat(paymentsAtTheBank(key)).as("paid once").isEqualTo(1);
        assertThat(ledgerText("SELECT sends FROM " + LEDGER_SCHEMA + ".idempotency_claim WHERE idem_key = ?", key))
                .isEqualTo("2");
    }

    @Test
    void aPayoutAnsweredAtOnceIsPaidAndTheStatementConfirmsIt() throws Exception {
        String account = fundedAccount();
        String key = UUID.randomUUID().toString();

        Reply first = call("POST", "/payouts", key, payout(account));

        assertThat(first.status()).as(first.response().body()).isEqualTo(201);
        assertThat(first.json().get("state").asText()).isEqualTo("paid");
        await(
                "the statement confirms it",
                () -> "1"
                        .equals(ledgerText(
                                "SELECT count(*) FROM " + LEDGER_SCHEMA + ".idempotency_statement_line l JOIN "
                                        + LEDGER_SCHEMA + ".idempotency_claim c ON c.reference = l.reference"
                                        + " WHERE l.verdict = 'matched' AND c.idem_key = ?",
                                key)));
        assertThat(paymentsAtTheBank(key)).isEqualTo(1);
    }

    private static Reply admin(String method, String path, String body) throws Exception {
        return LedgerFixture.call(ledger.adminPort(), ADMIN_TOKEN, method, path, null, body);
    }

    @Test
    void aSendBookedLaterThanTheLagIsSentAgainAndTheDoublePaymentIsFlaggedForAnOperator() throws Exception {
        String account = fundedAccount();
        String key = UUID.randomUUID().toString();
        // the answer is lost and the bank books it 8 s later: past the ledger's window (the lag, 0.5 s,
        // but at least the payout's lease, 5 s), so it is sent again, and both are booked
        bank.faults()
                .set(Map.of(
                        "timeoutAfterApplyRate",
                        "1",
                        "hangMs",
                        "4500",
                        "lateBookingRate",
                        "1",
                        "lateBookingMs",
                        "8000"));

        Reply first = call("POST", "/payouts", key, payout(account));

        assertThat(first.status()).as(first.response().body()).isGreaterThanOrEqualTo(500);
        calm();
        await("settled by the statement", () -> stateOf(key, account).equals("201 paid"));
        await("both sends booked and flagged", () -> {
            try {
                return admin("GET", "/admin/statements/flagged?verdict=duplicate", null)
                        .response()
                        .body()
                        .contains(key);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(paymentsAtTheBank(key))
                .as("sent twice: the second after the first was found absent")
                .isEqualTo(2);
        Reply flagged = admin("GET", "/admin/statements/flagged?verdict=duplicate", null);
        String entry = null;
        for (var line : flagged.json().get("flagged")) {
            if (key.equals(line.get("key").asText())) {
                entry = line.get("entryId").asText();
            }
        }
        assertThat(entry).isNotNull();
        assertThat(admin("POST", "/admin/statements/lines/" + entry + "/work", "{\"operator\":\"ana\"}")
                        .status())
                .as("a note is required")
                .isEqualTo(400);
        assertThat(admin(
                                "POST",
                                "/admin/statements/lines/" + entry + "/work",
                                "{\"operator\":\"ana\",\"note\":\"recalled from the bank\"}")
                        .status())
                .isEqualTo(200);
        assertThat(admin("GET", "/admin/statements/flagged?verdict=duplicate", null)
                        .response()
                        .body())
                .doesNotContain(key);
        assertThat(admin("GET", "/admin/statements/flagged?verdict=paid", null).status())
                .isEqualTo(400);
        assertThat(admin("GET", "/admin/statements/awaiting", null).status()).isEqualTo(200);
        assertThat(admin("GET", "/admin/statements/unconfirmed", null)
                        .response()
                        .body())
                .isEqualTo("{\"unconfirmed\":[]}");
    }
}
