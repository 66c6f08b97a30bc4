package io.github.idemtx.jooq.internal.flow.claim;

import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.jooq.TransactionalWork;
import io.github.idemtx.jooq.internal.tx.Boundary;
import io.github.idemtx.jooq.internal.tx.WorkGuard;
import java.sql.Connection;
import org.jooq.Configuration;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * A call's work, run on a guarded {@code tx}: checked, client-side, to have left its transaction
 * the one the attempt began, and followed by a flush of the writes the caller's framework holds in
 * memory (joined calls), so that what follows undoes or keeps them with the rest.
 */
final class GuardedWork {

    private GuardedWork() {}

    /**
     * Runs {@code work}, the work of {@code call}, on a {@code tx} derived from {@code configuration}.
     *
     * @param openBefore whether a statement or savepoint opened the transaction before the work
     * @throws WorkEndedTransactionException when the work tried to end, or ended, its transaction
     *     (with whatever the work threw as its cause)
     * @throws FlushFailedException when the work threw and the flush after it failed too
     */
    static <T> @Nullable T run(
            Configuration configuration,
            TransactionalWork<T> work,
            ClaimFlow.Call call,
            Connection connection,
            Boundary boundary,
            boolean openBefore)
            throws Exception {
        WorkGuard guard = new WorkGuard(connection, openBefore || boundary.joined());
        T value;
        try {
            value = work.execute(guard.context(configuration));
        } catch (Exception e) {
            WorkEndedTransactionException refused = guard.refusal(call.scope(), call.key(), e);
            if (refused != null) {
                throw refused;
            }
            flushAfterFailure(boundary, e);
            throw e;
        }
        guard.check(call.scope(), call.key());
        boundary.flush(); // what it throws (a constraint the pending writes meet) is the work's failure
        return value;
    }

    /**
     * After the work threw: what the caller's framework still holds in memory is pushed out, so the
     * rollback to the savepoint undoes it; when that fails, the failure cannot be answered as a
     * recorded rejection (those writes would commit later with the caller), so it is thrown.
     */
    private static void flushAfterFailure(Boundary boundary, Exception e) throws Exception {
        try {
            boundary.flush();
        } catch (RuntimeException flushFailed) {
            flushFailed.addSuppressed(e);
            throw new FlushFailedException(flushFailed);
        }
    }

    /** A joined call's flush failed after the work threw: never recorded as the work's deterministic failure. */
    static final class FlushFailedException extends DataAccessException {
        private static final long serialVersionUID = 1L;

        FlushFailedException(RuntimeException cause) {
            super(
                    "the work failed, and flushing the caller's transaction's pending writes (so that they are rolled"
                            + " back with the work's) failed too: " + cause.getMessage(),
                    cause);
        }
    }
}
