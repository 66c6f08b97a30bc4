package io.github.idemtx.spring.web;

import io.github.idemtx.core.Scope;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/** {@link IdempotencyScopeResolver#unconfigured()}: refuses, naming the fix, and logs it once. */
final class UnconfiguredScopeResolver implements IdempotencyScopeResolver {

    static final UnconfiguredScopeResolver INSTANCE = new UnconfiguredScopeResolver();

    private static final Log LOG = LogFactory.getLog(IdempotencyScopeResolver.class);

    private final AtomicBoolean logged = new AtomicBoolean();

    private UnconfiguredScopeResolver() {}

    @Override
    public Optional<Scope> resolve(HttpServletRequest request) {
        ScopeNotConfiguredException refusal = new ScopeNotConfiguredException();
        if (logged.compareAndSet(false, true)) {
            LOG.error("idemtx: " + refusal.getMessage() + " (logged once; every such request is answered 500)");
        }
        throw refusal;
    }

    @Override
    public String toString() {
        return "no scope resolver (IdempotencyScopeResolver.unconfigured())";
    }
}
