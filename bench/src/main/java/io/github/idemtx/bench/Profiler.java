package io.github.idemtx.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * Where the time goes, per operation, one strategy at a time on one thread and one connection:
 * round trips and bytes on the wire, the client thread's CPU time and allocation, the server
 * backend's CPU time (read from /proc when the server runs on this machine), WAL generated
 * (server-wide, so other sessions' writes leak in), and, when the server offers them, the
 * PL/pgSQL function times ({@code track_functions = pl}) and pg_stat_statements per statement.
 */
final class Profiler {

    private final DataSource pool;
    private final String schema;
    private final boolean trackFunctions;
    private final boolean statements;
    private final Integer backendPid;

    /**
     * @param pool a pool of exactly one connection (so the server backend is always the same one)
     * @param trackFunctions whether that connection runs with {@code track_functions = pl}
     */
    Profiler(DataSource pool, String schema, boolean trackFunctions) {
        this.pool = pool;
        this.schema = schema;
        this.trackFunctions = trackFunctions;
        this.statements = queryWorks("SELECT 1 FROM pg_stat_statements LIMIT 1");
        this.backendPid = backendPid();
    }

    boolean statementsAvailable() {
        return statements;
    }

    Map<String, Object> profile(Strategy strategy, int ops) throws Exception {
        Strategy.Worker worker = strategy.worker(0, 1);
        Supplier<Object> waves = strategy.waves();
        int warmup = Math.max(20, ops / 5);
        for (int i = 0; i < warmup; i++) {
            worker.op(waves == null ? null : waves.get());
        }
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        if (trackFunctions) {
            flushStats(); // the warm-up's calls must be in the baseline
        }
        Map<String, double[]> functionsBefore = trackFunctions ? functions() : Map.of();
        Map<Long, Object[]> statementsBefore = statements ? statements() : Map.of();
        String lsnBefore = lsn();
        long serverCpuBefore = serverCpuNanos();
        long[] wireBefore = CountingSocketFactory.snapshot();
        long allocBefore = threads.getCurrentThreadAllocatedBytes();
        long cpuBefore = threads.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        for (int i = 0; i < ops; i++) {
            worker.op(waves == null ? null : waves.get());
        }
        long t1 = System.nanoTime();
        long cpuAfter = threads.getCurrentThreadCpuTime();
        long allocAfter = threads.getCurrentThreadAllocatedBytes();
        long[] wireAfter = CountingSocketFactory.snapshot();
        long serverCpuAfter = serverCpuNanos();
        Long walBytes = walSince(lsnBefore);

        Map<String, Object> m = new LinkedHashMap<>();
        m.put("strategy", strategy.name());
        m.put("ops", ops);
        m.put("mean_ms", (t1 - t0) / 1e6 / ops);
        m.put("round_trips_per_op", (double) (wireAfter[0] - wireBefore[0]) / ops);
        m.put("bytes_sent_per_op", (double) (wireAfter[1] - wireBefore[1]) / ops);
        m.put("bytes_received_per_op", (double) (wireAfter[2] - wireBefore[2]) / ops);
        m.put("client_cpu_us_per_op", (cpuAfter - cpuBefore) / 1e3 / ops);
        m.put("client_alloc_bytes_per_op", (double) (allocAfter - allocBefore) / ops);
        m.put(
                "server_backend_cpu_us_per_op",
                serverCpuBefore < 0 || serverCpuAfter < 0 ? null : (serverCpuAfter - serverCpuBefore) / 1e3 / ops);
        m.put("wal_bytes_per_op", walBytes == null ? null : (double) walBytes / ops);
        if (trackFunctions) {
            flushStats();
            Map<String, double[]> after = functions();
            Map<String, Object> f = new LinkedHashMap<>();
            after.forEach((name, v) -> {
                double[] b = functionsBefore.getOrDefault(name, new double[3]);
                double calls = v[0] - b[0];
                if (calls > 0) {
                    f.put(
                            name,
                            Map.of(
                                    "calls_per_op",
                                    calls / ops,
                                    "total_us_per_op",
                                    (v[1] - b[1]) * 1000 / ops,
                                    "self_us_per_op",
                                    (v[2] - b[2]) * 1000 / ops));
                }
            });
            m.put("plpgsql_functions", f);
        }
        if (statements) {
            List<Map<String, Object>> list = new ArrayList<>();
            statements().forEach((id, v) -> {
                Object[] b = statementsBefore.get(id);
                long calls = (Long) v[1] - (b == null ? 0 : (Long) b[1]);
                if (calls > 0) {
                    Map<String, Object> s = new LinkedHashMap<>();
                    s.put("query", v[0]);
                    s.put("calls_per_op", (double) calls / ops);
                    s.put("mean_exec_us", ((Double) v[2] - (b == null ? 0 : (Double) b[2])) * 1000 / calls);
                    s.put("wal_bytes_per_call", (double) ((Long) v[3] - (b == null ? 0 : (Long) b[3])) / calls);
                    s.put("wal_fpi_per_call", (double) ((Long) v[4] - (b == null ? 0 : (Long) b[4])) / calls);
                    list.add(s);
                }
            });
            m.put("statements", list);
        }
        return m;
    }

    private Integer backendPid() {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            int pid = rs.getInt(1);
            return Files.isReadable(Path.of("/proc/" + pid + "/schedstat")) ? pid : null;
        } catch (SQLException e) {
            return null;
        }
    }

    /** CPU time the server backend of the profile connection has used, from /proc (-1 if unknown). */
    private long serverCpuNanos() {
        if (backendPid == null) {
            return -1;
        }
        try {
            String[] f = Files.readString(Path.of("/proc/" + backendPid + "/schedstat"))
                    .trim()
                    .split("\\s+");
            return Long.parseLong(f[0]);
        } catch (Exception e) {
            return -1;
        }
    }

    private String lsn() {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            return null;
        }
    }

    private Long walSince(String before) {
        if (before == null) {
            return null;
        }
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ?::pg_lsn)::bigint")) {
            ps.setString(1, before);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            return null;
        }
    }

    /** Makes the profile backend publish its pending function statistics. */
    private void flushStats() {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            if (!queryWorks(c, "SELECT pg_stat_force_next_flush()")) {
                Thread.sleep(1100); // PostgreSQL < 15 or no function: the 1 s minimum flush interval
                s.execute("SELECT 1");
            }
        } catch (SQLException e) {
            // the figures will be missing; nothing else depends on them
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private Map<String, double[]> functions() {
        Map<String, double[]> m = new LinkedHashMap<>();
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions WHERE schemaname = ?")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    m.put(rs.getString(1), new double[] {rs.getLong(2), rs.getDouble(3), rs.getDouble(4)});
                }
            }
        } catch (SQLException e) {
            // leave it empty
        }
        return m;
    }

    private Map<Long, Object[]> statements() {
        Map<Long, Object[]> m = new LinkedHashMap<>();
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT queryid, query, calls, total_exec_time, wal_bytes::bigint, wal_fpi"
                                + " FROM pg_stat_statements WHERE query LIKE ? AND query NOT LIKE '%pg_stat_statements%'")) {
            ps.setString(1, "%" + schema + "%");
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String q = rs.getString(2).replaceAll("\\s+", " ");
                    m.put(rs.getLong(1), new Object[] {
                        q.length() > 160 ? q.substring(0, 160) + "..." : q,
                        rs.getLong(3),
                        rs.getDouble(4),
                        rs.getLong(5),
                        rs.getLong(6)
                    });
                }
            }
        } catch (SQLException e) {
            // leave it empty
        }
        return m;
    }

    private boolean queryWorks(String sql) {
        try (Connection c = pool.getConnection()) {
            return queryWorks(c, sql);
        } catch (SQLException e) {
            return false;
        }
    }

    private static boolean queryWorks(Connection c, String sql) {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
            return true;
        } catch (SQLException e) {
            return false;
        }
    }
}
