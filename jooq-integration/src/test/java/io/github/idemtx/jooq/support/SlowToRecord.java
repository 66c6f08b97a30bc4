package io.github.idemtx.jooq.support;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyPolicy;

/** Deterministic, and recorded slowly: the key stays free long enough for a waiting duplicate to take it. */
public final class SlowToRecord extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public SlowToRecord(String message) {
        super(message);
    }

    /** A policy whose record of a {@link SlowToRecord} failure takes 300 ms. */
    public static IdempotencyPolicy.Builder policy() {
        return IdempotencyPolicy.builder().deterministicFailure(SlowToRecord.class, e -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
            }
            return Failure.of(e);
        });
    }
}
