package io.github.idemtx.jooq;

import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.util.Objects;

/**
 * An operator's action that {@link ClaimAdmin} refused, before anything was written: the message
 * says what the claim is and what would be allowed. {@link #reason()} tells programs (an HTTP
 * endpoint: 404, 409, 400) the cases apart.
 */
public final class ClaimAdminException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /** Why the action was refused. */
    public enum Reason {
        /** There is no claim for the scope and key (never made, purged, or forgotten). */
        NOT_FOUND,
        /** The claim's state does not allow the action (resolving a completed claim, forgetting one in flight). */
        WRONG_STATE,
        /** The claim was written by an effect this {@link ClaimAdmin} was not given, so it cannot record its outcome. */
        UNKNOWN_EFFECT,
        /** What the operator gave does not fit (an answer the effect's codec cannot read). */
        BAD_INPUT
    }

    /** Why the action was refused. */
    private final Reason reason;

    /**
     * Creates the exception.
     *
     * @param reason why the action was refused
     * @param scope the claim's scope
     * @param key the claim's key
     * @param message what is wrong and what would be allowed
     * @throws NullPointerException if {@code reason} is null
     */
    public ClaimAdminException(Reason reason, Scope scope, IdempotencyKey key, String message) {
        super(scope, key, message, null);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** {@return why the action was refused} */
    public Reason reason() {
        return reason;
    }
}
