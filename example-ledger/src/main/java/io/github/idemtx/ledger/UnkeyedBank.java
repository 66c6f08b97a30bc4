package io.github.idemtx.ledger;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.core.Failure;
import io.github.idemtx.jooq.StatementReconciliation;
import io.github.idemtx.jooq.StatementSettlement;
import io.github.idemtx.ledger.Payouts.PayoutRequest;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jooq.DSLContext;

/**
 * The statement bank over HTTP ({@code BankServer --mode=statement}): it takes no idempotency key and
 * answers no lookup, so each payout is sent once with the claim's downstream key as its reference
 * ({@code POST /payments}), and settled by the bank's camt.053 statements ({@link StatementPoller});
 * the library marks the claim sent before every send. The ledger's writes around it are {@link
 * PayoutWrites}', as for the keyed bank.
 */
final class UnkeyedBank extends PayoutWrites {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final DSLContext dsl;
    private final String bankUrl;
    private final Map<UUID, String> currencies = new ConcurrentHashMap<>();

    UnkeyedBank(DSLContext dsl, Ledger ledger, String schema, String bankName, String bankUrl) {
        super(ledger, schema, bankName);
        this.dsl = dsl;
        this.bankUrl = bankUrl;
    }

    /**
     * How payouts to this bank settle: {@code lag} after a send the bank has booked it; a line's
     * amount and currency must be the payout's (the account's currency); the result is the bank's
     * entry id, as the bank's accepted answer gives it too.
     */
    StatementSettlement<PayoutRequest, String> settlement(Duration lag) {
        return StatementSettlement.of(
                lag,
                (PayoutRequest r) -> new StatementSettlement.Amount(r.amount(), currencyOf(r.account())),
                StatementReconciliation.Line::entryId);
    }

    /** The currency of an account: it never changes, so it is read once, for the sends and the statements. */
    private String currencyOf(UUID account) {
        return currencies.computeIfAbsent(
                account,
                id -> dsl.resultQuery("SELECT currency FROM " + schema + ".account WHERE id = ?", id)
                        .fetchOptional(0, String.class)
                        .orElse("XXX")); // no such account: no line can match it
    }

    @Override
    public Reply<String> call(Intent<PayoutRequest> intent, Instant deadline) throws Exception {
        Duration left = timeLeft(deadline);
        PayoutRequest r = intent.request();
        String body = MAPPER.createObjectNode()
                .put("amount", r.amount().setScale(2).toPlainString())
                .put("currency", currencyOf(r.account()))
                .put("destination", r.destination())
                .put("reference", intent.downstreamKey()) // what the statement shows again
                .toString();
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create(bankUrl + "/payments"))
                        .timeout(left)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        return switch (response.statusCode()) {
            case 202 ->
                Reply.applied(MAPPER.readTree(response.body()).path("id").asText());
            case 402 -> Reply.refused(new Failure("bank_declined", "the bank declined the payout"));
            // the bank refused the request as it is (recorded nothing): sending it again cannot help
            case 400 ->
                Reply.refused(new Failure(
                        "bank_rejected",
                        "the bank rejected the payout: "
                                + MAPPER.readTree(response.body()).path("error").asText()));
            default -> throw new java.io.IOException("the bank answered " + response.statusCode());
        };
    }

    @Override
    public Lookup<String> lookup(Intent<PayoutRequest> intent) {
        // never called for an effect settled by statement; kept honest for anyone who calls it
        return Lookup.unknown("this bank answers no lookup: its statements settle payouts");
    }
}
