/**
 * Not API. The flow layer's claim flow: the protocol of {@code IdempotentTransaction}: claim, work, record, in one transaction or savepoint (docs/claim-protocol.md).
 */
@NullMarked
package io.github.idemtx.jooq.internal.flow.claim;

import org.jspecify.annotations.NullMarked;
