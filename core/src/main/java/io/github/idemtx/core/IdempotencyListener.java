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
 *
 * @param <C> what a listener carries from a call's start to its end (a timer sample, an
 *     observation and its scope); {@code Void} when it carries nothing
 */
public interface IdempotencyListener<C extends @Nullable Object> {

    /**
     * A call begins. Whatever this returns is handed back to {@link #callFinished} on the same thread.
     *
     * @param start which call begins
     * @return what to hand to {@link #callFinished}, or null
     */
    default @Nullable C callStarted(CallStart start) {
        return null;
    }

    /**
     * A call ended.
     *
     * @param event what the call did
     * @param context what {@link #callStarted} returned for this call; may be null
     */
    void callFinished(CallEvent event, @Nullable C context);

    /**
     * A purge ended.
     *
     * @param event what the purge did
     */
    default void purged(PurgeEvent event) {}

    /**
     * A claim was created by a call, resolved by an operator or forgotten by one (see {@link
     * ClaimEvent.Kind}); told once the claim is recorded (committed, when the call owns its
     * transaction; for an external effect, when its in-flight claim commits, before the remote call)
     * or the operator's action has committed.
     *
     * @param event which claim, and what happened to it
     */
    default void claimChanged(ClaimEvent event) {}

    /**
     * An {@code IdempotentTransaction} in the adaptive claim mode changed the order of claim and work
     * (a retry storm began or ended); told on the thread of the call that tipped it, and once per
     * change.
     *
     * @param event the new order, and the shares that decided it
     */
    default void claimOrderChanged(ClaimOrderEvent event) {}

    /**
     * An outbox message was delivered, failed an attempt, failed for good, or was retried or discarded
     * by an operator; told by the outbox relay on its own thread after the message's new state has
     * committed, and by the operator's call after the action has.
     *
     * @param event which message, and what happened to it
     */
    default void outboxChanged(OutboxEvent event) {}

    /**
     * The outbox's backlog, as the outbox relay measured it after one of its polls (on the relay's
     * thread).
     *
     * @param backlog pending and failed messages, and the oldest pending one's age
     */
    default void outboxBacklog(OutboxBacklog backlog) {}
}
