package io.github.idemtx.jooq.outbox;

import io.github.idemtx.jooq.internal.store.SqlStates;
import java.sql.Connection;
import java.sql.SQLException;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

/**
 * Runs one statement of the outbox outside any work: on a connection of the {@code DSLContext}'s
 * provider, committed before it returns (also on a pool with auto-commit off, where it commits what
 * the pool's own statements left open: nobody's).
 */
final class OwnStatement {

    @FunctionalInterface
    interface Body<R extends @Nullable Object> {
        R apply(Connection connection) throws SQLException;
    }

    private OwnStatement() {}

    static <R extends @Nullable Object> R run(DSLContext dsl, String schema, String what, Body<R> body) {
        return dsl.connectionResult(c -> {
            try {
                if (c.getAutoCommit()) {
                    return body.apply(c);
                }
                try {
                    R result = body.apply(c);
                    c.commit();
                    return result;
                } catch (SQLException | RuntimeException e) {
                    try {
                        c.rollback();
                    } catch (SQLException rollback) {
                        e.addSuppressed(rollback);
                    }
                    throw e;
                }
            } catch (SQLException e) {
                throw SqlStates.storeFailure(what, e, schema);
            }
        });
    }
}
