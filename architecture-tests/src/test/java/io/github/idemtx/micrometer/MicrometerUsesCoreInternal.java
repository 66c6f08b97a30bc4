package io.github.idemtx.micrometer;

import io.github.idemtx.core.internal.CoreInternalFixture;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class MicrometerUsesCoreInternal {
    String use() {
        return CoreInternalFixture.use();
    }
}
