package io.github.idemtx.core;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A call that begins, as {@link IdempotencyListener#callStarted} is told of it. A final class, so
 * that it can carry more in a later version without breaking a listener. Like {@link CallEvent}, it
 * carries no key or fingerprint, and its {@link #toString} leaves the scope out.
 */
public final class CallStart {

    private final String operation;
    private final @Nullable Scope scope;

    private CallStart(String operation, @Nullable Scope scope) {
        this.operation = operation;
        this.scope = scope;
    }

    /**
     * {@return a call that begins}
     *
     * @param operation {@code "transaction"}, or {@code "effect:<name>"}
     * @param scope whose call it is, or null
     * @throws NullPointerException if {@code operation} is null
     */
    public static CallStart of(String operation, @Nullable Scope scope) {
        return new CallStart(Objects.requireNonNull(operation, "operation"), scope);
    }

    /** {@return {@code "transaction"} for {@code IdempotentTransaction}, {@code "effect:<name>"} for an {@code ExternalEffect}} */
    public String operation() {
        return operation;
    }

    /** {@return whose call it is (unbounded: not a metric tag unless mapped on purpose); null for none} */
    public @Nullable Scope scope() {
        return scope;
    }

    @Override
    public String toString() {
        return "CallStart[operation=" + operation + "]";
    }
}
