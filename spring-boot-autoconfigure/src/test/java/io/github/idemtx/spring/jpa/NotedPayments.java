package io.github.idemtx.spring.jpa;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.spring.IdempotentTransactions;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * A payment written two ways in one work, as an application mixing jOOQ and JPA writes it: the
 * payment row through the work's {@code tx}, a note through a Spring Data repository.
 */
@Service
public class NotedPayments {

    /** What a call is asked to do besides the two writes. */
    public enum Then {
        /** return the payment's id */
        RETURN,
        /** throw a {@link Rejection} after both writes */
        REJECT,
        /** return, and then fail the caller's method after {@code run} */
        FAIL_AFTER_RUN,
        /** throw an exception the policy does not call deterministic, after both writes */
        THROW
    }

    private final IdempotentTransaction<String> idem;
    private final PaymentNoteRepository notes;

    public NotedPayments(IdempotentTransactions transactions, PaymentNoteRepository notes) {
        this.idem = transactions.strings();
        this.notes = notes;
    }

    /** The payment's reference and the work's note are {@code reference}; the id is the result. */
    @Transactional
    public Outcome<String> pay(Scope scope, IdempotencyKey key, Fingerprint fingerprint, String reference, Then then) {
        Outcome<String> outcome = idem.run(scope, key, fingerprint, tx -> {
            Object id = tx.fetchValue(
                    "insert into payment (payer, amount_cents, reference) values (?, ?, ?) returning id",
                    scope.value(),
                    100L,
                    reference);
            notes.save(new PaymentNote(reference));
            if (then == Then.REJECT) {
                throw new Rejection("declined", "the payment was declined");
            }
            if (then == Then.THROW) {
                throw new IllegalStateException("the work failed");
            }
            return String.valueOf(id);
        });
        if (then == Then.FAIL_AFTER_RUN) {
            throw new IllegalStateException("the caller failed after run");
        }
        return outcome;
    }

    /** A note saved, still pending, in a read-only transaction; then the call as {@link #pay}. */
    @Transactional(readOnly = true)
    public Outcome<String> noteThenPayReadOnly(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, String callersNote, String reference) {
        notes.save(new PaymentNote(callersNote));
        return pay(scope, key, fingerprint, reference, Then.RETURN);
    }

    /** The payment through {@code tx} and a note with the given text through JPA. */
    @Transactional
    public Outcome<String> payWithNote(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, String reference, String note) {
        return idem.run(scope, key, fingerprint, tx -> {
            Object id = tx.fetchValue(
                    "insert into payment (payer, amount_cents, reference) values (?, ?, ?) returning id",
                    scope.value(),
                    100L,
                    reference);
            notes.save(new PaymentNote(note));
            return String.valueOf(id);
        });
    }

    /**
     * The caller saves a note of its own before {@code run}, still pending in the persistence
     * context when the call begins; then the call as {@link #pay}.
     */
    @Transactional
    public Outcome<String> noteThenPay(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, String callersNote, String reference, Then then) {
        notes.save(new PaymentNote(callersNote));
        return pay(scope, key, fingerprint, reference, then);
    }

    /**
     * The call as {@link #pay}; the caller catches what {@code run} throws, saves a note of its own
     * afterwards and commits. Returns the message of what it caught, or null.
     */
    @Transactional
    public String payCatchingFailureThenNote(
            Scope scope, IdempotencyKey key, Fingerprint fingerprint, String reference, Then then, String callersNote) {
        String caught = null;
        try {
            pay(scope, key, fingerprint, reference, then);
        } catch (RuntimeException e) {
            caught = e.getMessage();
        }
        notes.save(new PaymentNote(callersNote));
        return caught;
    }
}
