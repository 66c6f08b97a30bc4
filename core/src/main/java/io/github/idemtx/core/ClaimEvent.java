package io.github.idemtx.core;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A claim came to be, was settled by an operator, or was forgotten: what {@link
 * IdempotencyListener#claimChanged} is told, with the claim's scope and key (an audit log, a hook
 * when a record is created). A final class rather than a record, so that it can gain what a later
 * version reports without breaking a listener.
 */
public final class ClaimEvent {

    /** What happened to the claim. */
    public enum Kind {
        /**
         * A call recorded a new claim: an {@link Outcome.Executed}, a first {@link Outcome.Rejected},
         * or an external effect's claim committed in flight before its remote call. For a call that
         * joined its caller's transaction the claim becomes visible when that transaction commits.
         */
        CREATED,
        /** An operator recorded the outcome of a claim that needed reconciliation. */
        RESOLVED,
        /** An operator deleted a settled claim: the next call with its key runs again. */
        FORGOTTEN
    }

    private final Kind kind;
    private final String operation;
    private final Scope scope;
    private final IdempotencyKey key;
    private final @Nullable String operator;
    private final @Nullable String reason;

    private ClaimEvent(
            Kind kind,
            String operation,
            Scope scope,
            IdempotencyKey key,
            @Nullable String operator,
            @Nullable String reason) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.operation = Objects.requireNonNull(operation, "operation");
        this.scope = Objects.requireNonNull(scope, "scope");
        this.key = Objects.requireNonNull(key, "key");
        this.operator = operator;
        this.reason = reason;
    }

    /**
     * {@return a new claim recorded by a call}
     *
     * @param operation the call's operation, as {@link CallEvent#operation()} names it
     * @param scope the claim's scope
     * @param key the claim's key
     * @throws NullPointerException if an argument is null
     */
    public static ClaimEvent created(String operation, Scope scope, IdempotencyKey key) {
        return new ClaimEvent(Kind.CREATED, operation, scope, key, null, null);
    }

    /**
     * {@return an operator's action on a claim}
     *
     * @param kind {@link Kind#RESOLVED} or {@link Kind#FORGOTTEN}
     * @param operation what wrote the claim ({@code effect:<name>} or {@code transaction})
     * @param scope the claim's scope
     * @param key the claim's key
     * @param operator who acted
     * @param reason why
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code kind} is {@link Kind#CREATED}
     */
    public static ClaimEvent byOperator(
            Kind kind, String operation, Scope scope, IdempotencyKey key, String operator, String reason) {
        if (kind == Kind.CREATED) {
            throw new IllegalArgumentException("an operator resolves or forgets a claim; calls create them");
        }
        return new ClaimEvent(
                kind,
                operation,
                scope,
                key,
                Objects.requireNonNull(operator, "operator"),
                Objects.requireNonNull(reason, "reason"));
    }

    /** {@return what happened} */
    public Kind kind() {
        return kind;
    }

    /** {@return what wrote the claim: {@code transaction} or {@code effect:<name>}, as call events name it} */
    public String operation() {
        return operation;
    }

    /** {@return the claim's scope} */
    public Scope scope() {
        return scope;
    }

    /** {@return the claim's key} */
    public IdempotencyKey key() {
        return key;
    }

    /** {@return who resolved or forgot it; null for {@link Kind#CREATED}} */
    public @Nullable String operator() {
        return operator;
    }

    /** {@return the operator's reason; null for {@link Kind#CREATED}} */
    public @Nullable String reason() {
        return reason;
    }

    @Override
    public String toString() {
        return "ClaimEvent[" + kind + ", operation=" + operation + ", scope=" + scope.value() + ", key=" + key.value()
                + (operator == null ? "" : ", operator=" + operator + ", reason=" + reason) + "]";
    }
}
