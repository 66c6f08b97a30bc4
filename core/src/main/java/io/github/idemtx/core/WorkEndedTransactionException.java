package io.github.idemtx.core;

import org.jspecify.annotations.Nullable;

/**
 * The work (or an external effect's local writes) tried to end the transaction it was handed: a
 * {@code Connection.commit()}, {@code rollback()}, {@code setAutoCommit(true)} or {@code close()}
 * on {@code tx}'s connection, or a {@code COMMIT}/{@code ROLLBACK}/{@code END}/{@code ABORT}/
 * {@code PREPARE TRANSACTION} statement through {@code tx}. The claim, the work and its result
 * must commit together, so nothing is recorded for the key and the call is rolled back: the key is
 * free and a retry runs the work again.
 *
 * <p>{@link #committedByWork()} says whether anything reached the database outside the claim: when
 * the library stopped the attempt before it went out (the usual case) nothing did; when a statement
 * it could not see in advance ended the transaction (a multi-statement string, say) the work's
 * writes before it may have committed on their own, and the message says so. Fix the work: let the
 * library commit, and write only through {@code tx}.
 */
public final class WorkEndedTransactionException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /** What the work did. */
    private final String attempted;
    /** Whether the transaction did end before the library saw it. */
    private final boolean committedByWork;

    /**
     * Reports work that ended its transaction, or tried to.
     *
     * @param scope the call's scope
     * @param key the call's key
     * @param attempted what the work did, e.g. {@code "Connection.commit()"}
     * @param committedByWork whether the transaction did end (the work's writes before it may have
     *     committed without the claim) rather than being stopped in time
     * @param cause what stopped it or showed it, or null
     */
    public WorkEndedTransactionException(
            Scope scope, IdempotencyKey key, String attempted, boolean committedByWork, @Nullable Throwable cause) {
        super(scope, key, message(attempted, committedByWork), cause);
        this.attempted = attempted;
        this.committedByWork = committedByWork;
    }

    private static String message(String attempted, boolean committedByWork) {
        return "the work must not end the transaction that holds the idempotency claim, but it called " + attempted
                + (committedByWork
                        ? ": that ended the transaction, so what the work wrote before it may have committed without"
                                + " any claim; nothing was recorded for the key, and the rest was rolled back"
                        : ": refused before it reached the database; nothing was committed and the key is free")
                + ". Let the library commit, and write only through tx";
    }

    /** {@return what the work did, e.g. {@code "Connection.commit()"} or {@code "the statement 'commit'"}} */
    public String attempted() {
        return attempted;
    }

    /** {@return whether the transaction did end before the library saw it, so the work's earlier writes may have committed} */
    public boolean committedByWork() {
        return committedByWork;
    }
}
