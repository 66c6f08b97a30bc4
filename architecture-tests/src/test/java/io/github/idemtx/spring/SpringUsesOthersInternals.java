package io.github.idemtx.spring;

import io.github.idemtx.http.internal.JsonDepth;
import io.github.idemtx.keys.internal.DerivedText;
import io.github.idemtx.jooq.internal.store.SqlStates;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class SpringUsesOthersInternals {
    int depth(String json) {
        return JsonDepth.of(json);
    }

    Class<?> others() {
        return DerivedText.class == null ? SqlStates.class : DerivedText.class;
    }

    /** An API that shows an internal type. */
    public JsonDepth shows() {
        return null;
    }
}
