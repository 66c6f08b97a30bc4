package io.github.idemtx.jooq.readme;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.StatementReconciliation;
import io.github.idemtx.jooq.StatementSettlement;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;

/**
 * docs/destinations.md's payouts to a bank with neither idempotency key nor lookup: the region
 * between its markers is the page's block, verbatim, and {@code PayoutServiceTest} runs it.
 */
public final class PayoutService {

    /** A payout: how much, in which currency, to whom. */
    public record PayoutRequest(BigDecimal amount, String currency, String iban) {}

    /** The bank: it takes a payment with a reference and answers with its entry id, or not at all. */
    public interface Bank {
        String pay(PayoutRequest request, String reference, Instant deadline) throws Exception;
    }

    private final ExternalEffect<PayoutRequest, String> payouts;

    public PayoutService(org.jooq.DSLContext dsl, String schema, Bank bank) {
        Remote<PayoutRequest, String> remote = new Remote<>() {
            @Override // the reference the bank's statement shows again
            public Reply<String> call(Intent<PayoutRequest> i, Instant deadline) throws Exception {
                return Reply.applied(bank.pay(i.request(), i.downstreamKey(), deadline));
            }

            @Override // never called for an effect settled by statement
            public Lookup<String> lookup(Intent<PayoutRequest> i) {
                return Lookup.unknown("the bank answers no lookup");
            }
        };
        // [docs/destinations.md: payouts]
        payouts = ExternalEffect.builder(
                        dsl, "payout", ResultCodec.json(PayoutRequest.class), ResultCodec.utf8(), remote)
                .schema(schema)
                .settledByStatement(StatementSettlement.of(
                        Duration.ofDays(2), // the bank books within two days
                        (PayoutRequest p) -> new StatementSettlement.Amount(p.amount(), p.currency()),
                        StatementReconciliation.Line::entryId)) // the result: the bank's entry id
                .build();
        // [docs/destinations.md: end payouts]
    }

    /** Pays out once per key: a lost answer is settled by the statement, never sent again by time. */
    public RemoteOutcome<String> pay(Scope scope, IdempotencyKey key, PayoutRequest request) {
        return payouts.run(scope, key, Fingerprint.sha256(request.toString()), request);
    }

    /** Each statement, parsed from camt.053 or the bank's CSV, applied once it arrives. */
    public StatementReconciliation.Report apply(StatementReconciliation.Statement statement) {
        return payouts.statements().apply(statement);
    }
}
