package io.github.idemtx.jooq;

import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

/**
 * The business write of an idempotent call, run inside the one transaction that also holds the
 * claim and the recorded result.
 *
 * <p>Contract: every write must go through {@code tx}; writes through any other connection, and
 * calls to other services, are not covered by the transaction. The work may run more than once
 * when the database reports a serialization failure or a deadlock (each run's writes are rolled
 * back before the next), so it must not keep state outside {@code tx} between runs.
 *
 * <ul>
 *   <li>Returning normally commits the work's writes together with the claim and the encoded result.
 *   <li>Throwing a {@link io.github.idemtx.core.Rejection}, or an exception the policy calls
 *       deterministic, rolls the writes back but records the failure for replays.
 *   <li>Throwing anything else rolls everything back and releases the key; the exception reaches
 *       the caller ({@link RuntimeException}s unchanged, checked ones wrapped once in
 *       {@link io.github.idemtx.core.WorkFailedException}).
 * </ul>
 *
 * <p>Nested {@code tx.transaction(...)} calls inside the work become savepoints of the one
 * transaction; they never commit it.
 *
 * <p>The work must not end the transaction it was handed. {@code tx}'s connection refuses
 * {@code commit()}, {@code rollback()}, {@code setAutoCommit(true)}, {@code close()} and
 * {@code abort()}, and statements that start with {@code COMMIT}, {@code END}, {@code ROLLBACK}
 * ({@code ROLLBACK TO SAVEPOINT} is fine), {@code ABORT} or {@code PREPARE TRANSACTION}, each with
 * an {@link java.sql.SQLException} of SQLSTATE 2D000 before it reaches the database; and after the
 * work the library checks, client-side, that its transaction is still the one open. Either way
 * the call throws {@link io.github.idemtx.core.WorkEndedTransactionException} (whatever the work
 * did with the SQLException, and whatever it returned or threw): nothing is recorded, the rest is
 * rolled back and the key stays free. A repository method that commits (a legacy DAO, a
 * {@code JdbcTemplate} on an auto-commit pool) must write through {@code tx}'s connection instead,
 * or run outside the work.
 *
 * @param <T> the type of the result
 */
@FunctionalInterface
public interface TransactionalWork<T> {

    /**
     * Performs the business write.
     *
     * @param tx the transaction's context; valid only during this call
     * @return the result to record and return; may be null
     * @throws Exception to fail the call: recorded if the policy calls it deterministic, else the
     *     call is rolled back and the exception reaches the caller
     */
    @Nullable
    T execute(DSLContext tx) throws Exception;
}
