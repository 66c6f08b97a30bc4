package io.github.idemtx.spring;

import io.github.idemtx.http.internal.HttpInternalFixture;
import io.github.idemtx.jooq.internal.JooqInternalFixture;
import io.github.idemtx.keys.internal.KeysInternalFixture;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class SpringUsesOthersInternals {
    String all() {
        return HttpInternalFixture.use() + KeysInternalFixture.use() + JooqInternalFixture.use();
    }

    /** An API that shows an internal type. */
    public HttpInternalFixture shows() {
        return null;
    }
}
