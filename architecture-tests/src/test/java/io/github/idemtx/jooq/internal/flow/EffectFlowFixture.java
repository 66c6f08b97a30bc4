package io.github.idemtx.jooq.internal.flow;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}: a effect flow that reaches into the
 * claim flow beside it, in the same package. In the test sources only ({@code ArchitectureTest}
 * imports no test class). Not part of the library.
 */
public final class EffectFlowFixture {
    Object sideways() {
        return new ClaimFlowFixture();
    }
}
