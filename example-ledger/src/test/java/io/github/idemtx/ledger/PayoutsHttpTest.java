package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.ledger.LedgerHttpTest.Reply;
import io.github.idemtx.ledger.bank.BankServer;
import java.net.http.HttpClient;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Payouts from the ledger to the bank simulator, both over HTTP, with the bank's faults switched per test. */
@DatabaseTest
class PayoutsHttpTest {

    static final String TOKEN = "token-payouts";
    static BankServer bank;
    static LedgerServer ledger;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        bank = io.github.idemtx.ledger.bank.BankFixture.start("bank", "--hang-ms=4500");
        ledger = LedgerServer.startFresh(LedgerFixture.args(
                "payouts",
                "--port=0",
                "--tokens=" + TOKEN + "=tenant-p",
                "--bank-url=http://127.0.0.1:" + bank.port()));
    }

    @AfterAll
    static void stop() {
        ledger.close();
        bank.close();
        LedgerFixture.dropSchema("payouts");
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + TestDatabase.get().schema() + "_bank CASCADE");
    }

    @AfterEach
    void calm() {
        bank.faults()
                .set(Map.of(
                        "timeoutAfterApplyRate",
                        "0",
                        "declineRate",
                        "0",
                        "errorBeforeApplyRate",
                        "0",
                        "lookupLagMs",
                        "0",
                        "lookupErrorRate",
                        "0"));
    }

    private static Reply call(String method, String path, String key, String body) throws Exception {
        return LedgerFixture.call(ledger.port(), TOKEN, method, path, key, body);
    }

    private static String fundedAccount(String amount) throws Exception {
        Reply opened = call("POST", "/accounts", UUID.randomUUID().toString(), "{\"currency\":\"BRL\"}");
        String account = opened.json().get("id").asText();
        assertThat(call(
                                "POST",
                                "/accounts/" + account + "/deposits",
                                UUID.randomUUID().toString(),
                                "{\"amount\":\"" + amount + "\"}")
                        .status())
                .isEqualTo(201);
        return account;
    }

    private static String balance(String account) throws Exception {
        return call("GET", "/accounts/" + account, null, null)
                .json()
                .get("balance")
                .asText();
    }

    private static String payout(String account, String amount) {
        return "{\"from\":\"" + account + "\",\"amount\":\"" + amount + "\",\"destination\":\"BR12 3456\"}";
    }

    @Test
    void aPayoutIsChargedOncePostedAndReplayed() throws Exception {
        String account = fundedAccount("100.00");
        String key = UUID.randomUUID().toString();
        Reply first = call("POST", "/payouts", key, payout(account, "30.00"));
        assertThat(first.status()).isEqualTo(201);
        assertThat(first.json().get("state").asText()).isEqualTo("paid");
        assertThat(first.json().get("chargeId").asText()).startsWith("ch_");
        Reply again = call("POST", "/payouts", key, payout(account, "30.00"));
        assertThat(again.status()).isEqualTo(201);
        assertThat(again.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(again.json().get("chargeId")).isEqualTo(first.json().get("chargeId"));
        assertThat(balance(account)).isEqualTo("70.00");
        String id = first.json().get("id").asText();
        assertThat(call("GET", "/payouts/" + id, null, null).json().get("state").asText())
                .isEqualTo("paid");
        assertThat(call("POST", "/payouts", key, payout(account, "31.00")).status())
                .as("the key reused")
                .isEqualTo(422);
        assertThat(movements(key))
                .as("held from the customer to the bank's clearing account, then settled to its paid_out account")
                .containsExactly("hold customer->clearing 30.00", "settle clearing->paid_out 30.00");
        assertBooksBalance();
    }

    @Test
    void aDeclineGivesTheHoldBackAndIsReplayed() throws Exception {
        String account = fundedAccount("50.00");
        bank.faults().set(Map.of("declineRate", "1"));
        String key = UUID.randomUUID().toString();
        Reply declined = call("POST", "/payouts", key, payout(account, "20.00"));
        assertThat(declined.status()).isEqualTo(422);
        assertThat(declined.json().get("code").asText()).isEqualTo("bank_declined");
        assertThat(balance(account)).isEqualTo("50.00");
        assertThat(call("GET", "/payouts?state=refused", null, null).json().toString())
                .contains(account);
        assertThat(movements(key))
                .as("held, then released back to the customer")
                .containsExactly("hold customer->clearing 20.00", "release clearing->customer 20.00");
        assertBooksBalance();
        bank.faults().set(Map.of("declineRate", "0"));
        Reply again = call("POST", "/payouts", key, payout(account, "20.00"));
        assertThat(again.status()).isEqualTo(422);
        assertThat(again.header("Idempotent-Replayed")).isEqualTo("true");
    }

    @Test
    void insufficientFundsNeverReachTheBankAndBadInputWritesNothing() throws Exception {
        String account = fundedAccount("10.00");
        Reply poor = call("POST", "/payouts", UUID.randomUUID().toString(), payout(account, "10.01"));
        assertThat(poor.status()).isEqualTo(422);
        assertThat(poor.json().get("code").asText()).isEqualTo("insufficient_funds");
        assertThat(call(
                                "POST",
                                "/payouts",
                                UUID.randomUUID().toString(),
                                "{\"from\":\"" + account + "\",\"amount\":\"-1\"}")
                        .status())
                .isEqualTo(400);
        assertThat(call("POST", "/payouts", UUID.randomUUID().toString(), "not json")
                        .status())
                .isEqualTo(400);
        assertThat(call("POST", "/payouts", null, payout(account, "1.00")).status())
                .isEqualTo(400);
        assertThat(call("GET", "/payouts?state=bogus", null, null).status()).isEqualTo(400);
        assertThat(balance(account)).isEqualTo("10.00");
    }

    @Test
    void aTimeoutAfterTheBankChargedIs503AndTheRecovererFindsTheChargeWithoutChargingAgain() throws Exception {
        String account = fundedAccount("80.00");
        bank.faults().set(Map.of("timeoutAfterApplyRate", "1"));
        String key = UUID.randomUUID().toString();
        Reply unknown = call("POST", "/payouts", key, payout(account, "25.00"));
        assertThat(unknown.status()).isEqualTo(503);
        assertThat(unknown.header("Retry-After")).isNotNull();
        assertThat(balance(account)).as("held while unknown").isEqualTo("55.00");
        bank.faults().set(Map.of("timeoutAfterApplyRate", "0"));
        // the ledger's recoverer (every second) looks it up by key and records the charge
        Reply settled = null;
        for (int i = 0; i < 40; i++) {
            Thread.sleep(250);
            settled = call("POST", "/payouts", key, payout(account, "25.00"));
            if (settled.status() == 201) {
                break;
            }
        }
        assertThat(settled.status()).isEqualTo(201);
        assertThat(settled.json().get("state").asText()).isEqualTo("paid");
        assertThat(balance(account)).isEqualTo("55.00");
        try (var c = TestDatabase.get().connect();
                var s = c.createStatement();
                var rs = s.executeQuery(
                        "SELECT count(*) FROM " + TestDatabase.get().schema() + "_bank.charge WHERE amount = 25.00")) {
            rs.next();
            assertThat(rs.getInt(1)).as("charged once").isEqualTo(1);
        }
    }

    /** The movements in the books of the payout of a key, in order, as "kind from-kind->to-kind amount". */
    private static java.util.List<String> movements(String key) throws Exception {
        String schema = TestDatabase.get().schema() + "_payouts";
        java.util.List<String> out = new java.util.ArrayList<>();
        try (var c = TestDatabase.get().connect();
                var s = c.prepareStatement("SELECT t.kind, f.kind, o.kind, t.amount FROM " + schema + ".transfer t"
                        + " JOIN " + schema + ".account f ON f.id = t.from_account JOIN " + schema
                        + ".account o ON o.id = t.to_account WHERE t.payout_id = (SELECT id FROM " + schema
                        + ".payout WHERE idem_key = ?)"
                        + " ORDER BY array_position(ARRAY['hold', 'settle', 'release']::varchar[], t.kind)")) {
            s.setString(1, key);
            try (var rs = s.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1) + " " + rs.getString(2) + "->" + rs.getString(3) + " "
                            + rs.getBigDecimal(4).toPlainString());
                }
            }
        }
        return out;
    }

    /**
     * The books with the payouts in them: balances sum to zero per tenant and currency, every balance
     * equals its postings, and each bank's clearing account holds exactly the payouts in flight there.
     */
    private static void assertBooksBalance() throws Exception {
        String schema = TestDatabase.get().schema() + "_payouts";
        try (var c = TestDatabase.get().connect();
                var s = c.createStatement()) {
            try (var rs = s.executeQuery("SELECT count(*) FROM (SELECT 1 FROM " + schema
                    + ".account GROUP BY tenant, currency HAVING sum(balance) <> 0) x")) {
                rs.next();
                assertThat(rs.getInt(1))
                        .as("tenants and currencies whose balances do not sum to zero")
                        .isZero();
            }
            try (var rs = s.executeQuery("SELECT count(*) FROM " + schema + ".account a WHERE a.balance <>"
                    + " (SELECT coalesce(sum(p.amount), 0) FROM " + schema + ".posting p WHERE p.account_id = a.id)")) {
                rs.next();
                assertThat(rs.getInt(1))
                        .as("accounts whose balance is not their postings")
                        .isZero();
            }
            try (var rs = s.executeQuery("SELECT count(*) FROM " + schema + ".account a WHERE a.kind = 'clearing'"
                    + " AND a.balance <> (SELECT coalesce(sum(p.amount), 0) FROM " + schema + ".payout p"
                    + " WHERE p.tenant = a.tenant AND p.currency = a.currency AND p.bank = a.bank"
                    + " AND p.state = 'in_flight')")) {
                rs.next();
                assertThat(rs.getInt(1))
                        .as("clearing accounts that do not hold the payouts in flight")
                        .isZero();
            }
        }
    }
}
