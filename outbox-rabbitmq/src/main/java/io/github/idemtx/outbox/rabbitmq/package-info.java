/** {@link io.github.idemtx.outbox.rabbitmq.RabbitMqOutboxTransport}: the outbox relay's way to RabbitMQ. */
@NullMarked
package io.github.idemtx.outbox.rabbitmq;

import org.jspecify.annotations.NullMarked;
