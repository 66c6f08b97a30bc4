package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.db.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ledger's transfer queue against the machine's RabbitMQ ({@link LocalBroker}) and the test
 * database: each outcome's fate for the message, the keys, and what is written. The consumer
 * killed between its commit and its acknowledgement, and the broker's connections closed, are
 * {@code storm --queue}'s (QueueStormTest in example-ledger-storm).
 */
@DatabaseTest
class TransferQueueTest {

    static final String TOKEN = "queue-test-token";
    static final String TENANT = "queue-test-tenant";
    static final String SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    static final String QUEUE = "test.transfers." + UUID.randomUUID();
    /** The intents' creation instant: now, as the consumer applies no intent older than the claims' ttl. */
    static final String CREATED_AT = java.time.Instant.now()
            .truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
            .toString();

    static LedgerServer server;
    static Connection broker;
    static Channel channel;
    static String schema;
    static String alice;
    static String bob;
    static String carol;
    /** Every reply and dead letter seen so far, by correlation id; the reads drain both queues into them. */
    static final Map<String, List<GetResponse>> replies = new ConcurrentHashMap<>();

    static final Map<String, List<GetResponse>> deadLetters = new ConcurrentHashMap<>();

    @BeforeAll
    static void start() throws Exception {
        LocalBroker.assumeAvailable();
        server = LedgerServer.startFresh(LedgerFixture.args(
                "queue",
                "--port=0",
                "--tokens=" + TOKEN + "=" + TENANT,
                "--amqp-url=" + LocalBroker.url(),
                "--queue=" + QUEUE,
                "--queue-consumers=2",
                "--queue-delivery-limit=3",
                "--queue-lock-timeout-ms=300",
                "--key-secret=" + SECRET));
        schema = server.schema();
        broker = TransferQueue.factory(LocalBroker.url()).newConnection("transfer-queue-test");
        channel = broker.createChannel();
        LedgerHttpTest.server = server;
        LedgerHttpTest.http = java.net.http.HttpClient.newHttpClient();
        alice = LedgerHttpTest.openAccount(TOKEN, "BRL");
        bob = LedgerHttpTest.openAccount(TOKEN, "BRL");
        carol = LedgerHttpTest.openAccount(TOKEN, "BRL");
        LedgerHttpTest.deposit(TOKEN, alice, "100.00");
        LedgerHttpTest.deposit(TOKEN, carol, "100.00");
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
        broker.close();
        LedgerFixture.dropSchema("queue");
    }

    static String intent(String from, String to, String amount, String reference) {
        return "{\"tenant\":\"" + TENANT + "\",\"from\":\"" + from + "\",\"to\":\"" + to + "\",\"amount\":\"" + amount
                + "\"" + (reference == null ? "" : ",\"reference\":\"" + reference + "\"")
                + ",\"createdAt\":\"" + CREATED_AT + "\"}";
    }

    static void publish(String messageId, String correlationId, String body) throws Exception {
        channel.basicPublish(
                "",
                QUEUE,
                new AMQP.BasicProperties.Builder()
                        .messageId(messageId)
                        .correlationId(correlationId)
                        .deliveryMode(2)
                        .build(),
                body.getBytes(StandardCharsets.UTF_8));
    }

    /** Drains the replies and dead letters until {@code done} holds; fails after 60 s. */
    static void await(String what, BooleanSupplier done) throws Exception {
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!done.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waiting for " + what).isLessThan(until);
            drain(QUEUE + ".replies", replies);
            drain(QUEUE + ".dlq", deadLetters);
            Thread.sleep(50);
        }
    }

    private static void drain(String queue, Map<String, List<GetResponse>> into) throws Exception {
        for (GetResponse r = channel.basicGet(queue, true); r != null; r = channel.basicGet(queue, true)) {
            String id = r.getProps().getCorrelationId();
            into.computeIfAbsent(id == null ? "" : id, k -> new ArrayList<>()).add(r);
        }
    }

    static List<GetResponse> replies(String correlationId, int n) throws Exception {
        await(
                n + " replies to " + correlationId,
                () -> replies.getOrDefault(correlationId, List.of()).size() >= n);
        return replies.get(correlationId);
    }

    static GetResponse deadLetter(String correlationId) throws Exception {
        await("the dead letter " + correlationId, () -> deadLetters.containsKey(correlationId));
        return deadLetters.get(correlationId).get(0);
    }

    static String text(GetResponse r) {
        return new String(r.getBody(), StandardCharsets.UTF_8);
    }

    static Object header(GetResponse r, String name) {
        Object v = r.getProps().getHeaders().get(name);
        return v == null ? null : v.toString();
    }

    static long count(String sql) throws Exception {
        try (java.sql.Connection c = TestDatabase.get().dataSource().getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static long transfers(String from, String to) throws Exception {
        return count("SELECT count(*) FROM " + schema + ".transfer WHERE kind = 'transfer' AND from_account = '" + from
                + "' AND to_account = '" + to + "'");
    }

    static long claims() throws Exception {
        return count("SELECT count(*) FROM " + schema + ".idempotency_claim");
    }

    @Test
    void anIntentDeliveredTwiceIsAppliedOnceAndAnsweredIdentically() throws Exception {
        String id = "intent-" + UUID.randomUUID();
        String body = intent(alice, bob, "10.00", null);
        publish(id, "twice", body);
        publish(id, "twice", body); // the producer's re-publish: the same intent, the same id

        List<GetResponse> answers = replies("twice", 2);
        assertThat(answers).extracting(r -> header(r, "status")).containsOnly("201");
        assertThat(answers).extracting(r -> header(r, "outcome")).containsExactlyInAnyOrder("executed", "replayed");
        assertThat(text(answers.get(0))).isEqualTo(text(answers.get(1)));
        assertThat(answers).extracting(r -> r.getProps().getMessageId()).containsOnly(id);
        assertThat(transfers(alice, bob)).isEqualTo(1);
        assertThat(LedgerHttpTest.balance(TOKEN, bob)).isEqualTo("10.00");
    }

    @Test
    void anIntentWithoutAnIdGetsTheKeyItsFieldsDerive() throws Exception {
        String body = intent(carol, bob, "7.00", "Invoice 42");
        // the same intent written another way: members reordered, spaces, the instant with milliseconds
        String again = "{ \"createdAt\": \"" + CREATED_AT.replace("Z", ".000Z") + "\", \"amount\": \"7.00\", \"to\": \""
                + bob + "\", \"from\": \"" + carol + "\", \"tenant\": \"" + TENANT
                + "\", \"reference\": \"Invoice 42\" }";
        publish(null, "derived", body);
        publish(null, "derived", again);

        List<GetResponse> answers = replies("derived", 2);
        assertThat(answers).extracting(r -> header(r, "status")).containsOnly("201");
        assertThat(text(answers.get(0))).isEqualTo(text(answers.get(1)));
        assertThat(answers.get(0).getProps().getMessageId())
                .as("the key derived from tenant, from, to, amount, reference and the creation bucket")
                .isEqualTo(TransferIntent.derivedKeys(java.util.HexFormat.of().parseHex(SECRET))
                        .derive(
                                io.github.idemtx.core.Scope.of(TENANT),
                                Map.of("from", carol, "to", bob, "amount", "7.00", "reference", "Invoice 42"),
                                java.time.Instant.parse(CREATED_AT))
                        .value());
        assertThat(transfers(carol, bob)).isEqualTo(1);

        publish(null, "derived-other", intent(carol, bob, "7.00", "Invoice 43")); // another intent: another key
        assertThat(header(replies("derived-other", 1).get(0), "outcome")).isEqualTo("executed");
        assertThat(transfers(carol, bob)).isEqualTo(2);
    }

    @Test
    void aRefusalIsRecordedAnsweredAndAcknowledged() throws Exception {
        String id = "refused-" + UUID.randomUUID();
        String body = intent(bob, alice, "5000.00", null);
        publish(id, "refused", body);
        publish(id, "refused", body);

        List<GetResponse> answers = replies("refused", 2);
        assertThat(answers).extracting(r -> header(r, "status")).containsOnly("422");
        assertThat(answers).extracting(r -> header(r, "outcome")).containsOnly("rejected");
        assertThat(text(answers.get(0))).contains("insufficient_funds").isEqualTo(text(answers.get(1)));
        assertThat(transfers(bob, alice)).isZero();
        assertThat(count("SELECT count(*) FROM " + schema + ".idempotency_claim WHERE idem_key = '" + id + "'"))
                .as("the refusal is recorded under the intent's key")
                .isEqualTo(1);
    }

    @Test
    void anUndecodableMessageIsDeadLetteredWithItsReasonAndNothingIsWritten() throws Exception {
        long claimsBefore = claims();
        Map<String, String> bodies = Map.of(
                "not-json", "{\"tenant\":",
                "not-object", "[1, 2]",
                "no-amount", intent(alice, bob, "1.00", null).replace(",\"amount\":\"1.00\"", ""),
                "unknown-field", intent(alice, bob, "1.00", null).replace("{", "{\"currency\":\"BRL\","),
                "bad-amount", intent(alice, bob, "-1.00", null),
                "bad-account", intent("alice", bob, "1.00", null),
                "bad-id", intent(alice, bob, "1.00", null));
        for (Map.Entry<String, String> e : bodies.entrySet()) {
            publish(e.getKey().equals("bad-id") ? "caf\u00e9" : "id-" + e.getKey(), e.getKey(), e.getValue());
        }
        Map<String, String> reasons = Map.of(
                "not-json", "the body is not JSON",
                "not-object", "the body must be a JSON object",
                "no-amount", "amount must be a JSON string",
                "unknown-field", "unknown field(s) [currency]",
                "bad-amount", "amount must be a positive amount",
                "bad-account", "from must be an account id (a UUID), was 'alice'",
                "bad-id", "message_id is not a valid idempotency key");
        assertParkedUndecodable(reasons, bodies);
        assertThat(claims()).as("nothing written for an undecodable message").isEqualTo(claimsBefore);
        assertThat(replies).doesNotContainKeys(bodies.keySet().toArray(String[]::new));
    }

    @Test
    void aBodyThatFailsPastTheCanonicaliserIsDeadLetteredAtOnceWithItsReason() throws Exception {
        // accounts of their own: nothing else moves money between them
        String frank = LedgerHttpTest.openAccount(TOKEN, "BRL");
        String gina = LedgerHttpTest.openAccount(TOKEN, "BRL");
        LedgerHttpTest.deposit(TOKEN, frank, "10.00");
        String intent = intent(frank, gina, "1.00", null);
        Map<String, String> bodies = Map.of(
                // JSON the canonicaliser accepts, refused by Jackson's stricter limits (number length, name length)
                "huge-number", intent.replace("{", "{\"x\":" + "0." + "7".repeat(1_500) + ","),
                "huge-name", intent.replace("{", "{\"" + "n".repeat(60_000) + "\":1,"),
                // no message id, and a reference whose key cannot be derived (an unpaired surrogate)
                "surrogate", intent(frank, gina, "1.00", "invoice \\ud800 42"));
        for (Map.Entry<String, String> e : bodies.entrySet()) {
            publish(e.getKey().equals("surrogate") ? null : "id-" + e.getKey(), e.getKey(), e.getValue());
        }
        Map<String, String> reasons = Map.of(
                "huge-number", "the body is JSON the ledger cannot read: ",
                "huge-name", "the body is JSON the ledger cannot read: ",
                "surrogate", "its key cannot be derived from its fields: ");
        assertParkedUndecodable(reasons, bodies);
        assertThat(transfers(frank, gina)).as("nothing applied").isZero();
    }

    /**
     * Each message of {@code bodies} (by correlation id) dead-lettered as it came, by the consumer at
     * its first delivery (not by the broker's delivery limit after requeues), its reason
     * "undecodable: ..." holding the one in {@code reasons}.
     */
    private static void assertParkedUndecodable(Map<String, String> reasons, Map<String, String> bodies)
            throws Exception {
        for (Map.Entry<String, String> e : reasons.entrySet()) {
            GetResponse dead = deadLetter(e.getKey());
            assertThat(header(dead, TransferQueue.REASON_HEADER))
                    .as(e.getKey())
                    .asString()
                    .startsWith("undecodable: ")
                    .contains(e.getValue());
            assertThat(header(dead, "x-delivery-count"))
                    .as(e.getKey() + ": parked at its first delivery")
                    .isIn(null, "0");
            assertThat(text(dead)).as("the message as it came").isEqualTo(bodies.get(e.getKey()));
        }
    }

    @Test
    void anIntentDatedBeyondTheClockSkewAllowanceIsDeadLetteredNotApplied() throws Exception {
        String dave = LedgerHttpTest.openAccount(TOKEN, "BRL");
        String gus = LedgerHttpTest.openAccount(TOKEN, "BRL");
        LedgerHttpTest.deposit(TOKEN, dave, "10.00");
        String future = intent(dave, gus, "4.00", null)
                .replace(
                        CREATED_AT,
                        java.time.Instant.now()
                                .plus(java.time.Duration.ofDays(3))
                                .toString());
        publish("future-" + UUID.randomUUID(), "future", future);

        GetResponse dead = deadLetter("future");
        assertThat(header(dead, TransferQueue.REASON_HEADER))
                .asString()
                .startsWith("dated in the future: created at ")
                .contains("more than the 60 s allowed for clock skew");
        assertThat(transfers(dave, gus)).as("nothing applied").isZero();

        // within the allowance (a producer's clock 20 s ahead) it is applied
        publish(
                "ahead-" + UUID.randomUUID(),
                "ahead",
                intent(dave, gus, "4.00", null)
                        .replace(
                                CREATED_AT,
                                java.time.Instant.now()
                                        .plus(java.time.Duration.ofSeconds(20))
                                        .toString()));
        assertThat(header(replies("ahead", 1).get(0), "status")).isEqualTo("201");
        assertThat(transfers(dave, gus)).isEqualTo(1);
    }

    @Test
    void anIntentOlderThanTheClaimsTtlIsDeadLetteredNotApplied() throws Exception {
        long claimsBefore = claims();
        String old = intent(alice, bob, "4.00", null)
                .replace(
                        CREATED_AT,
                        java.time.Instant.parse(CREATED_AT)
                                .minus(java.time.Duration.ofHours(25))
                                .toString());
        publish("old-" + UUID.randomUUID(), "old", old);

        GetResponse dead = deadLetter("old");
        assertThat(header(dead, TransferQueue.REASON_HEADER))
                .asString()
                .startsWith("too old to apply safely: created ")
                .contains("keys are kept 86340 s");
        assertThat(claims()).isEqualTo(claimsBefore);
    }

    @Test
    void anIdReusedForOtherContentIsDeadLettered() throws Exception {
        String id = "reused-" + UUID.randomUUID();
        publish(id, "reused-first", intent(carol, alice, "3.00", null));
        assertThat(header(replies("reused-first", 1).get(0), "status")).isEqualTo("201");
        publish(id, "reused-other", intent(carol, alice, "30.00", null));

        GetResponse dead = deadLetter("reused-other");
        assertThat(header(dead, TransferQueue.REASON_HEADER))
                .asString()
                .contains("an intent id reused for another intent");
        assertThat(transfers(carol, alice)).isEqualTo(1);
        assertThat(replies).doesNotContainKey("reused-other");
    }

    @Test
    void aFailureThatRecordsNothingIsRetriedThenDeadLetteredWithItsReason() throws Exception {
        String dave = LedgerHttpTest.openAccount(TOKEN, "BRL");
        long claimsBefore = claims();
        try (java.sql.Connection lock = TestDatabase.get().dataSource().getConnection()) {
            lock.setAutoCommit(false);
            try (Statement s = lock.createStatement()) {
                s.execute("SELECT 1 FROM " + schema + ".account WHERE id = '" + dave + "' FOR UPDATE");
            }
            publish("locked-" + UUID.randomUUID(), "locked", intent(alice, dave, "1.00", null));
            GetResponse dead = deadLetter("locked");
            assertThat(header(dead, TransferQueue.REASON_HEADER))
                    .asString()
                    .startsWith("gave up after 3 deliveries: ")
                    .contains("lock");
            lock.rollback();
        }
        assertThat(transfers(alice, dave)).isZero();
        assertThat(claims()).as("a failed attempt leaves no claim").isEqualTo(claimsBefore);
    }

    @Test
    void aFailureThatRecordsNothingIsRetriedUntilItApplies() throws Exception {
        String erin = LedgerHttpTest.openAccount(TOKEN, "BRL");
        try (java.sql.Connection lock = TestDatabase.get().dataSource().getConnection();
                java.sql.Connection watch = TestDatabase.get().dataSource().getConnection()) {
            lock.setAutoCommit(false);
            watch.setAutoCommit(true); // each query a transaction of its own: pg_stat_activity is read afresh
            try (Statement s = lock.createStatement()) {
                s.execute("SELECT 1 FROM " + schema + ".account WHERE id = '" + erin + "' FOR UPDATE");
            }
            publish("retried-" + UUID.randomUUID(), "retried", intent(alice, erin, "2.00", null));
            // two attempts seen waiting on the lock (each fails at the lock timeout), then the lock goes
            java.util.Set<String> attempts = new java.util.HashSet<>();
            await("two attempts blocked on the lock", () -> {
                try {
                    try (Statement s = watch.createStatement();
                            ResultSet rs = s.executeQuery("SELECT pid || ':' || xact_start FROM pg_stat_activity"
                                    + " WHERE application_name = '" + LedgerServer.applicationName(schema)
                                    + "' AND datname = current_database() AND wait_event_type = 'Lock'")) {
                        while (rs.next()) {
                            attempts.add(rs.getString(1));
                        }
                    }
                    return attempts.size() >= 2;
                } catch (java.sql.SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            lock.rollback();
        }
        List<GetResponse> answers = replies("retried", 1);
        assertThat(header(answers.get(0), "status")).isEqualTo("201");
        assertThat(transfers(alice, erin)).isEqualTo(1);
    }
}
