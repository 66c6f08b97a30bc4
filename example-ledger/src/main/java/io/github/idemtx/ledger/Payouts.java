package io.github.idemtx.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import java.math.BigDecimal;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Record;

/**
 * Payouts to the external bank through {@link ExternalEffect}: the amount is held (moved from the
 * customer's account to the bank's clearing account, payout {@code in_flight}) in the transaction
 * that claims the key; the bank is called with the derived downstream key; the charge is recorded
 * with the payout {@code paid} and the amount settled (clearing to the bank's paid_out account), or
 * a refusal with the hold released (clearing back to the customer, payout {@code refused}). Each
 * movement is a transfer with two postings, like any other ({@link Ledger#payoutMovement}). A
 * recoverer settles payouts whose outcome was not known, looking them up at the bank by key.
 */
final class Payouts implements AutoCloseable {

    /** What a client asks for. */
    record PayoutRequest(UUID account, BigDecimal amount, String destination) {}

    /**
     * A payout as the ledger shows it; states {@code needs_reconciliation} and {@code
     * awaiting_statement} (sent to the statement bank, its outcome read from its statement) come from
     * its claim.
     */
    record Payout(
            UUID id,
            UUID account,
            BigDecimal amount,
            String currency,
            String destination,
            String state,
            String chargeId,
            OffsetDateTime createdAt) {}

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final String schema;
    private final String bankName;
    private final String bankUrl;
    private final ExternalEffect<PayoutRequest, String> effect;
    private final AutoCloseable recovering;
    /** The keyed bank; null for a bank without keys and lookups (then {@code statements} is set). */
    private final Bank bank;

    private final AutoCloseable statements;

    Payouts(
            DSLContext dsl,
            Ledger ledger,
            String schema,
            String bankName,
            String bankUrl,
            Duration lease,
            Duration recoverEvery,
            List<Duration> lookups,
            LedgerConfig.StatementBank statementBank,
            io.github.idemtx.core.IdempotencyListener<?> listener) {
        this.schema = schema;
        this.bankName = bankName;
        this.bankUrl = bankUrl;
        this.bank = statementBank == null ? new Bank(ledger) : null;
        UnkeyedBank unkeyed = statementBank == null ? null : new UnkeyedBank(dsl, ledger, schema, bankName, bankUrl);
        ExternalEffect.Builder<PayoutRequest, String> builder = ExternalEffect.builder(
                        dsl,
                        "payout",
                        ResultCodec.json(PayoutRequest.class),
                        ResultCodec.utf8(),
                        bank != null ? bank : unkeyed)
                .schema(schema)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofSeconds(2))
                        .build())
                .lease(lease)
                .lookupSchedule(lookups)
                .listener(listener);
        this.effect = statementBank == null
                // the bank's deduplication by key is consistent (a primary key), so a resend after an
                // absent lookup can never charge twice even while its lookups lag
                ? builder.readAfterWrite(true).build()
                // no key, no lookup: settled by the bank's camt.053 statements, fetched every poll
                : builder.settledByStatement(unkeyed.settlement(statementBank.lag()))
                        .build();
        this.recovering = effect.recovery()
                .schedule(recoverEvery, 100, pass -> System.out.println("ledger: payout recovery " + pass.counts()));
        this.statements = statementBank == null
                ? () -> {}
                : StatementPoller.start(dsl, schema, effect.statements(), bankUrl, statementBank.poll());
    }

    /** The statements that settle payouts to the statement bank; null with a keyed bank. */
    io.github.idemtx.jooq.StatementReconciliation<PayoutRequest, String> statements() {
        return bank == null ? effect.statements() : null;
    }

    /** The effect, for the operators' {@link io.github.idemtx.jooq.ClaimAdmin}. */
    ExternalEffect<PayoutRequest, String> effect() {
        return effect;
    }

    /**
     * What the bank's lookup says now of the payout sent with {@code downstreamKey}, for an operator:
     * never throws (a failed lookup is an unknown answer).
     */
    Remote.Lookup<String> bankSays(String downstreamKey) {
        if (bank == null) {
            return Remote.Lookup.unknown("this bank answers no lookup: its statements settle payouts");
        }
        try {
            return bank.lookup(downstreamKey);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Remote.Lookup.unknown("interrupted");
        } catch (Exception e) {
            return Remote.Lookup.unknown("the bank's lookup failed: " + e);
        }
    }

    RemoteOutcome<String> pay(Scope scope, IdempotencyKey key, Fingerprint fingerprint, PayoutRequest request) {
        return effect.run(scope, key, fingerprint, request);
    }

    /**
     * The payout of one claim of a key, by its id: stable across retries, lookups and recovery of that
     * claim (its downstream key), and another one when an operator forgot the claim and the key ran
     * again.
     */
    static UUID payoutId(Remote.Intent<PayoutRequest> intent) {
        return UUID.nameUUIDFromBytes(intent.downstreamKey().getBytes(StandardCharsets.UTF_8));
    }

    /** The id of the latest payout of ({@code scope}, {@code key}): the one its claim answers for. */
    Optional<UUID> latest(DSLContext dsl, Scope scope, IdempotencyKey key) {
        return dsl.resultQuery(
                        "SELECT id FROM " + schema + ".payout WHERE tenant = ? AND idem_key = ?"
                                + " ORDER BY created_at DESC LIMIT 1",
                        scope.value(),
                        key.value())
                .fetchOptional(0, UUID.class);
    }

    Optional<Payout> find(DSLContext dsl, String tenant, UUID id) {
        return dsl.resultQuery(
                        "SELECT p.id, p.account_id, p.amount, p.currency, p.destination, CASE WHEN c.state = 4"
                                + " THEN 'needs_reconciliation' WHEN c.state = 5 THEN 'awaiting_statement'"
                                + " ELSE p.state END, p.charge_id, p.created_at FROM "
                                + schema + ".payout p"
                                + " LEFT JOIN " + schema
                                + ".idempotency_claim c ON c.scope = p.tenant AND c.idem_key = p.idem_key"
                                + " AND p.state = 'in_flight'"
                                + " WHERE p.id = ? AND p.tenant = ?",
                        id,
                        tenant)
                .fetchOptional()
                .map(Payouts::payoutOf);
    }

    List<Payout> list(DSLContext dsl, String tenant, String state, int limit) {
        String condition = switch (state) {
            case "needs_reconciliation" -> "c.state = 4";
            case "awaiting_statement" -> "c.state = 5";
            default -> "p.state = ? AND (c.state IS NULL OR c.state NOT IN (4, 5))";
        };
        Object[] args = state.equals("needs_reconciliation") || state.equals("awaiting_statement")
                ? new Object[] {tenant, limit}
                : new Object[] {tenant, state, limit};
        return dsl.resultQuery(
                        "SELECT p.id, p.account_id, p.amount, p.currency, p.destination, CASE WHEN c.state = 4"
                                + " THEN 'needs_reconciliation' WHEN c.state = 5 THEN 'awaiting_statement'"
                                + " ELSE p.state END, p.charge_id, p.created_at FROM "
                                + schema + ".payout p"
                                + " LEFT JOIN " + schema
                                + ".idempotency_claim c ON c.scope = p.tenant AND c.idem_key = p.idem_key"
                                + " AND p.state = 'in_flight'"
                                + " WHERE p.tenant = ? AND " + condition + " ORDER BY p.created_at LIMIT ?",
                        args)
                .fetch()
                .map(Payouts::payoutOf);
    }

    private static Payout payoutOf(Record r) {
        return new Payout(
                r.get(0, UUID.class),
                r.get(1, UUID.class),
                r.get(2, BigDecimal.class),
                r.get(3, String.class),
                r.get(4, String.class),
                r.get(5, String.class),
                r.get(6, String.class),
                r.get(7, OffsetDateTime.class));
    }

    @Override
    public void close() throws Exception {
        statements.close();
        recovering.close();
    }

    /** The keyed bank over HTTP: a charge per idempotency key, and lookups by key. */
    private final class Bank extends PayoutWrites {

        Bank(Ledger ledger) {
            super(ledger, Payouts.this.schema, Payouts.this.bankName);
        }

        @Override
        public Reply<String> call(Intent<PayoutRequest> intent, Instant deadline) throws Exception {
            Duration left = timeLeft(deadline);
            String body = MAPPER.createObjectNode()
                    .put("amount", intent.request().amount().setScale(2).toPlainString())
                    .put("destination", intent.request().destination())
                    .toString();
            HttpResponse<String> response = http.send(
                    HttpRequest.newBuilder(URI.create(bankUrl + "/charges"))
                            .timeout(left)
                            .header("Content-Type", "application/json")
                            .header("Idempotency-Key", intent.downstreamKey())
                            .POST(HttpRequest.BodyPublishers.ofString(body))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            return switch (response.statusCode()) {
                case 201 ->
                    Reply.applied(MAPPER.readTree(response.body()).path("id").asText());
                case 402 -> Reply.refused(new Failure("bank_declined", "the bank declined the payout"));
                default -> throw new java.io.IOException("the bank answered " + response.statusCode());
            };
        }

        @Override
        public Lookup<String> lookup(Intent<PayoutRequest> intent) throws Exception {
            return lookup(intent.downstreamKey());
        }

        /** What the bank has for a downstream key: its charge, its refusal, nothing, or unknown. */
        Lookup<String> lookup(String downstreamKey) throws Exception {
            HttpResponse<String> response = http.send(
                    HttpRequest.newBuilder(URI.create(bankUrl + "/charges?idempotency_key="
                                    + URLEncoder.encode(downstreamKey, StandardCharsets.UTF_8)))
                            .timeout(Duration.ofSeconds(2))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() == 404) {
                return Lookup.absent();
            }
            if (response.statusCode() != 200) {
                return Lookup.unknown("the bank's lookup answered " + response.statusCode());
            }
            JsonNode charge = MAPPER.readTree(response.body());
            return "succeeded".equals(charge.path("status").asText())
                    ? Lookup.found(charge.path("id").asText())
                    : Lookup.refused(new Failure("bank_declined", "the bank declined the payout"));
        }
    }
}
