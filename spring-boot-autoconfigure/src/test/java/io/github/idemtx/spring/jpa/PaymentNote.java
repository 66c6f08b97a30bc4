package io.github.idemtx.spring.jpa;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.util.UUID;

/**
 * A note saved with a payment. Its id is generated in memory, so Hibernate sends its INSERT only
 * when the persistence context flushes, not at {@code save}: the case the flush exists for.
 */
@Entity
@Table(name = "payment_note")
public class PaymentNote {

    @Id
    @GeneratedValue
    private UUID id;

    @Column(nullable = false)
    private String note;

    protected PaymentNote() {}

    public PaymentNote(String note) {
        this.note = note;
    }

    public UUID getId() {
        return id;
    }

    public String getNote() {
        return note;
    }
}
