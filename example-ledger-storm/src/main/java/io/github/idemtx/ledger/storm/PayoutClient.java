package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The payout storm's client of the ledger (the ledger process's port, its tenant's token): a POST
 * with an {@code Idempotency-Key}, sent once, or again and again with the same key until a final
 * answer; whatever the ledger answers, or nothing while it is down.
 */
final class PayoutClient {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final int ledgerPort;

    PayoutClient(int ledgerPort) {
        this.ledgerPort = ledgerPort;
    }

    /**
     * Sends the payout again and again with its key until a final answer (201 paid or 422 refused),
     * or 502 (needs reconciliation).
     */
    PayoutStorm.Answer untilFinal(PayoutStorm.Intent intent) {
        PayoutStorm.Answer last = null;
        for (int attempt = 0; attempt < 400 && !Thread.currentThread().isInterrupted(); attempt++) {
            PayoutStorm.Answer a = once(intent);
            last = a == null ? last : a;
            if (a != null && (a.isFinal() || a.status() == 502)) {
                return a;
            }
            ChildProcesses.sleep(50 + ThreadLocalRandom.current().nextInt(150));
        }
        return last;
    }

    /** Sends the payout once with its key: the answer, or null when none came (the ledger down, the answer cut). */
    PayoutStorm.Answer once(PayoutStorm.Intent intent) {
        String body = "{\"from\":\"" + intent.account() + "\",\"amount\":\""
                + intent.amount().toPlainString() + "\",\"destination\":\"DEST-" + intent.index() + "\"}";
        try {
            return post("/payouts", body, intent.key());
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** Posts until a 201 (an account, a deposit), with the same key: its answer; fails after 200 tries. */
    PayoutStorm.Answer finalAnswer(String path, String body, String key) throws Exception {
        for (int attempt = 0; attempt < 200; attempt++) {
            try {
                PayoutStorm.Answer a = post(path, body, key);
                if (a.status() == 201) {
                    return a;
                }
            } catch (IOException e) {
                // retry
            }
            ChildProcesses.sleep(100);
        }
        throw new IllegalStateException("no answer for " + path);
    }

    private PayoutStorm.Answer post(String path, String body, String key) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ledgerPort + path))
                        .timeout(Duration.ofSeconds(15))
                        .header("Authorization", "Bearer " + PayoutStorm.TOKEN)
                        .header("Content-Type", "application/json")
                        .header("Idempotency-Key", "\"" + key + "\"")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        JsonNode json = r.body().isEmpty() ? MAPPER.nullNode() : MAPPER.readTree(r.body());
        return new PayoutStorm.Answer(
                r.statusCode(),
                json,
                r.headers().firstValue("Idempotent-Replayed").orElse(null));
    }
}
