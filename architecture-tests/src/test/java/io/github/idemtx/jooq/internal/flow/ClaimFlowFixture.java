package io.github.idemtx.jooq.internal.flow;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}: a claim flow that reaches into the
 * effect flow beside it, in the same package. In the test sources only ({@code ArchitectureTest}
 * imports no test class). Not part of the library.
 */
public final class ClaimFlowFixture {
    Object sideways() {
        return new EffectFlowFixture();
    }
}
