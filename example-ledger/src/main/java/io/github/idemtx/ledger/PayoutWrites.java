package io.github.idemtx.ledger;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.ledger.Payouts.PayoutRequest;
import java.math.BigDecimal;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Record;

/**
 * The ledger's writes around a payout's call, whichever bank takes it: the hold before the call
 * (customer to the bank's clearing account, payout {@code in_flight}), the settlement after an
 * applied answer (clearing to paid_out, payout {@code paid}), the release after a refusal (clearing
 * back to the customer, payout {@code refused}). Each movement is a transfer with two postings
 * ({@link Ledger#payoutMovement}). The call itself (and a lookup, where the bank has one) is the
 * subclass's.
 */
abstract class PayoutWrites implements Remote.Holding<PayoutRequest, String> {

    final String schema;
    final Ledger ledger;
    final String bankName;
    /** The bank's HTTP client, whichever bank. */
    final java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder()
            .connectTimeout(java.time.Duration.ofSeconds(2))
            .build();

    /** @param ledger the books, which announce each paid payout when the ledger has events */
    PayoutWrites(Ledger ledger, String schema, String bankName) {
        this.schema = schema;
        this.ledger = ledger;
        this.bankName = bankName;
    }

    /**
     * What is left of the call's time until {@code deadline} (inside the lease); none left is a
     * timeout before anything is sent.
     */
    static java.time.Duration timeLeft(java.time.Instant deadline) throws java.util.concurrent.TimeoutException {
        java.time.Duration left = java.time.Duration.between(java.time.Instant.now(), deadline);
        if (left.isNegative() || left.isZero()) {
            throw new java.util.concurrent.TimeoutException("no time left before the lease ends");
        }
        return left;
    }

    @Override
    public void before(DSLContext tx, Intent<PayoutRequest> intent) {
        PayoutRequest r = intent.request();
        Record account = tx.resultQuery(
                        "UPDATE " + schema
                                + ".account SET balance = balance - ?::numeric WHERE id = ? AND tenant = ?"
                                + " AND kind = 'customer' AND balance >= ?::numeric RETURNING currency",
                        r.amount(),
                        r.account(),
                        intent.scope().value(),
                        r.amount())
                .fetchOne();
        if (account == null) {
            boolean exists = tx.resultQuery(
                            "SELECT 1 FROM " + schema + ".account WHERE id = ? AND tenant = ?"
                                    + " AND kind = 'customer'",
                            r.account(),
                            intent.scope().value())
                    .fetchOptional()
                    .isPresent();
            throw exists
                    ? new Rejection(
                            "insufficient_funds",
                            "account " + r.account() + " cannot pay out "
                                    + r.amount().toPlainString())
                    : new Rejection("account_not_found", "account " + r.account() + " does not exist");
        }
        String tenant = intent.scope().value();
        String currency = account.get(0, String.class);
        UUID payout = Payouts.payoutId(intent);
        tx.execute(
                "INSERT INTO " + schema
                        + ".payout (id, tenant, account_id, amount, currency, destination, idem_key, state, bank)"
                        + " VALUES (?, ?, ?, ?, ?, ?, ?, 'in_flight', ?)",
                payout,
                tenant,
                r.account(),
                r.amount(),
                currency,
                r.destination(),
                intent.key().value(),
                bankName);
        // the hold: customer (debited above) -> the bank's clearing account
        UUID clearing = ledger.bankAccount(tx, tenant, currency, bankName, "clearing");
        ledger.adjust(tx, clearing, r.amount());
        ledger.payoutMovement(tx, tenant, "hold", payout, r.account(), clearing, r.amount(), currency);
    }

    @Override
    public void after(DSLContext tx, Intent<PayoutRequest> intent, String chargeId) {
        // the key's one payout in flight (payout_in_flight_idx), whichever claim's id it has: also
        // one made before V4, whose id came from the key alone
        Record settled = tx.resultQuery(
                        "UPDATE " + schema + ".payout SET state = 'paid', charge_id = ?, settled_at = now()"
                                + " WHERE tenant = ? AND idem_key = ? AND state = 'in_flight'"
                                + " RETURNING tenant, currency, amount, bank, id, account_id",
                        chargeId,
                        intent.scope().value(),
                        intent.key().value())
                .fetchOne();
        if (settled == null) {
            throw new IllegalStateException("payout " + Payouts.payoutId(intent) + " was not in flight");
        }
        UUID payout = settled.get(4, UUID.class);
        // the settlement: the bank's clearing account -> its paid_out account
        String tenant = settled.get(0, String.class);
        String currency = settled.get(1, String.class);
        BigDecimal amount = settled.get(2, BigDecimal.class);
        String at = settled.get(3, String.class);
        UUID clearing = ledger.bankAccount(tx, tenant, currency, at, "clearing");
        UUID paidOut = ledger.bankAccount(tx, tenant, currency, at, "paid_out");
        ledger.adjust(tx, clearing, amount.negate());
        ledger.adjust(tx, paidOut, amount);
        ledger.payoutMovement(tx, tenant, "settle", payout, clearing, paidOut, amount, currency);
        // its event commits with the record of the bank's answer (the claim's outbox message)
        ledger.announcePayout(tx, payout, settled.get(5, UUID.class), amount, currency, chargeId);
    }

    @Override
    public void refused(DSLContext tx, Intent<PayoutRequest> intent, Failure failure) {
        Record released = tx.resultQuery(
                        "UPDATE " + schema + ".payout SET state = 'refused', settled_at = now()"
                                + " WHERE tenant = ? AND idem_key = ? AND state = 'in_flight'"
                                + " RETURNING tenant, currency, amount, bank, account_id, id",
                        intent.scope().value(),
                        intent.key().value())
                .fetchOne();
        if (released == null) {
            return; // released before
        }
        UUID payout = released.get(5, UUID.class);
        // the release: the bank's clearing account -> back to the customer
        String tenant = released.get(0, String.class);
        String currency = released.get(1, String.class);
        BigDecimal amount = released.get(2, BigDecimal.class);
        UUID customer = released.get(4, UUID.class);
        UUID clearing = ledger.bankAccount(tx, tenant, currency, released.get(3, String.class), "clearing");
        ledger.adjust(tx, customer, amount); // customer first: the lock order of Ledger#adjust
        ledger.adjust(tx, clearing, amount.negate());
        ledger.payoutMovement(tx, tenant, "release", payout, clearing, customer, amount, currency);
    }
}
