package io.github.idemtx.ledger.storm;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;

/**
 * The storms' own way into the ledger's database, beside the ledger's pool: for the checks at the
 * end, the connection kills and the schema set-up. Each call opens and closes its connection (a
 * storm's kills may end any other); {@code application} names them in {@code pg_stat_activity}.
 */
record SideDatabase(String url, String user, String password, String application) {

    /** Whatever a query row gives, one row at a time. */
    @FunctionalInterface
    interface Row {
        void accept(ResultSet rs) throws SQLException;
    }

    /**
     * A new connection; the caller closes it. A server that is full ({@code too many clients}: others
     * share it, or the storm's own processes hold their pools) is asked again for up to a minute.
     */
    Connection connect() throws SQLException {
        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null) {
            props.setProperty("password", password);
        }
        props.setProperty("ApplicationName", application);
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(1);
        while (true) {
            try {
                return DriverManager.getConnection(url, props);
            } catch (SQLException e) {
                if (!"53300".equals(e.getSQLState()) || System.nanoTime() > until) {
                    throw e;
                }
                ChildProcesses.sleep(250);
            }
        }
    }

    void execute(String sql) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    void query(String sql, Row row) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                row.accept(rs);
            }
        }
    }

    /** The first column of the one row {@code sql} returns, as a whole number. */
    long count(String sql) throws SQLException {
        long[] n = {0};
        query(sql, rs -> n[0] = rs.getLong(1));
        return n[0];
    }

    /** The first column of the one row {@code sql} returns, as a decimal. */
    BigDecimal decimal(String sql) throws SQLException {
        BigDecimal[] v = {BigDecimal.ZERO};
        query(sql, rs -> v[0] = rs.getBigDecimal(1));
        return v[0];
    }

    /** The first column of every row. */
    Set<String> strings(String sql) throws SQLException {
        Set<String> values = new HashSet<>();
        query(sql, rs -> values.add(rs.getString(1)));
        return values;
    }
}
