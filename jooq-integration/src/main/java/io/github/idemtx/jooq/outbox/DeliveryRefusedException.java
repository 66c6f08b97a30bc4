package io.github.idemtx.jooq.outbox;

/**
 * Thrown by an {@link OutboxTransport} when the destination refused a message for a reason that a
 * retry will not change (an HTTP 4xx such as 400 or 422): the relay keeps the message as failed at
 * once, with this exception's message as its reason, for an operator to retry or discard.
 */
public class DeliveryRefusedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * A refusal with its reason.
     *
     * @param message why the destination refused it, shown to operators
     */
    public DeliveryRefusedException(String message) {
        super(message);
    }

    /**
     * A refusal with its reason and what the transport caught.
     *
     * @param message why the destination refused it, shown to operators
     * @param cause what the transport caught
     */
    public DeliveryRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
