package io.github.idemtx.spring.docs.effects;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.spring.docs.effects.ChargeEffect.Charge;
import io.github.idemtx.spring.docs.effects.ChargeEffect.ChargeRequest;
import org.springframework.stereotype.Service;

@Service
class CheckoutService {

    private final ExternalEffect<ChargeRequest, Charge> charge;

    CheckoutService(ExternalEffect<ChargeRequest, Charge> charge) {
        this.charge = charge;
    }

    // Not @Transactional, and not called from a transaction: the effect commits its claim before the
    // remote call and its result after it, each in a transaction of its own; inside a Spring
    // transaction it is refused (TransactionOwnershipException) before anything is claimed or sent.
    // Local writes that go with the charge belong in PaymentProvider's before / after / refused.
    public RemoteOutcome<Charge> checkout(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, ChargeRequest request) {
        return charge.run(scope, key, fingerprint, request);
    }
}
