package io.github.idemtx.spring.jpa;

import java.util.UUID;
import org.springframework.data.jpa.repository.JpaRepository;

public interface PaymentNoteRepository extends JpaRepository<PaymentNote, UUID> {}
