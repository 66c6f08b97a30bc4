package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.jooq.internal.flow.claim.ClaimFlowReachesSideways;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class EffectFlowReachesSideways {
    Object sideways() {
        return new ClaimFlowReachesSideways();
    }
}
