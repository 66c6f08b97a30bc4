/**
 * The transactional outbox: {@link io.github.idemtx.jooq.outbox.Outbox#add} writes a message inside an
 * {@code IdempotentTransaction}'s work, so that it exists exactly when the claim and the business
 * write commit, under an id derived from the claim; {@link io.github.idemtx.jooq.outbox.OutboxRelay}
 * delivers it afterwards through an {@link io.github.idemtx.jooq.outbox.OutboxTransport}, at least once.
 * See docs/outbox.md.
 */
@NullMarked
package io.github.idemtx.jooq.outbox;

import org.jspecify.annotations.NullMarked;
