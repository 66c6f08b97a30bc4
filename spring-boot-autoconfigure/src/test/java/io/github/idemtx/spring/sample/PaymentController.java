package io.github.idemtx.spring.sample;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.spring.web.IdempotentResponseEntities;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

@RestController
class PaymentController {

    private final PaymentService payments;

    PaymentController(PaymentService payments) {
        this.payments = payments;
    }

    @PostMapping("/payments")
    ResponseEntity<Object> pay(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, @RequestBody PaymentRequest request) {
        return IdempotentResponseEntities.of(payments.pay(scope, key, fingerprint, request), HttpStatus.CREATED);
    }

    @GetMapping("/payments/{id}")
    ResponseEntity<Payment> get(Scope scope, @PathVariable("id") long id) {
        return ResponseEntity.of(payments.find(scope, id));
    }

    record PaymentRequest(long amountCents, String reference) {}

    record Payment(long id, String payer, long amountCents, String reference) {}
}
