package io.github.idemtx.jooq.outbox;

/**
 * Delivers one outbox message to its destination: the relay's way out. Implementations here: {@link
 * HttpOutboxTransport} (a 2xx answer is a delivery) and, in the {@code idemtx-outbox-rabbitmq} module,
 * {@code RabbitMqOutboxTransport} (the broker's publisher confirm is).
 *
 * <p>Contract: return normally only once the destination has confirmed that it has the message; the
 * relay then marks it delivered. Throw when it did not, or may not have: the relay keeps the message
 * pending with the exception as its reason and tries again after a backoff, or keeps it as failed
 * after its last attempt, or at once for a {@link DeliveryRefusedException}. Delivery is at least
 * once: the same message (same {@link OutboxDelivery#messageId()}) may be sent again after a timeout,
 * a relay that died before marking it, or a lease that passed, so the destination or its consumers
 * deduplicate by the id. A transport is called by one relay thread at a time per relay; one shared by
 * several relays must be thread-safe.
 */
@FunctionalInterface
public interface OutboxTransport {

    /**
     * Sends the message and waits for the destination's confirmation.
     *
     * @param delivery the message, with its id and attempt
     * @throws DeliveryRefusedException if the destination refused it for a reason a retry will not
     *     change: kept as failed at once
     * @throws Exception if it was not confirmed: tried again after a backoff
     */
    void send(OutboxDelivery delivery) throws Exception;
}
