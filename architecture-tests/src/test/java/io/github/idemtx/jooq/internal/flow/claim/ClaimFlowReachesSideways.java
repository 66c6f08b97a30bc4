package io.github.idemtx.jooq.internal.flow.claim;

import io.github.idemtx.jooq.internal.flow.effect.EffectFlowReachesSideways;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class ClaimFlowReachesSideways {
    Object sideways() {
        return new EffectFlowReachesSideways();
    }
}
