package io.github.idemtx.jooq.internal.tx;

import io.github.idemtx.jooq.internal.flow.effect.EffectFlowReachesSideways;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class TxCallsAFlow {
    Object up() {
        return new EffectFlowReachesSideways();
    }
}
