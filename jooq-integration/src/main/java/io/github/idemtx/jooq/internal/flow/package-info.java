/**
 * Not API. The flow layer: the protocol of each front door ({@code ClaimFlow} for {@code
 * IdempotentTransaction}, {@code EffectFlow} for {@code ExternalEffect}) over the store and
 * transaction layers, and what a call measures for its listeners. The two flows never depend on
 * each other.
 */
package io.github.idemtx.jooq.internal.flow;
