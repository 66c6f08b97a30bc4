/**
 * Message consumers: what to do with a message once its idempotent call returned or failed
 * ({@link io.github.idemtx.messaging.Acknowledgement}), with no broker dependency; the consumer maps
 * the decision onto its broker's acknowledge, requeue and dead-letter (docs/message-consumers.md).
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.messaging;

import org.jspecify.annotations.NullMarked;
