package io.github.idemtx.core;

import org.jspecify.annotations.Nullable;

/**
 * The database cannot serve the claim protocol as it is, so nothing was done: the server is a
 * PostgreSQL older than the oldest this library supports, or the claim table is missing or not
 * migrated to this version of the library. Thrown before anything is written, and again on every
 * call until the database is put right; retrying the same call does not help.
 *
 * <p>The message names what to change: the server to upgrade, or the migrations to apply
 * ({@code IdempotencySchema.migrate(dataSource, schema)}) and the schema the library was pointed at.
 */
public final class UnsupportedDatabaseException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /** What is wrong with the database. */
    public enum Problem {
        /** The server is a PostgreSQL older than the oldest supported version. */
        SERVER_TOO_OLD,
        /** The claim table (or a column or function of it) is not there: the migrations were not applied to the schema used. */
        NOT_MIGRATED
    }

    /** What is wrong with the database. */
    private final Problem problem;

    /**
     * Reports a database the library cannot work with.
     *
     * @param problem what is wrong
     * @param message what was found and what to change
     * @param cause the driver's error that showed it; null when the library found it itself
     * @throws NullPointerException if {@code problem} is null
     */
    public UnsupportedDatabaseException(Problem problem, String message, @Nullable Throwable cause) {
        super(null, null, message, cause);
        this.problem = java.util.Objects.requireNonNull(problem, "problem must not be null");
    }

    /** {@return what is wrong with the database} */
    public Problem problem() {
        return problem;
    }
}
