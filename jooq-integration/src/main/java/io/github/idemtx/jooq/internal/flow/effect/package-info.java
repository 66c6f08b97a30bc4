/**
 * Not API. The flow layer's effect flow: the protocol of {@code ExternalEffect} (docs/claim-protocol.md,
 * "External effects"), split along its lifecycle: {@code Claiming} (the claim committed in flight, or
 * the row there answered, waited on or taken over), {@code Calling} (the remote call outside any
 * transaction, or a takeover's lookup first), {@code Recording} and {@code LateAnswers} (the fenced or
 * late record), {@code Releasing} (unknown, or to an operator), {@code Recovering} (the recoverer);
 * {@code Lifecycle} decides between the store's {@code EffectTransition}s, {@code ShortTransactions}
 * runs them, and {@code EffectFlow} is the door {@code ExternalEffect} and {@code ClaimAdmin} call.
 */
@NullMarked
package io.github.idemtx.jooq.internal.flow.effect;

import org.jspecify.annotations.NullMarked;
