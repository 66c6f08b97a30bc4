/**
 * Not API. The flow layer: the protocol of each front door, in a package of its own ({@code
 * flow.claim.ClaimFlow} for {@code IdempotentTransaction}, {@code flow.effect.EffectFlow} for {@code
 * ExternalEffect}), over the store and transaction layers; here, what a call measures for its
 * listeners, which both use. The two flows never depend on each other (architecture-tests).
 */
@NullMarked
package io.github.idemtx.jooq.internal.flow;

import org.jspecify.annotations.NullMarked;
