package io.github.idemtx.jooq.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.ThrowawayCluster;
import io.github.idemtx.db.testing.ThrowawayCluster.StopMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import java.util.Properties;
import org.junit.jupiter.api.Test;

@DatabaseTest
class ThrowawayClusterTest {

    @Test
    void aCommitSurvivesAFastStopAndACrashAndCloseLeavesNothingBehind() throws Exception {
        String url;
        Optional<Path> directory;
        try (ThrowawayCluster cluster = ThrowawayCluster.start()) {
            url = cluster.jdbcUrl();
            directory = cluster.directory();
            execute(cluster, "CREATE TABLE survivor (note text)");
            execute(cluster, "INSERT INTO survivor VALUES ('before a fast stop')");
            cluster.stop(StopMode.FAST);
            assertThatThrownBy(() -> execute(cluster, "SELECT 1")).isInstanceOf(SQLException.class);
            cluster.startAgain();
            execute(cluster, "INSERT INTO survivor VALUES ('before a crash')");
            cluster.stop(StopMode.IMMEDIATE);
            cluster.startAgain();

            assertThat(cluster.jdbcUrl()).as("same port after restarts").isEqualTo(url);
            assertThat(count(cluster, "SELECT count(*) FROM survivor")).isEqualTo(2);
            assertThat(cluster.logTail(100_000)).contains("automatic recovery in progress");
            assertThat(cluster.running()).isTrue();
        }
        assertThatThrownBy(() -> connect(url, "postgres").close())
                .as("the server is gone")
                .isInstanceOf(SQLException.class);
        directory.ifPresent(d -> assertThat(Files.exists(d)).as("%s deleted", d).isFalse());
    }

    private static void execute(ThrowawayCluster cluster, String sql) throws SQLException {
        try (Connection c = connect(cluster.jdbcUrl(), cluster.user());
                Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private static long count(ThrowawayCluster cluster, String sql) throws SQLException {
        try (Connection c = connect(cluster.jdbcUrl(), cluster.user());
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static Connection connect(String url, String user) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", user);
        props.setProperty("connectTimeout", "5");
        return DriverManager.getConnection(url, props);
    }
}
