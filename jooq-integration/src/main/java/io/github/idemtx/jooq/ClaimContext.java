package io.github.idemtx.jooq;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.util.Objects;
import java.util.Optional;
import org.jooq.DSLContext;

/**
 * The claim whose work a {@code tx} belongs to: the scope and key of the {@link IdempotentTransaction#run}
 * call that handed the work its {@code tx}, or of the {@link ExternalEffect}'s claim whose local
 * writes ({@link Remote.Holding#before}, {@link Remote#after}, {@link Remote#refused}) were handed it. What a work writes beside its business rows uses it to
 * name them after the claim, so that a retry that runs the work again writes the same names: the
 * outbox derives each message's id from it ({@link io.github.idemtx.jooq.outbox.Outbox#add}).
 *
 * <p>It travels in the data of the {@code tx}'s jOOQ {@link org.jooq.Configuration}, which jOOQ copies
 * into every configuration derived from it (a nested {@code tx.transaction(...)} sees it too) and
 * never back into the one it was derived from: the {@code DSLContext} given to {@code run}, and any
 * other, carry none. Immutable.
 */
public final class ClaimContext {

    /** The key of the configuration data it travels under; not API. */
    private static final Object DATA_KEY = new Object() {
        @Override
        public String toString() {
            return "io.github.idemtx.jooq.ClaimContext";
        }
    };

    private final Scope scope;
    private final IdempotencyKey key;

    private ClaimContext(Scope scope, IdempotencyKey key) {
        this.scope = scope;
        this.key = key;
    }

    /**
     * {@return the claim whose work {@code tx} was handed to, or empty when {@code tx} is no work's}
     *
     * @param tx the context a {@link TransactionalWork} was given
     * @throws NullPointerException if {@code tx} is null
     */
    public static Optional<ClaimContext> of(DSLContext tx) {
        Objects.requireNonNull(tx, "tx must not be null");
        return tx.configuration().data(DATA_KEY) instanceof ClaimContext c ? Optional.of(c) : Optional.empty();
    }

    /** Puts the claim into the data of the work's own {@code tx}: called by {@code run} and an effect's local writes only. */
    static void attach(DSLContext tx, Scope scope, IdempotencyKey key) {
        tx.configuration().data(DATA_KEY, new ClaimContext(scope, key));
    }

    /** {@return the claim's scope} */
    public Scope scope() {
        return scope;
    }

    /** {@return the claim's key} */
    public IdempotencyKey key() {
        return key;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ClaimContext c && c.scope.equals(scope) && c.key.equals(key);
    }

    @Override
    public int hashCode() {
        return 31 * scope.hashCode() + key.hashCode();
    }

    @Override
    public String toString() {
        return "ClaimContext[scope=" + scope.value() + ", key=" + key.value() + "]";
    }
}
