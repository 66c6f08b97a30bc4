package io.github.idemtx.jooq;

import org.jooq.Configuration;

/**
 * Asks a transaction manager whether it has a transaction open that {@link IdempotentTransaction#run}
 * must join. The library ships one for jOOQ's own transaction styles; a framework integration adds
 * its own (the Spring module asks Spring's transaction synchronization), either on
 * {@link IdempotentTransaction.Builder#detector} or as a {@link java.util.ServiceLoader} service
 * ({@code META-INF/services/io.github.idemtx.jooq.TransactionDetector}), which every builder finds.
 *
 * <p>Detectors are asked in order (those set on the builder, those found on the class path, then
 * jOOQ's); the first answer other than {@link Detection#UNKNOWN} decides. Implementations must be
 * thread-safe, cheap (they are asked on every call, before a connection is taken) and must not
 * run SQL.
 */
@FunctionalInterface
public interface TransactionDetector {

    /**
     * What this detector's transaction manager knows about {@code configuration} on the calling
     * thread.
     *
     * @param configuration the configuration of the {@code DSLContext} the instance was built with
     * @return never null
     */
    Detection detect(Configuration configuration);

    /**
     * Pushes to the database the writes this manager's transaction still holds in memory (a JPA
     * persistence context's pending inserts, say), so that the library undoes or keeps them together
     * with the work's. Called only for a call that joined a transaction this detector reported
     * {@link Detection#ACTIVE}: before the library sets its savepoint (so the caller's own pending
     * writes land outside it and no undo of the call's reaches them), and again after the work
     * returned, or threw, before the library rolls back to its savepoint (so a recorded rejection
     * never leaves one of the work's writes to commit later with the caller). What it throws fails
     * the call; after a work that threw, the call then fails with it rather than record a
     * rejection. The default flushes nothing.
     *
     * @param configuration the configuration of the {@code DSLContext} the instance was built with
     */
    default void flush(Configuration configuration) {}

    /** A detector's answer. */
    enum Detection {
        /** A transaction of this manager is open: {@code run} joins it (the configuration's connection provider must return its connection). */
        ACTIVE,
        /** This manager is in charge of the configuration and has no transaction open: {@code run} owns one. */
        NONE,
        /** This manager does not manage the configuration; ask the next detector. */
        UNKNOWN
    }
}
