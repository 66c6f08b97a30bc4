package io.github.idemtx.spring.web;

import io.github.idemtx.core.Scope;
import java.util.Objects;

/** Turns a value a resolver found into a {@link Scope}, refusing an invalid one with its source named. */
final class Scopes {

    private Scopes() {}

    /**
     * {@return the scope {@code value} names}
     *
     * @param value what the request carried
     * @param source where it came from, for the refusal, e.g. "the header X-Tenant-Id"
     * @throws InvalidScopeException if {@code value} is not a valid scope
     */
    static Scope of(String value, String source) {
        try {
            return Scope.of(value);
        } catch (IllegalArgumentException e) {
            throw new InvalidScopeException(source, Objects.requireNonNullElse(e.getMessage(), "not a valid scope"));
        }
    }
}
