package io.github.idemtx.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * CPU time used by the bench's JVM (all its threads: clients, GC, JIT) and by the PostgreSQL
 * backends serving its pool (from /proc, only when the server runs on this machine and /proc is
 * readable), so that a segment can tell client cost per operation from server cost.
 */
final class CpuProbe {

    private final DataSource pool;
    private final String applicationName;
    private volatile List<Path> backends = List.of();

    CpuProbe(DataSource pool, String applicationName) {
        this.pool = pool;
        this.applicationName = applicationName;
    }

    /** Finds the pool's backends again (connections come and go); call outside measured windows. */
    void refresh() {
        List<Path> found = new ArrayList<>();
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE application_name = ?")) {
            ps.setString(1, applicationName);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Path p = Path.of("/proc/" + rs.getInt(1) + "/schedstat");
                    if (Files.isReadable(p)) {
                        found.add(p);
                    }
                }
            }
        } catch (SQLException e) {
            found.clear();
        }
        backends = found;
    }

    /** {JVM process CPU ns, server backends CPU ns or -1}. */
    long[] sample() {
        long jvm = ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime()
                : -1;
        long server = backends.isEmpty() ? -1 : 0;
        for (Path p : backends) {
            try {
                server += Long.parseLong(Files.readString(p).trim().split("\\s+")[0]);
            } catch (Exception e) {
                // the backend went away; its time is lost for this window
            }
        }
        return new long[] {jvm, server};
    }
}
