package io.github.idemtx.spring.sample;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.spring.IdempotentTransactions;
import io.github.idemtx.spring.sample.PaymentController.Payment;
import io.github.idemtx.spring.sample.PaymentController.PaymentRequest;
import java.util.Optional;
import org.jooq.DSLContext;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
class PaymentService {

    private final IdempotentTransaction<Payment> idem;
    private final DSLContext dsl;

    PaymentService(IdempotentTransactions transactions, DSLContext dsl) {
        this.idem = transactions.json(Payment.class);
        this.dsl = dsl;
    }

    /** The claim joins this method's transaction; a reference "fail-after" makes the method throw after run. */
    @Transactional
    public Outcome<Payment> pay(Scope scope, IdempotencyKey key, Fingerprint fingerprint, PaymentRequest request) {
        Outcome<Payment> outcome = idem.run(scope, key, fingerprint, tx -> {
            if (request.amountCents() <= 0) {
                throw new Rejection("invalid-amount", "the amount must be positive");
            }
            long id = tx.fetchValue(
                                    "insert into payment (payer, amount_cents, reference) values (?, ?, ?) returning id",
                                    scope.value(),
                                    request.amountCents(),
                                    request.reference())
                            instanceof Number n
                    ? n.longValue()
                    : -1;
            return new Payment(id, scope.value(), request.amountCents(), request.reference());
        });
        if ("fail-after".equals(request.reference())) {
            throw new IllegalStateException("the method failed after run");
        }
        return outcome;
    }

    @Transactional(readOnly = true)
    public Optional<Payment> find(Scope scope, long id) {
        return dsl.resultQuery(
                        "select id, payer, amount_cents, reference from payment where id = ? and payer = ?",
                        id,
                        scope.value())
                .fetchOptional(r -> new Payment(
                        r.get(0, Long.class), r.get(1, String.class), r.get(2, Long.class), r.get(3, String.class)));
    }
}
