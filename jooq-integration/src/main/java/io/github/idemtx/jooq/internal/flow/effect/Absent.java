package io.github.idemtx.jooq.internal.flow.effect;

/**
 * What a lookup's "absent" means: the remote promises read-after-write ({@code ExternalEffect.Builder
 * .readAfterWrite(true)}), or its index may lag its writes.
 */
public enum Absent {
    /** Nothing applied it: safe to send again with the same downstream key. */
    NOT_APPLIED,
    /** The remote's index may lag its writes: absent is as good as no answer. */
    UNKNOWN
}
