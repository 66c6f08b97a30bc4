package io.github.idemtx.spring;

import io.github.idemtx.db.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * What another session sees now: the Spring tests' check that something committed, or did not, on
 * a connection of its own outside every Spring transaction.
 */
public final class Committed {

    private Committed() {}

    /**
     * The single number {@code sql} selects ({@code select count(*) ...}), {@code {schema}} in it
     * replaced by the test schema, {@code params} bound as strings in order.
     */
    public static long number(String sql, String... params) {
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement(
                        sql.replace("{schema}", TestDatabase.get().schema()))) {
            for (int i = 0; i < params.length; i++) {
                ps.setString(i + 1, params[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@link #number} of a {@code count(*)}. */
    public static int count(String sql, String... params) {
        return Math.toIntExact(number(sql, params));
    }
}
