package io.github.idemtx.spring.docs.payments;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.docs.payments.PaymentController.Payment;
import io.github.idemtx.spring.docs.payments.PaymentController.PaymentRequest;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
class PaymentService {

    private final IdempotentTransaction<Payment> idem;

    PaymentService(IdempotentTransactions transactions) {
        this.idem = transactions.json(Payment.class); // results stored through the application's JsonMapper
    }

    // run joins this transaction: the claim, the payment and the recorded result commit together, and
    // a throw after run rolls them all back. (An ExternalEffect is refused here: see below.)
    @Transactional
    public Outcome<Payment> pay(Scope scope, IdempotencyKey key, Fingerprint fingerprint, PaymentRequest request) {
        return idem.run(scope, key, fingerprint, tx -> {
            if (request.amountCents() <= 0) {
                throw new Rejection("invalid-amount", "the amount must be positive"); // recorded, replayed
            }
            long id = tx.insertInto(table("payment"), field("payer"), field("amount_cents"), field("reference"))
                    .values(scope.value(), request.amountCents(), request.reference())
                    .returningResult(field("id", Long.class))
                    .fetchSingle()
                    .value1();
            return new Payment(id, request.amountCents(), request.reference());
        });
    }
}
