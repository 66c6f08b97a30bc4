package io.github.idemtx.jooq.outbox;

/** Where an outbox message stands. */
public enum OutboxStatus {
    /** Waiting to be delivered: due now, or after the backoff of a failed attempt. */
    PENDING,
    /** The destination confirmed it; deleted after the relay's retention. */
    DELIVERED,
    /**
     * Kept after its last attempt or a permanent refusal, with its reason ({@link OutboxEntry#lastError()}),
     * until an operator retries or discards it; holds back later messages of its ordering key.
     */
    FAILED,
    /** An operator discarded it: never delivered; deleted after the relay's retention. */
    DISCARDED
}
