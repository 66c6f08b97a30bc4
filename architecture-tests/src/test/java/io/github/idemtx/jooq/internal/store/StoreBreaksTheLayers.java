package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.jooq.internal.flow.claim.ClaimFlowReachesSideways;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class StoreBreaksTheLayers {
    Object up() {
        return new ClaimFlowReachesSideways();
    }
}
