/**
 * Not API. The flow layer's effect flow: the protocol of {@code ExternalEffect}: the claim committed in flight, the remote call outside any transaction, the fenced record; takeovers, lookups, recovery and reconciliation (docs/claim-protocol.md, "External effects").
 */
@NullMarked
package io.github.idemtx.jooq.internal.flow.effect;

import org.jspecify.annotations.NullMarked;
