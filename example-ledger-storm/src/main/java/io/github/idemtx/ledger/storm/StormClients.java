package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.ledger.storm.StormTally.Answer;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The load: a fleet of flaky clients over real HTTP. Each intent (a deposit or a transfer) gets one
 * key and is sent again and again, sometimes as concurrent duplicates, after client-side timeouts,
 * with the JSON re-serialised, until a final answer (neither 409 nor 5xx) arrives; sometimes once
 * more after that. Every answer is counted in the {@link StormTally}.
 */
final class StormClients {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** One client intent: its tenant's token, the request, and the key it is sent with every time. */
    record Intent(int index, String token, String tenant, String path, Map<String, String> body, IdempotencyKey key) {}

    private final URI base;
    private final Map<String, String> tokens;
    private final Storm.Options options;
    private final StormTally tally;
    private final java.io.PrintStream progress;
    private final HttpClient http;
    private final Map<String, List<String>> accountsByTenant = new LinkedHashMap<>();
    private final Map<String, BigDecimal> setUpBalances = new ConcurrentHashMap<>();

    StormClients(
            URI base,
            Map<String, String> tokens,
            Storm.Options options,
            StormTally tally,
            java.io.PrintStream progress) {
        this.base = base;
        this.tokens = tokens;
        this.options = options;
        this.tally = tally;
        this.progress = progress;
        this.http = HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(5))
                .executor(Executors.newVirtualThreadPerTaskExecutor())
                .build();
    }

    /** The tenants' tokens, and their tenants. */
    Map<String, String> tokens() {
        return tokens;
    }

    /** Each account the set-up opened, with the deposit it made there. */
    Map<String, BigDecimal> setUpBalances() {
        return setUpBalances;
    }

    /** Opens {@code --accounts} accounts per tenant (one in ten in USD, the rest in BRL) and funds each. */
    void setUp() throws Exception {
        Random seeded = new Random(options.seed() ^ 0x5DEECE66DL);
        for (Map.Entry<String, String> t : tokens.entrySet()) {
            List<String> accounts = new ArrayList<>();
            for (int i = 0; i < options.accountsPerTenant(); i++) {
                String currency = i % 10 == 9 ? "USD" : "BRL";
                Answer created =
                        untilFinal(t.getKey(), "/accounts", Map.of("currency", currency), IdempotencyKey.random());
                String id = MAPPER.readTree(created.body()).get("id").asText();
                accounts.add(id);
                String deposit = amount(seeded, 500, 2000);
                untilFinal(
                        t.getKey(),
                        "/accounts/" + id + "/deposits",
                        Map.of("amount", deposit),
                        IdempotencyKey.random());
                setUpBalances.put(id, new BigDecimal(deposit));
            }
            accountsByTenant.put(t.getValue(), accounts);
        }
    }

    /** {@code --intents} intents from {@code --seed}: 15% deposits, the rest transfers between two accounts of one tenant. */
    List<Intent> intents() {
        List<Intent> intents = new ArrayList<>();
        List<String> tokenList = new ArrayList<>(tokens.keySet());
        Random seeded = new Random(options.seed());
        for (int i = 0; i < options.intents(); i++) {
            String token = tokenList.get(seeded.nextInt(tokenList.size()));
            String tenant = tokens.get(token);
            List<String> accounts = accountsByTenant.get(tenant);
            String to = accounts.get(seeded.nextInt(accounts.size()));
            if (seeded.nextInt(100) < 15) {
                intents.add(new Intent(
                        i,
                        token,
                        tenant,
                        "/accounts/" + to + "/deposits",
                        Map.of("amount", amount(seeded, 1, 200)),
                        IdempotencyKey.random()));
            } else {
                String from = accounts.get(seeded.nextInt(accounts.size()));
                while (from.equals(to)) {
                    from = accounts.get(seeded.nextInt(accounts.size()));
                }
                intents.add(new Intent(
                        i,
                        token,
                        tenant,
                        "/transfers",
                        Map.of("from", from, "to", to, "amount", amount(seeded, 1, 400)),
                        IdempotencyKey.random()));
            }
        }
        return intents;
    }

    /** Performs every intent with {@code --clients} clients; {@code done} counts the intents finished. */
    void perform(List<Intent> intents, AtomicInteger done) {
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService clients = Executors.newFixedThreadPool(options.clients())) {
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            for (int c = 0; c < options.clients(); c++) {
                futures.add(CompletableFuture.runAsync(
                        () -> {
                            int i;
                            while ((i = next.getAndIncrement()) < intents.size()) {
                                if (i >= heldFrom) {
                                    awaitRelease();
                                }
                                perform(intents.get(i));
                                done.incrementAndGet();
                            }
                        },
                        clients));
            }
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
        }
    }

    private volatile int heldFrom = Integer.MAX_VALUE;
    private final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);

    /**
     * No intent from {@code index} on starts until {@link #release()}: a fault injector that needs
     * load left for its last fault holds that share back until it begins it.
     */
    void holdFrom(int index) {
        heldFrom = index;
    }

    /** Lets the intents held back by {@link #holdFrom} start. */
    void release() {
        release.countDown();
    }

    private void awaitRelease() {
        try {
            while (!release.await(100, java.util.concurrent.TimeUnit.MILLISECONDS) && !tally.aborted) {
                // waiting for the fault injector
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Sends one intent until it has a final answer, as a flaky client would; checks every answer. */
    private void perform(Intent intent) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        List<Answer> answers = new ArrayList<>();
        while (answers.isEmpty() && !tally.aborted) {
            int copies = random.nextDouble() < options.duplicateRate() ? 2 + random.nextInt(2) : 1;
            List<CompletableFuture<Answer>> inFlight = new ArrayList<>();
            for (int c = 0; c < copies; c++) {
                inFlight.add(send(intent));
            }
            for (CompletableFuture<Answer> f : inFlight) {
                Answer a = f.join();
                if (a != null) {
                    answers.add(a);
                }
            }
            if (answers.isEmpty()) {
                pause(random);
            }
        }
        if (answers.isEmpty()) {
            return; // aborted: no final answer, which the checks report
        }
        if (random.nextInt(100) < 20) { // a late retry: the client never saw the answer
            Answer late = sendUntilAnswered(intent);
            if (late != null) {
                answers.add(late);
            }
        }
        Answer first = answers.get(0);
        for (Answer a : answers) {
            if (!a.sameAs(first)) {
                tally.mismatchedReplays.incrementAndGet();
                progress.println("storm: intent " + intent.index() + " got two different answers: " + first.status()
                        + " " + new String(first.body()) + " vs " + a.status() + " " + new String(a.body()));
            }
        }
        tally.finalAnswers.put(intent.index(), first);
    }

    /** The intent sent again until a final answer comes back; null if the storm was aborted first. */
    Answer sendUntilAnswered(Intent intent) {
        Answer a = null;
        while (a == null && !tally.aborted) {
            a = send(intent).join();
            if (a == null) {
                pause(ThreadLocalRandom.current());
            }
        }
        return a;
    }

    private Answer untilFinal(String token, String path, Map<String, String> body, IdempotencyKey key) {
        Answer a = null;
        while (a == null) {
            a = send(token, path, body, key).join();
            if (a == null) {
                pause(ThreadLocalRandom.current());
            }
        }
        if (a.status() >= 300) {
            throw new IllegalStateException(
                    "storm set-up failed: " + path + " answered " + a.status() + " " + new String(a.body()));
        }
        return a;
    }

    private CompletableFuture<Answer> send(Intent intent) {
        return send(intent.token(), intent.path(), intent.body(), intent.key());
    }

    /** One request; its final answer, or null when the client should try again (timeout, 409, 5xx). */
    private CompletableFuture<Answer> send(String token, String path, Map<String, String> body, IdempotencyKey key) {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path))
                .timeout(options.clientTimeout())
                .header("Authorization", "Bearer " + token)
                .header(
                        "Idempotency-Key",
                        ThreadLocalRandom.current().nextBoolean() ? key.value() : "\"" + key.value() + "\"")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(reserialise(body)))
                .build();
        tally.requests.incrementAndGet();
        long start = System.nanoTime();
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray()).handle((response, error) -> {
            tally.latency.recordValue(Math.max(1, (System.nanoTime() - start) / 1000));
            if (error != null) {
                if (error.getCause() instanceof HttpTimeoutException || error instanceof HttpTimeoutException) {
                    tally.timeouts.incrementAndGet();
                }
                return null;
            }
            if (response.statusCode() == 409) {
                tally.conflicts.incrementAndGet();
                return null;
            }
            if (response.statusCode() >= 500) {
                tally.serverErrors.incrementAndGet();
                return null;
            }
            if (response.headers().firstValue("Idempotent-Replayed").isPresent()) {
                tally.replays.incrementAndGet();
            }
            return new Answer(
                    response.statusCode(),
                    response.headers().firstValue("Location").orElse(null),
                    response.body());
        });
    }

    /** A GET with {@code token}, as the checks over HTTP make it. */
    Answer get(String token, String path) throws Exception {
        HttpResponse<byte[]> r = http.send(
                HttpRequest.newBuilder(base.resolve(path))
                        .timeout(Duration.ofSeconds(10))
                        .header("Authorization", "Bearer " + token)
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());
        return new Answer(r.statusCode(), null, r.body());
    }

    /** The ledger's {@code GET /metrics}: its status and body. */
    HttpResponse<String> metrics() throws IOException, InterruptedException {
        return http.send(
                HttpRequest.newBuilder(base.resolve("/metrics"))
                        .timeout(Duration.ofSeconds(10))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The same JSON object with its members in a random order and random spacing. */
    private static String reserialise(Map<String, String> body) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        List<Map.Entry<String, String>> members = new ArrayList<>(body.entrySet());
        Collections.shuffle(members, random);
        String space = random.nextBoolean() ? "" : " \n ";
        StringBuilder out = new StringBuilder("{").append(space);
        for (int i = 0; i < members.size(); i++) {
            if (i > 0) {
                out.append(',').append(space);
            }
            out.append('"')
                    .append(members.get(i).getKey())
                    .append('"')
                    .append(space)
                    .append(':')
                    .append(space)
                    .append('"')
                    .append(members.get(i).getValue())
                    .append('"');
        }
        return out.append(space).append('}').toString();
    }

    private static void pause(ThreadLocalRandom random) {
        try {
            Thread.sleep(10 + random.nextInt(40));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("storm interrupted", e);
        }
    }

    private static String amount(Random random, int min, int max) {
        int cents = min * 100 + random.nextInt((max - min) * 100 + 1);
        return BigDecimal.valueOf(cents, 2).toPlainString();
    }
}
