package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.outbox.Outbox;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Applied transfers and deposits announced on a RabbitMQ exchange through the library's outbox: one
 * event per applied transfer, under the message id derived from its claim, none for a replay or a
 * refused transfer.
 */
@DatabaseTest
class LedgerEventsTest {

    static final String TOKEN = "token-of-events";
    static final String TENANT = "tenant-events";
    static final String SUFFIX = UUID.randomUUID().toString().substring(0, 8);
    static final String EXCHANGE = "ledger-events-test-" + SUFFIX;
    static final String QUEUE = "ledger-transfers-events-test-" + SUFFIX;
    static LedgerServer server;
    static Connection broker;
    static Channel channel;
    static String events;
    static io.github.idemtx.ledger.bank.BankServer bank;

    @BeforeAll
    static void start() throws Exception {
        LocalBroker.assumeAvailable();
        bank = io.github.idemtx.ledger.bank.BankFixture.start("eventsbank");
        server = LedgerServer.startFresh(LedgerFixture.args(
                "events",
                "--port=0",
                "--tokens=" + TOKEN + "=" + TENANT,
                "--amqp-url=" + LocalBroker.url(),
                "--queue=" + QUEUE,
                "--queue-consumers=1",
                "--events-exchange=" + EXCHANGE,
                "--bank-url=http://127.0.0.1:" + bank.port()));
        broker = TransferQueue.factory(LocalBroker.url()).newConnection("ledger-events-test");
        channel = broker.createChannel();
        events = channel.queueDeclare("", false, true, true, null).getQueue();
        channel.queueBind(events, EXCHANGE, "#");
        LedgerHttpTest.server = server;
        LedgerHttpTest.http = java.net.http.HttpClient.newHttpClient();
    }

    @AfterAll
    static void stop() throws Exception {
        if (server == null) {
            return;
        }
        server.close();
        LedgerHttpTest.server = null;
        for (String q : new String[] {QUEUE, QUEUE + ".replies", QUEUE + ".dlq"}) {
            channel.queueDelete(q);
        }
        channel.exchangeDelete(EXCHANGE);
        broker.close();
        bank.close();
        LedgerFixture.dropSchema("events");
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + TestDatabase.get().schema() + "_eventsbank CASCADE");
    }

    /** Reads the events queue until {@code n} messages came; fails after 60 s. */
    static List<GetResponse> await(int n) throws Exception {
        List<GetResponse> got = new ArrayList<>();
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (got.size() < n) {
            assertThat(System.nanoTime()).as("waiting for " + n + " events").isLessThan(until);
            GetResponse r = channel.basicGet(events, true);
            if (r == null) {
                Thread.sleep(50);
            } else {
                got.add(r);
            }
        }
        return got;
    }

    static int outboxRows(String name) {
        TestDatabase db = TestDatabase.get();
        try (var c = db.connect();
                var ps = c.prepareStatement("SELECT count(*) FROM " + server.schema()
                        + ".idempotency_outbox WHERE scope = ? AND name = ?")) {
            ps.setString(1, TENANT);
            ps.setString(2, name);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void anAppliedTransferIsAnnouncedOnceUnderTheIdOfItsClaim() throws Exception {
        String alice = LedgerHttpTest.openAccount(TOKEN, "BRL");
        String bob = LedgerHttpTest.openAccount(TOKEN, "BRL");
        String depositKey = LedgerHttpTest.key();
        assertThat(LedgerHttpTest.post(TOKEN, depositKey, "/accounts/" + alice + "/deposits", "{\"amount\":\"50.00\"}")
                        .status())
                .isEqualTo(201);
        String key = LedgerHttpTest.key();
        String body = "{\"from\":\"" + alice + "\",\"to\":\"" + bob + "\",\"amount\":\"20.00\"}";

        LedgerHttpTest.Reply first = LedgerHttpTest.post(TOKEN, key, "/transfers", body);
        LedgerHttpTest.Reply retry = LedgerHttpTest.post(TOKEN, key, "/transfers", body);

        assertThat(first.status()).isEqualTo(201);
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        List<GetResponse> got = await(2);
        GetResponse deposit = got.get(0);
        GetResponse transfer = got.get(1);
        assertThat(deposit.getEnvelope().getRoutingKey()).isEqualTo("deposit.applied");
        assertThat(deposit.getProps().getMessageId())
                .isEqualTo(Outbox.messageId(Scope.of(TENANT), IdempotencyKey.of(depositKey), "deposit-applied")
                        .toString());
        assertThat(transfer.getEnvelope().getRoutingKey()).isEqualTo("transfer.applied");
        assertThat(transfer.getProps().getMessageId())
                .isEqualTo(Outbox.messageId(Scope.of(TENANT), IdempotencyKey.of(key), "transfer-applied")
                        .toString());
        JsonNode event = LedgerHttpTest.JSON.readTree(new String(transfer.getBody(), StandardCharsets.UTF_8));
        assertThat(event.get("id").asText()).isEqualTo(first.json().get("id").asText());
        assertThat(event.get("from").asText()).isEqualTo(alice);
        assertThat(event.get("amount").asText()).isEqualTo("20.00");
        assertThat(outboxRows("transfer-applied")).as("the replay added none").isEqualTo(1);
    }

    @Test
    void aPaidPayoutIsAnnouncedOnceUnderTheIdOfItsClaimAndADeclinedOneNot() throws Exception {
        String erin = LedgerHttpTest.openAccount(TOKEN, "BRL");
        assertThat(LedgerHttpTest.post(
                                TOKEN,
                                LedgerHttpTest.key(),
                                "/accounts/" + erin + "/deposits",
                                "{\"amount\":\"50.00\"}")
                        .status())
                .isEqualTo(201);
        String key = LedgerHttpTest.key();
        String body = "{\"from\":\"" + erin + "\",\"amount\":\"20.00\",\"destination\":\"BR12 3456\"}";

        LedgerHttpTest.Reply paid = LedgerHttpTest.post(TOKEN, key, "/payouts", body);
        LedgerHttpTest.Reply retry = LedgerHttpTest.post(TOKEN, key, "/payouts", body);

        assertThat(paid.status()).isEqualTo(201);
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        List<GetResponse> got = await(2);
        GetResponse payout = got.get(1);
        assertThat(payout.getEnvelope().getRoutingKey()).isEqualTo("payout.paid");
        String id = paid.json().get("id").asText();
        assertThat(payout.getProps().getMessageId())
                .isEqualTo(Outbox.messageId(Scope.of(TENANT), IdempotencyKey.of(key), "payout-paid-" + id)
                        .toString());
        JsonNode event = LedgerHttpTest.JSON.readTree(new String(payout.getBody(), StandardCharsets.UTF_8));
        assertThat(event.get("chargeId").asText())
                .isEqualTo(paid.json().get("chargeId").asText());
        assertThat(event.get("amount").asText()).isEqualTo("20.00");
        assertThat(outboxRows("payout-paid-" + id)).as("the replay added none").isEqualTo(1);

        bank.faults().set(Map.of("declineRate", "1"));
        try {
            LedgerHttpTest.Reply declined = LedgerHttpTest.post(TOKEN, LedgerHttpTest.key(), "/payouts", body);
            assertThat(declined.status()).isEqualTo(422);
        } finally {
            bank.faults().set(Map.of("declineRate", "0"));
        }
        assertThat(outboxRows("payout-paid-" + id)).isEqualTo(1);
        assertThat(channel.basicGet(events, true))
                .as("nothing for the declined payout")
                .isNull();
    }

    @Test
    void aRefusedTransferAnnouncesNothing() throws Exception {
        String carol = LedgerHttpTest.openAccount(TOKEN, "BRL");
        String dave = LedgerHttpTest.openAccount(TOKEN, "BRL");
        int before = outboxRows("transfer-applied");

        LedgerHttpTest.Reply refused = LedgerHttpTest.post(
                TOKEN,
                LedgerHttpTest.key(),
                "/transfers",
                "{\"from\":\"" + carol + "\",\"to\":\"" + dave + "\",\"amount\":\"1.00\"}");

        assertThat(refused.status()).isEqualTo(422);
        assertThat(outboxRows("transfer-applied")).isEqualTo(before);
    }

    @Test
    void theEventsExchangeNeedsTheBroker() {
        assertThatThrownBy(() -> LedgerConfig.from(new String[] {"--events-exchange=x"}, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("needs LEDGER_AMQP_URL");
    }
}
