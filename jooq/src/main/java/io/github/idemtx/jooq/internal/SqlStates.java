package io.github.idemtx.jooq.internal;

import java.sql.SQLException;
import java.util.IdentityHashMap;
import java.util.Map;

/** Finds the SQLSTATE behind an exception, however the work or jOOQ wrapped it. */
public final class SqlStates {

    public static final String SERIALIZATION_FAILURE = "40001";
    public static final String DEADLOCK_DETECTED = "40P01";
    public static final String LOCK_NOT_AVAILABLE = "55P03";
    public static final String UNIQUE_VIOLATION = "23505";

    private SqlStates() {}

    /** Whether the cause chain holds a serialization failure or a deadlock: the unit may run again. */
    public static boolean isRetryable(Throwable t) {
        return has(t, SERIALIZATION_FAILURE) || has(t, DEADLOCK_DETECTED);
    }

    /**
     * Whether the cause chain says the connection is gone: SQLSTATE class 08 (connection exception)
     * or 57P01-57P03 (the server is shutting down or terminated the backend).
     */
    public static boolean isConnectionLoss(Throwable t) {
        return any(t, SqlStates::isConnectionLossState);
    }

    /** Whether {@code state} (null: no) says the connection is gone, as {@link #isConnectionLoss} counts it. */
    public static boolean isConnectionLossState(String state) {
        return state != null
                && (state.startsWith("08") || state.equals("57P01") || state.equals("57P02") || state.equals("57P03"));
    }

    /** Whether the cause chain (suppressed exceptions aside) holds an SQLException with {@code state}. */
    public static boolean has(Throwable t, String state) {
        return any(t, state::equals);
    }

    private static boolean any(Throwable t, java.util.function.Predicate<String> stateMatches) {
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        for (Throwable c = t; c != null && seen.put(c, Boolean.TRUE) == null; c = c.getCause()) {
            if (c instanceof SQLException sql) {
                for (SQLException s = sql; s != null; s = s.getNextException()) {
                    if (s.getSQLState() != null && stateMatches.test(s.getSQLState())) {
                        return true;
                    }
                    if (s.getNextException() == s) {
                        break;
                    }
                }
            }
        }
        return false;
    }
}
