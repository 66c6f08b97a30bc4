package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.ledger.Flags;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code storm --queue}: transfer intents through RabbitMQ to the ledger's queue consumers
 * ({@code TransferQueue}), which run as child processes, while the consumers are SIGKILLed, halt
 * by themselves between a commit and its acknowledgement, and the broker closes every connection.
 *
 * <p>The producer publishes each intent with publisher confirms, in batches of {@value #BATCH}, at
 * {@code --rate} intents a second (so it still publishes when the broker closes its connection),
 * and publishes a batch again whenever its confirms do not all arrive (a nack, a timeout, a closed connection), and some
 * intents twice on purpose: duplicates are the point. Intents are transfers between the storm's
 * accounts (most carrying the producer's intent id, the rest none, so the consumer derives their
 * key from their fields), some refused by design (an unknown account, the same account twice) and
 * some undecodable. The storm reads the replies and the dead-letter queue, then checks:
 *
 * <ul>
 *   <li>no message lost: every intent published is answered as applied or refused, or
 *       dead-lettered, and only one of these;
 *   <li>every applied intent took effect exactly once: the ledger's transfers are exactly the
 *       answered ones, each matching its intent;
 *   <li>every answer for an intent identical, however many deliveries answered it;
 *   <li>each answered intent's key holds one recorded answer; undecodable intents dead-lettered
 *       with their reason and nothing written; refusals by design refused;
 *   <li>the books balance (the double-entry invariants of {@link StormChecks#books}).
 * </ul>
 *
 * Flags: {@code --intents=2000 --consumers=2 --kills=6 --closes=3 --duplicates=0.1 --seed=N}, the
 * broker {@code --amqp-url} (default {@link LocalBroker#url()}) and {@code --queue-name}, and the
 * ledger's {@code --db-url}, {@code --db-user}, {@code --db-password}, {@code --schema}. Exits 1
 * on any violation, 2 when no broker or database answers.
 */
public final class QueueStorm {

    static final String TOKEN = "queue-storm-token";
    static final String TENANT = "queue-storm-tenant";
    /** The ledgers' LEDGER_KEY_SECRET: the same in every consumer process, as derived keys need. */
    static final String KEY_SECRET = "71756575652073746f726d2064657269766564206b6579207365637265742e2e";

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final int ACCOUNTS = 20;
    private static final int BATCH = 10;

    /** The storm's settings. */
    public record Options(
            int intents,
            int consumers,
            int kills,
            int closes,
            int rate,
            double duplicates,
            long seed,
            StormDatabase db,
            String schema,
            String amqpUrl,
            String queue) {

        /** These settings on {@code resolved}. */
        Options on(StormDatabase resolved) {
            return new Options(
                    intents, consumers, kills, closes, rate, duplicates, seed, resolved, schema, amqpUrl, queue);
        }

        /** The ledgers' {@code --queue-fault-halt-every}: a halt after a commit every so many transfers per process. */
        int haltEvery() {
            return Math.max(5, intents / (2 * (consumers + kills)));
        }
    }

    /** No broker answers: the message says how to start one. */
    public static final class NoBrokerException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoBrokerException(String message) {
            super(message);
        }
    }

    /** What the storm found. */
    public record Report(
            int intents,
            Map<String, Long> counts,
            Map<String, Integer> faults,
            List<String> notes,
            Map<String, Boolean> invariants,
            double seconds) {

        public boolean passed() {
            return StormReport.allHold(invariants);
        }

        public String render() {
            StringBuilder out = new StringBuilder(String.format("%nqueue storm report%n"));
            out.append(String.format("  intents            %d over %.1f s%n", intents, seconds));
            out.append(String.format("  messages           %s%n", counts));
            out.append(String.format("  faults             %s%n", faults));
            for (String note : notes) {
                out.append(String.format("  note               %s%n", note));
            }
            return StormReport.ending(out, invariants);
        }
    }

    public static Options parse(String[] args) {
        Map<String, String> flags = StormFlags.withSwitches(args, "queue");
        Set<String> known = Set.of(
                "queue",
                "intents",
                "consumers",
                "kills",
                "closes",
                "rate",
                "duplicates",
                "seed",
                "db-url",
                "db-user",
                "db-password",
                "schema",
                "amqp-url",
                "queue-name");
        for (String name : flags.keySet()) {
            if (!known.contains(name)) {
                throw new IllegalArgumentException(
                        "unknown flag --" + name + " for storm --queue; known: " + new java.util.TreeSet<>(known));
            }
        }
        String schema = flags.getOrDefault("schema", "ledger_queue_storm");
        if (!schema.matches("[a-z_][a-z0-9_]{0,50}")) {
            throw new IllegalArgumentException("--schema must be a plain lower-case identifier, was '" + schema + "'");
        }
        if (!flags.getOrDefault("queue", "true").equals("true")) {
            throw new IllegalArgumentException("--queue takes no value, was '" + flags.get("queue") + "'");
        }
        String queue = flags.getOrDefault("queue-name", "storm." + schema + ".transfers");
        if (!queue.matches("[A-Za-z0-9_.-]{1,200}")) {
            throw new IllegalArgumentException(
                    "--queue-name must be 1 to 200 letters, digits, '.', '_' or '-', was '" + queue + "'");
        }
        String amqpUrl = flags.getOrDefault("amqp-url", LocalBroker.url());
        if (!amqpUrl.matches("amqps?://\\S+")) {
            throw new IllegalArgumentException("--amqp-url must be like amqp://guest:guest@127.0.0.1:5672");
        }
        return new Options(
                Flags.intFlag(flags, "intents", 2000, 10, 1_000_000),
                Flags.intFlag(flags, "consumers", 2, 1, 16),
                Flags.intFlag(flags, "kills", 6, 0, 1000),
                Flags.intFlag(flags, "closes", 3, 0, 100),
                Flags.intFlag(flags, "rate", 50, 1, 100_000),
                Flags.doubleFlag(flags, "duplicates", 0.1, 0, 1),
                Flags.longFlag(flags, "seed", System.nanoTime()),
                StormDatabase.fromFlags(flags),
                schema,
                amqpUrl,
                queue);
    }

    public static void main(String[] args) throws Exception {
        Report report;
        try {
            report = run(parse(args), System.out);
        } catch (NoBrokerException e) {
            System.err.println("storm: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.out.print(report.render());
        System.exit(report.passed() ? 0 : 1);
    }

    /**
     * Runs the storm: the database resolved as the ledger's ({@link LocalPostgres}), the broker at
     * {@code --amqp-url}, its queues and the ledger's schema recreated.
     *
     * @throws NoBrokerException when no broker answers, saying how to start one
     */
    public static Report run(Options options, java.io.PrintStream progress) throws Exception {
        java.util.Optional<String> noBroker = LocalBroker.unavailable(options.amqpUrl());
        if (noBroker.isPresent()) {
            throw new NoBrokerException(noBroker.get() + " (or pass --amqp-url)");
        }
        return options.db().resolve(progress, db -> new QueueStorm(options.on(db), progress).run());
    }

    // ---------------------------------------------------------------- the run

    enum Kind {
        TRANSFER,
        REFUSED,
        UNDECODABLE
    }

    record Intent(String label, Kind kind, String messageId, String from, String to, BigDecimal amount, String body) {}

    record Reply(int status, String body, String outcome) {}

    private final Options options;
    private final java.io.PrintStream progress;
    private final SideDatabase db;
    private StormEvents events; // the consumers' events: every run has a broker
    private final QueueChaos chaos;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Map<String, List<Reply>> replies = new ConcurrentHashMap<>();
    private final Map<String, List<String>> deadLetters = new ConcurrentHashMap<>();
    private final Set<String> accounted = ConcurrentHashMap.newKeySet();
    private final AtomicLong publishes = new AtomicLong();
    /** The intents the producer has handed to the broker at least once. */
    private final java.util.concurrent.atomic.AtomicInteger published = new java.util.concurrent.atomic.AtomicInteger();

    private final AtomicLong republished = new AtomicLong();
    private final AtomicLong replyCount = new AtomicLong();

    private QueueStorm(Options options, java.io.PrintStream progress) throws IOException {
        this.options = options;
        this.progress = progress;
        this.db = options.db().side("queue-storm");
        this.chaos = new QueueChaos(options, progress);
    }

    private ConnectionFactory factory() {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(options.amqpUrl());
        } catch (Exception e) {
            throw new IllegalArgumentException("--amqp-url is no AMQP URI: " + e.getMessage());
        }
        factory.setAutomaticRecoveryEnabled(true);
        factory.setNetworkRecoveryInterval(500);
        return factory;
    }

    private Report run() throws Exception {
        long start = System.nanoTime();
        db.execute("DROP SCHEMA IF EXISTS " + options.schema() + " CASCADE");
        try (Connection connection = factory().newConnection("queue-storm")) {
            try (Channel setup = connection.createChannel()) {
                for (String q :
                        new String[] {options.queue(), options.queue() + ".replies", options.queue() + ".dlq"}) {
                    setup.queueDelete(q);
                }
            }
            // the consumers announce what they apply; their relays die with them (SIGKILL) and lose their
            // broker connections with everyone's
            events =
                    StormEvents.declare(options.amqpUrl(), "queue-storm-events-" + Long.toHexString(System.nanoTime()));
            chaos.announceOn(events.exchangeArgs());
            try {
                chaos.start();
                events.startReadModel(db, options.schema());
                return storm(connection, start);
            } finally {
                chaos.stop();
                events.close();
                try (Channel teardown = connection.createChannel()) {
                    for (String q :
                            new String[] {options.queue(), options.queue() + ".replies", options.queue() + ".dlq"}) {
                        teardown.queueDelete(q);
                    }
                } catch (IOException | TimeoutException | RuntimeException e) {
                    progress.println("queue storm: could not delete the storm's queues: " + e);
                }
            }
        }
    }

    private Report storm(Connection connection, long start) throws Exception {
        Random seeded = new Random(options.seed());
        List<String> accounts = new ArrayList<>();
        for (int i = 0; i < ACCOUNTS; i++) {
            String id = post("/accounts", "{\"currency\":\"BRL\"}").get("id").asText();
            post("/accounts/" + id + "/deposits", "{\"amount\":\"" + (500 + seeded.nextInt(1000)) + ".00\"}");
            accounts.add(id);
        }
        long claimsBefore = claims();
        List<Intent> intents = intents(seeded, accounts);
        progress.println(
                "queue storm: " + intents.size() + " intents to " + options.queue() + ", " + options.consumers()
                        + " consumer processes, halting every " + options.haltEvery() + " transfers; " + options);

        collect(connection, options.queue() + ".replies", (props, body) -> {
            Object status =
                    props.getHeaders() == null ? null : props.getHeaders().get("status");
            Object outcome =
                    props.getHeaders() == null ? null : props.getHeaders().get("outcome");
            replies.computeIfAbsent(label(props), k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(new Reply(
                            status instanceof Number n ? n.intValue() : -1,
                            new String(body, StandardCharsets.UTF_8),
                            String.valueOf(outcome)));
            replyCount.incrementAndGet();
        });
        collect(connection, options.queue() + ".dlq", (props, body) -> {
            Object reason = props.getHeaders() == null
                    ? null
                    : props.getHeaders().get(io.github.idemtx.ledger.LedgerConfig.Queue.REASON_HEADER);
            deadLetters
                    .computeIfAbsent(label(props), k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(String.valueOf(reason));
        });

        Thread producer =
                Thread.ofPlatform().name("queue-storm-producer").start(() -> produce(intents, seeded.nextLong()));
        Thread closer = Thread.ofPlatform()
                .name("queue-storm-closer")
                .start(() -> chaos.closeOnPublishing(
                        published::get, intents.size(), () -> accounted.size() >= intents.size()));
        long lastProgress = System.nanoTime();
        long lastPrint = 0;
        int seen = 0;
        while (accounted.size() < intents.size()) {
            chaos.reviveTheDead();
            chaos.onProgress(accounted.size(), intents.size());
            if (accounted.size() != seen) {
                seen = accounted.size();
                lastProgress = System.nanoTime();
            } else if (System.nanoTime() - lastProgress
                    > Duration.ofSeconds(120).toNanos()) {
                progress.println("queue storm: no intent accounted for in 120 s; judging what arrived");
                break;
            }
            if (System.nanoTime() - lastPrint > Duration.ofSeconds(2).toNanos()) {
                lastPrint = System.nanoTime();
                progress.printf(
                        "queue storm: %d/%d intents accounted, %d publishes, %d replies, %d kills, %d halts, %d closes%n",
                        accounted.size(),
                        intents.size(),
                        publishes.get(),
                        replyCount.get(),
                        chaos.kills.get(),
                        chaos.haltsBeforeAnswer.get() + chaos.haltsBeforeAck.get(),
                        chaos.closes.get());
            }
            Thread.sleep(100);
        }
        producer.join(Duration.ofSeconds(60));
        closer.join(Duration.ofSeconds(60));
        settle(connection);
        double seconds = (System.nanoTime() - start) / 1e9;
        return judge(intents, claimsBefore, seconds);
    }

    /** The storm's intents, from the seed: most transfers, some refused by design, a few undecodable. */
    private List<Intent> intents(Random seeded, List<String> accounts) {
        Instant createdAt = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        List<Intent> intents = new ArrayList<>();
        for (int i = 0; i < options.intents(); i++) {
            String label = "q-" + i;
            double roll = seeded.nextDouble();
            Kind kind = roll < 0.03 ? Kind.UNDECODABLE : roll < 0.08 ? Kind.REFUSED : Kind.TRANSFER;
            String from = accounts.get(seeded.nextInt(accounts.size()));
            String to;
            if (kind == Kind.REFUSED) {
                to = seeded.nextBoolean() ? from : new UUID(seeded.nextLong(), seeded.nextLong()).toString();
            } else {
                do {
                    to = accounts.get(seeded.nextInt(accounts.size()));
                } while (to.equals(from));
            }
            BigDecimal amount = new BigDecimal((1 + seeded.nextInt(3000)) + "").movePointLeft(2);
            boolean keyless = kind != Kind.UNDECODABLE && seeded.nextInt(10) < 3;
            String body = "{\"tenant\":\"" + TENANT + "\",\"from\":\"" + from + "\",\"to\":\"" + to + "\",\"amount\":\""
                    + amount.toPlainString() + "\",\"reference\":\"" + label + "\",\"createdAt\":\"" + createdAt
                    + "\"}";
            if (kind == Kind.UNDECODABLE) {
                body = switch (seeded.nextInt(3)) {
                    case 0 -> "{\"tenant\":\"" + TENANT + "\",\"from\":";
                    case 1 -> body.replace("\"amount\":\"" + amount.toPlainString() + "\"", "\"amount\":12.5");
                    default -> body.replace("{", "{\"priority\":\"high\",");
                };
            }
            intents.add(new Intent(
                    label,
                    kind,
                    keyless ? null : "intent-" + Long.toHexString(options.seed()) + "-" + i,
                    from,
                    to,
                    amount,
                    body));
        }
        return intents;
    }

    /**
     * Publishes every intent with publisher confirms, a batch at a time; a batch whose confirms do
     * not all arrive (a nack, a timeout, the connection closed under it) is published again, whole.
     */
    private void produce(List<Intent> intents, long seed) {
        Random random = new Random(seed);
        long start = System.currentTimeMillis();
        // no automatic recovery here: a recovered channel starts a new confirm sequence, and waitForConfirms
        // would say yes for what was published on the connection the broker closed, unconfirmed
        ConnectionFactory factory = factory();
        factory.setAutomaticRecoveryEnabled(false);
        Connection connection = null;
        Channel channel = null;
        for (int from = 0; from < intents.size(); from += BATCH) {
            List<Intent> batch = intents.subList(from, Math.min(intents.size(), from + BATCH));
            for (int attempt = 1; ; attempt++) {
                try {
                    if (connection == null || !connection.isOpen()) {
                        connection = factory.newConnection("queue-storm-producer");
                        channel = null;
                    }
                    if (channel == null || !channel.isOpen()) {
                        channel = connection.createChannel();
                        channel.confirmSelect();
                    }
                    for (Intent intent : batch) {
                        if (attempt == 1) { // at --rate: publishing lasts, so the broker's faults land on it
                            ChildProcesses.sleep(Math.max(
                                    0, start + published.get() * 1000L / options.rate() - System.currentTimeMillis()));
                            published.incrementAndGet();
                        }
                        publish(channel, intent);
                        if (random.nextDouble() < options.duplicates()) {
                            publish(channel, intent); // a duplicate on purpose
                        }
                    }
                    if (channel.waitForConfirms(10_000)) {
                        break;
                    }
                    progress.println("queue storm: the broker nacked part of a batch; publishing it again");
                } catch (IOException | TimeoutException | ShutdownSignalException e) {
                    progress.println("queue storm: a batch went unconfirmed (" + e + "); publishing it again");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                republished.addAndGet(batch.size());
                ChildProcesses.sleep(Math.min(2_000, 200L * attempt));
            }
        }
        if (connection != null && connection.isOpen()) {
            try {
                connection.close();
            } catch (IOException | ShutdownSignalException e) {
                // closing anyway
            }
        }
    }

    private void publish(Channel channel, Intent intent) throws IOException {
        channel.basicPublish(
                "",
                options.queue(),
                new AMQP.BasicProperties.Builder()
                        .messageId(intent.messageId())
                        .correlationId(intent.label())
                        .contentType("application/json")
                        .deliveryMode(2)
                        .build(),
                intent.body().getBytes(StandardCharsets.UTF_8));
        publishes.incrementAndGet();
    }

    /** What a collector does with each message it reads. */
    @FunctionalInterface
    private interface Collected {
        void accept(AMQP.BasicProperties properties, byte[] body);
    }

    /** Reads {@code queue} (manual acknowledgement, recovered with the connection) into {@code into}. */
    private void collect(Connection connection, String queue, Collected into) throws IOException {
        Channel channel = connection.createChannel();
        channel.basicQos(200);
        channel.basicConsume(queue, false, new DefaultConsumer(channel) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                    throws IOException {
                into.accept(props, body);
                accounted.add(label(props));
                try {
                    getChannel().basicAck(envelope.getDeliveryTag(), false);
                } catch (ShutdownSignalException e) {
                    // the broker closed the connection (its fault, on purpose): it delivers this again, counted twice
                }
            }
        });
    }

    private static String label(AMQP.BasicProperties props) {
        return props.getCorrelationId() == null ? "(no correlation id)" : props.getCorrelationId();
    }

    /**
     * Once every intent is accounted for: waits until the queue is empty and no reply has come for
     * three seconds (late duplicates answered too), at most a minute.
     */
    private void settle(Connection connection) throws Exception {
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        long lastCount = -1;
        long stableSince = System.nanoTime();
        while (System.nanoTime() < until) {
            chaos.reviveTheDead();
            long ready = ready(connection);
            long count = replyCount.get() + deadLetters.size();
            if (count != lastCount || ready != 0) {
                lastCount = count;
                stableSince = System.nanoTime();
            } else if (System.nanoTime() - stableSince > Duration.ofSeconds(3).toNanos()) {
                return;
            }
            Thread.sleep(200);
        }
    }

    /** The messages ready in the queue; -1 while the storm's connection recovers from a broker close. */
    private long ready(Connection connection) {
        try (Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(options.queue()).getMessageCount();
        } catch (IOException | TimeoutException | ShutdownSignalException e) {
            return -1;
        }
    }

    private long claims() throws java.sql.SQLException {
        return db.count(
                "SELECT count(*) FROM " + options.schema() + ".idempotency_claim WHERE scope = '" + TENANT + "'");
    }

    private Report judge(List<Intent> intents, long claimsBefore, double seconds) throws Exception {
        Map<String, Boolean> results = new LinkedHashMap<>();
        int applied = 0;
        int refused = 0;
        int dead = 0;
        int both = 0;
        int missing = 0;
        boolean identical = true;
        boolean asDesigned = true;
        long replays = 0;
        Map<String, Intent> appliedById = new TreeMap<>();
        for (Intent intent : intents) {
            List<Reply> answers = replies.getOrDefault(intent.label(), List.of());
            List<String> reasons = deadLetters.getOrDefault(intent.label(), List.of());
            if (!answers.isEmpty() && !reasons.isEmpty()) {
                both++;
                progress.println("queue storm: " + intent.label() + " was answered and dead-lettered: " + reasons);
            }
            if (answers.isEmpty() && reasons.isEmpty()) {
                missing++;
                continue;
            }
            if (!reasons.isEmpty()) {
                dead++;
                asDesigned &= intent.kind() == Kind.UNDECODABLE
                        && reasons.stream().allMatch(r -> r.startsWith("undecodable: "));
                continue;
            }
            Reply first = answers.get(0);
            for (Reply r : answers) {
                identical &= r.status() == first.status() && r.body().equals(first.body());
                replays += r.outcome().equals("replayed") ? 1 : 0;
            }
            if (first.status() == 201) {
                applied++;
                asDesigned &= intent.kind() == Kind.TRANSFER;
                JsonNode transfer = MAPPER.readTree(first.body());
                asDesigned &= transfer.get("from").asText().equals(intent.from())
                        && transfer.get("to").asText().equals(intent.to())
                        && new BigDecimal(transfer.get("amount").asText()).compareTo(intent.amount()) == 0;
                appliedById.put(transfer.get("id").asText(), intent);
            } else {
                refused++;
                asDesigned &= intent.kind() == Kind.REFUSED
                        || (intent.kind() == Kind.TRANSFER && first.body().contains("insufficient_funds"));
            }
        }
        Set<String> inLedger = db.strings("SELECT id FROM " + options.schema()
                + ".transfer WHERE kind = 'transfer' AND tenant = '" + TENANT + "'");
        results.put(
                "no message lost: published " + intents.size() + " = applied " + applied + " + refused " + refused
                        + " + dead-lettered " + dead + " (" + missing + " unaccounted)",
                missing == 0 && applied + refused + dead == intents.size());
        results.put("no intent both answered and dead-lettered (" + both + ")", both == 0);
        results.put(
                "every applied intent took effect exactly once (" + inLedger.size() + " transfers in the ledger)",
                inLedger.equals(appliedById.keySet()) && appliedById.size() == applied);
        results.put("every answer for an intent identical, over " + replyCount.get() + " replies", identical);
        results.put(
                "each answered intent's key holds one recorded answer", claims() - claimsBefore == applied + refused);
        results.put(
                "each intent's fate as designed (undecodable dead-lettered with the reason; refusals refused;"
                        + " applied transfers match their intents)",
                asDesigned);
        StormChecks.books(db, options.schema(), results);
        events.check(db, options.schema(), results, progress);
        results.put(
                "every consumer exit was a kill or a halt between commit and acknowledgement " + chaos.unexpectedExits,
                chaos.unexpectedExits.isEmpty());

        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("publishes", publishes.get());
        counts.put("republished", republished.get());
        counts.put("applied", (long) applied);
        counts.put("refused", (long) refused);
        counts.put("dead-lettered", (long) dead);
        counts.put("replies", replyCount.get());
        counts.put("replays", replays);
        Map<String, Integer> faults = new LinkedHashMap<>();
        faults.put("SIGKILLs", chaos.kills.get());
        faults.put("halts before answer", chaos.haltsBeforeAnswer.get());
        faults.put("halts before ack", chaos.haltsBeforeAck.get());
        faults.put("broker closes", chaos.closes.get());
        faults.put("restarts", chaos.restarts.get());
        List<String> notes = new ArrayList<>(chaos.closeFailures);
        return new Report(intents.size(), counts, faults, notes, results, seconds);
    }

    /** POSTs to the first consumer process's HTTP port, with a fresh key, until a 201 (it may be starting). */
    private JsonNode post(String path, String body) throws Exception {
        String key = UUID.randomUUID().toString();
        for (int attempt = 0; attempt < 200; attempt++) {
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + chaos.ports[0] + path))
                                .timeout(Duration.ofSeconds(15))
                                .header("Authorization", "Bearer " + TOKEN)
                                .header("Content-Type", "application/json")
                                .header("Idempotency-Key", "\"" + key + "\"")
                                .POST(HttpRequest.BodyPublishers.ofString(body))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 201) {
                    return MAPPER.readTree(r.body());
                }
            } catch (IOException e) {
                // retry with the same key
            }
            ChildProcesses.sleep(100);
        }
        throw new IllegalStateException("no 201 for " + path);
    }
}
