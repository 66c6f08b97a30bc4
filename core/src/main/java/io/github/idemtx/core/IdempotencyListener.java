package io.github.idemtx.core;

import org.jspecify.annotations.Nullable;

/**
 * Told what the library did: one {@link CallEvent} per call (every outcome, every exception the
 * contract names, where the time went) and one {@link PurgeEvent} per purge. Set listeners on the
 * builder of {@code IdempotentTransaction} or {@code ExternalEffect}; there are none by default, and
 * then nothing is measured. The Micrometer module turns events into metrics and traces.
 *
 * <p>Listeners are called on the caller's thread, after the call's outcome is settled (and, when it
 * owns its transaction, committed); they must be quick and thread-safe. A listener that throws never
 * changes an outcome: the exception is logged ({@code System.Logger} "io.github.idemtx") and ignored.
 */
public interface IdempotencyListener {

    /**
     * A call begins. Whatever this returns is handed back to {@link #callFinished} on the same thread
     * (a timer sample, an observation and its scope); null when there is nothing to carry.
     *
     * @param operation {@code "transaction"} for {@code IdempotentTransaction}, {@code "effect:<name>"}
     *     for an {@code ExternalEffect}
     * @return what to hand to {@link #callFinished}, or null
     */
    default @Nullable Object callStarted(String operation) {
        return null;
    }

    /**
     * A call ended.
     *
     * @param event what the call did
     * @param started what {@link #callStarted} returned for this call; may be null
     */
    void callFinished(CallEvent event, @Nullable Object started);

    /**
     * A purge ended.
     *
     * @param event what the purge did
     */
    default void purged(PurgeEvent event) {}
}
