package io.github.idemtx.core;

import io.github.idemtx.http.IdempotencyKeyHeader;

/**
 * A deliberate violation for {@code ArchitectureRulesBiteTest}, in the test sources only
 * ({@code ArchitectureTest} imports no test class). Not part of the library.
 */
public final class CoreDependsOnHttp {
    Object key() {
        return IdempotencyKeyHeader.parse("a-key");
    }
}
