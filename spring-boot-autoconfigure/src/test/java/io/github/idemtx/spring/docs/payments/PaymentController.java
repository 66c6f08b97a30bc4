package io.github.idemtx.spring.docs.payments;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.spring.web.IdempotentResponseEntities;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

@RestController
class PaymentController {

    record PaymentRequest(long amountCents, String reference) {}

    record Payment(long id, long amountCents, String reference) {}

    private final PaymentService payments;

    PaymentController(PaymentService payments) {
        this.payments = payments;
    }

    // scope: from the IdempotencyScopeResolver (with Spring Security, the principal's name; none: 401)
    // key: the Idempotency-Key header (missing or malformed: 400); fingerprint: method, path, query, body
    @PostMapping("/payments")
    ResponseEntity<Object> pay(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, @RequestBody PaymentRequest request) {
        // 201 with the payment; on a retry the same, with Idempotent-Replayed: true; 409, 422 problem details
        return IdempotentResponseEntities.of(payments.pay(scope, key, fingerprint, request), HttpStatus.CREATED);
    }
}
