package io.github.idemtx.jooq;

/**
 * Whether {@link IdempotentTransaction#run} runs a transaction of its own or joins the caller's.
 * Set on {@link IdempotentTransaction.Builder#transactionMode}; the default is {@link #DETECT}.
 *
 * <p>The decision is never taken from the connection's state alone (a pool's own test query or
 * init SQL leaves pgjdbc reporting an open transaction that nobody owns, and a framework
 * transaction that has not sent a statement yet looks like none): it comes from this setting and
 * from {@link TransactionDetector}s, which ask the transaction manager itself.
 */
public enum TransactionMode {

    /**
     * Join the caller's transaction when one is open, else run one of its own. Open means: a
     * {@link TransactionDetector} reports one (jOOQ's {@code transaction(...)} context,
     * {@code ThreadLocalTransactionProvider}, and any detector registered on the builder or found
     * through {@link java.util.ServiceLoader}), or the {@code DSLContext} is bound to one connection
     * the caller manages ({@code DSL.using(connection)}) and that connection has auto-commit off.
     * A connection a pool hands out is the library's to commit. Where none of this can tell (a
     * custom {@code ConnectionProvider} whose connection has auto-commit off, or a
     * Spring-managed {@code DSLContext} without Spring's detector), {@code run} throws
     * {@link io.github.idemtx.core.TransactionOwnershipException} before running anything.
     */
    DETECT,

    /**
     * Always a transaction of its own, committed before {@code run} returns. Refused with
     * {@link io.github.idemtx.core.TransactionOwnershipException} when a detector reports a caller's
     * transaction open, or the {@code DSLContext} is bound to a caller's connection with auto-commit
     * off: committing there would split the caller's transaction.
     */
    OWN,

    /**
     * Always the caller's transaction, inside a savepoint; nothing commits before the caller
     * does. Refused with {@link io.github.idemtx.core.TransactionOwnershipException} when a detector
     * reports no transaction open, or the connection is in auto-commit mode (there is nothing to
     * join). Use it for a transaction manager no detector knows, on a {@code DSLContext} whose
     * connection provider returns that transaction's connection.
     */
    JOIN
}
