/**
 * Not API. The flow layer's claim flow: the protocol of {@code IdempotentTransaction}: claim, work, record, in one transaction or savepoint (docs/claim-protocol.md).
 */
package io.github.idemtx.jooq.internal.flow.claim;
