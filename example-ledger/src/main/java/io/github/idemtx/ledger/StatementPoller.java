package io.github.idemtx.ledger;

import io.github.idemtx.jooq.StatementReconciliation;
import io.github.idemtx.ledger.bank.Camt053;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;

/**
 * Fetches the statement bank's camt.053 statements and applies them to the payout claims
 * ({@link StatementReconciliation#apply}): every {@code poll}, the period from the end of the last
 * statement applied (or, the first time, from before the oldest payout sent) to a second ago, so
 * that the periods applied join up and every send is covered once the lag passed. Each ledger
 * process polls; overlapping statements count nothing twice.
 */
final class StatementPoller {

    /** How far behind now a period ends: the bank serves closed periods only, on its own clock. */
    private static final Duration BEHIND = Duration.ofSeconds(1);

    private final DSLContext dsl;
    private final String schema;
    private final StatementReconciliation<?, ?> statements;
    private final String bankUrl;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private StatementPoller(DSLContext dsl, String schema, StatementReconciliation<?, ?> statements, String bankUrl) {
        this.dsl = dsl;
        this.schema = schema;
        this.statements = statements;
        this.bankUrl = bankUrl;
    }

    /** Polls every {@code poll} until the handle is closed (a statement being applied is finished first). */
    static AutoCloseable start(
            DSLContext dsl, String schema, StatementReconciliation<?, ?> statements, String bankUrl, Duration poll) {
        StatementPoller poller = new StatementPoller(dsl, schema, statements, bankUrl);
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "ledger-statements");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(poller::pollOnce, poll.toMillis(), poll.toMillis(), TimeUnit.MILLISECONDS);
        return () -> {
            timer.shutdown();
            if (!timer.awaitTermination(10, TimeUnit.SECONDS)) {
                timer.shutdownNow();
            }
        };
    }

    /** One statement fetched and applied; a failure is logged and the same period asked again next time. */
    void pollOnce() {
        try {
            Instant from = from();
            Instant to = Instant.now().minus(BEHIND).truncatedTo(ChronoUnit.MILLIS);
            if (!from.isBefore(to)) {
                return;
            }
            StatementReconciliation.Report report = statements.apply(fetch(from, to));
            int lines =
                    report.lines().values().stream().mapToInt(Integer::intValue).sum();
            if (lines > 0
                    || report.sentAgain() > 0
                    || report.toOperator() > 0
                    || !report.problems().isEmpty()) {
                System.out.println("ledger: statement " + from + " to " + to + ": " + report.lines() + ", sent again "
                        + report.sentAgain() + ", to an operator " + report.toOperator()
                        + (report.problems().isEmpty() ? "" : ", problems " + report.problems()));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            System.err.println("ledger: reading the bank's statement failed (tried again next poll): " + e);
        }
    }

    /** Where the next period starts: the end of the last one applied, else before the oldest payout claim. */
    private Instant from() {
        OffsetDateTime last = dsl.resultQuery(
                        "SELECT max(period_to) FROM " + schema + ".idempotency_statement WHERE effect = ?",
                        statements.effect())
                .fetchOne(0, OffsetDateTime.class);
        if (last != null) {
            return last.toInstant();
        }
        OffsetDateTime oldest = dsl.resultQuery(
                        "SELECT min(created_at) FROM " + schema + ".idempotency_claim WHERE effect = ?",
                        statements.effect())
                .fetchOne(0, OffsetDateTime.class);
        Instant first = oldest == null ? Instant.now() : oldest.toInstant();
        return first.minus(Duration.ofMinutes(1)).truncatedTo(ChronoUnit.MILLIS);
    }

    private StatementReconciliation.Statement fetch(Instant from, Instant to) throws Exception {
        HttpResponse<InputStream> response = http.send(
                HttpRequest.newBuilder(URI.create(bankUrl + "/statements?from="
                                + URLEncoder.encode(from.toString(), StandardCharsets.UTF_8) + "&to="
                                + URLEncoder.encode(to.toString(), StandardCharsets.UTF_8)))
                        .timeout(Duration.ofSeconds(10))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream body = response.body()) {
            if (response.statusCode() != 200) {
                throw new java.io.IOException("the bank answered " + response.statusCode() + ": "
                        + new String(body.readNBytes(500), StandardCharsets.UTF_8));
            }
            Camt053.Statement camt = Camt053.parse(body);
            List<StatementReconciliation.Line> debits = camt.entries().stream()
                    .filter(e -> "DBIT".equals(e.creditDebit()) && e.reference() != null)
                    .map(e -> new StatementReconciliation.Line(
                            e.entryId(), e.reference(), e.amount(), e.currency(), e.bookingDate()))
                    .toList();
            return new StatementReconciliation.Statement(camt.id(), camt.from(), camt.to(), debits);
        }
    }
}
