package io.github.idemtx.jooq.internal.flow.claim;

import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.tx.Boundary;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import java.sql.Connection;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * How an attempt of {@link ClaimFlow} ends its {@link Boundary}, keeping or discarding its writes,
 * and what a failed statement of a transaction of the call's own answers when its connection is gone.
 */
final class BoundaryEndings {

    private BoundaryEndings() {}

    /**
     * Ends a boundary whose writes are not kept, before an answer that does not depend on them (a
     * stored answer, InProgress). In a transaction of its own a rollback that fails has lost
     * nothing: the server drops an uncommitted transaction with its connection, which the pool then
     * discards; so the answer stands. A savepoint that cannot be rolled back leaves the caller's
     * transaction broken, which the caller must hear.
     */
    static void discard(Boundary boundary) {
        if (boundary.joined()) {
            boundary.abandon();
        } else {
            boundary.undoWork(); // its failure, if any, changes no answer
        }
    }

    /** Ends the boundary keeping its writes; a connection lost while a COMMIT was in flight is reported as such. */
    static void keep(Connection connection, Boundary boundary, ClaimFlow.Call call) {
        try {
            boundary.keep();
        } catch (DataAccessException e) {
            if (boundary.joined() && SqlStates.has(e, SqlStates.NO_SUCH_SAVEPOINT)) {
                // only an end of the caller's transaction since the call began removes its savepoint
                throw new WorkEndedTransactionException(
                        call.scope(),
                        call.key(),
                        "a COMMIT or ROLLBACK past the guard (the call's savepoint in the caller's transaction is gone)",
                        true,
                        e);
            }
            RuntimeException lost = boundary.joined() ? null : lostConnection(connection, call, e, "the COMMIT");
            throw lost != null ? lost : e;
        }
    }

    /**
     * What a failed statement of a transaction of the call's own answers when its connection is
     * gone: {@link io.github.idemtx.core.CommitOutcomeUnknownException} when a COMMIT was in flight
     * ({@link SqlStates#isCommitInDoubt}: the retry replays or runs once); otherwise a
     * DataAccessException saying that nothing of the call committed: the connection was found closed
     * before {@code what} was sent (pgjdbc's 08003, or a pool's closed connection, which HikariCP
     * reports with no SQLSTATE: lost under the work, which went on, or discarded by the pool), or the
     * server failed {@code what} with an ordinary error first. Null when the connection is not lost.
     * Never for a statement after a COMMIT that went out: it would say nothing committed.
     */
    static @Nullable RuntimeException lostConnection(
            Connection connection, ClaimFlow.Call call, Exception e, String what) {
        if (SqlStates.isCommitInDoubt(e)) {
            return SqlStates.commitUnknown(call.scope(), call.key(), e);
        }
        String state = SqlStates.state(e);
        boolean closed = Jdbc.isClosed(connection);
        if (SqlStates.CONNECTION_DOES_NOT_EXIST.equals(state) || (state == null && closed)) {
            return new DataAccessException(
                    "the connection was already closed when " + what + " was to be sent (lost under the work, which"
                            + " went on, or discarded by the pool); nothing of this call was committed",
                    e);
        }
        if (!closed && !SqlStates.isConnectionLoss(e)) {
            return null;
        }
        return new DataAccessException(
                what + " failed (SQLSTATE " + state + ") and the connection is closed (lost, or discarded by the"
                        + " pool); nothing of this call was committed",
                e);
    }
}
