package io.github.idemtx.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

@DatabaseTest
class IdempotencySchemaTest {

    private final TestDatabase db = TestDatabase.get();

    @Test
    void createsTheClaimTableInTheNamedSchemaWithItsOwnHistoryTable() throws Exception {
        String schema = db.schema() + "_own";
        try (HikariDataSource ds = db.newPool(2)) {
            assertThat(IdempotencySchema.migrate(ds, schema)).isEqualTo(7);
            assertThat(tables(schema))
                    .contains("idempotency_claim", "idempotency_outbox", "idempotency_schema_history");
            assertThat(IdempotencySchema.migrate(ds, schema))
                    .as("second run is a no-op")
                    .isZero();
            // V4: the external effects' columns, their states and the index of unsettled claims (V8 adds
            // state 5, sent, for effects settled by statement: 6 is no state)
            assertThat(query("SELECT column_name FROM information_schema.columns WHERE table_schema = '" + schema
                            + "' AND table_name = 'idempotency_claim' AND column_name IN ('effect', 'request', 'fence',"
                            + " 'lease_until', 'lookups', 'next_lookup_at') ORDER BY 1"))
                    .containsExactly("effect", "fence", "lease_until", "lookups", "next_lookup_at", "request");
            db.execute("INSERT INTO " + schema + ".idempotency_claim (scope, idem_key, fingerprint, state, created_at,"
                    + " expires_at, effect, fence, lease_until, lookups) VALUES ('s', 'k', decode(repeat('00', 32), 'hex'), 3,"
                    + " now(), 'infinity', 'charge', 1, now(), 0)");
            assertThatThrownBy(
                            () -> db.execute(
                                    "INSERT INTO " + schema + ".idempotency_claim (scope, idem_key, fingerprint,"
                                            + " state, created_at, expires_at) VALUES ('s', 'k6', decode(repeat('00', 32), 'hex'), 6, now(), now())"))
                    .hasStackTraceContaining("idempotency_claim_state_known");
            assertThat(query("SELECT indexname FROM pg_indexes WHERE schemaname = '" + schema
                            + "' AND indexname = 'idempotency_claim_unsettled'"))
                    .containsExactly("idempotency_claim_unsettled");
        } finally {
            db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void livesBesideAnApplicationsOwnTablesAndFlywayHistory() throws Exception {
        String schema = db.schema() + "_app";
        db.execute("CREATE SCHEMA " + schema);
        db.execute("CREATE TABLE " + schema + ".flyway_schema_history (installed_rank int primary key)");
        db.execute("CREATE TABLE " + schema + ".accounts (id bigint primary key)");
        try (HikariDataSource ds = db.newPool(2)) {
            assertThat(IdempotencySchema.migrate(ds, schema)).isEqualTo(7);
            assertThat(tables(schema))
                    .contains("accounts", "flyway_schema_history", "idempotency_claim", "idempotency_schema_history");
        } finally {
            db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void leavesNoSessionStateOnThePooledConnections() {
        assumeFalse(
                db.throughPgBouncer(),
                "Flyway sets the search path for the session while it migrates and"
                        + " restores it in a later transaction, which a transaction-mode pooler may run on another server"
                        + " connection: migrations go straight to the server (docs/poolers.md)");
        String schema = db.schema() + "_state";
        try (HikariDataSource ds = db.newPool(8)) {
            assertThat(IdempotencySchema.migrate(ds, schema)).isEqualTo(7);
            assertThat(db.leftoverSessionState(ds)).isEmpty();
        } finally {
            db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void upgradingFromTheFirstVersionFoldsEachClaimsWorkDurationIntoItsExpiryAndKeepsTheOldFunctionForARollingUpgrade()
            throws Exception {
        assumeFalse(db.throughPgBouncer(), "migrations go straight to the server (docs/poolers.md)");
        String schema = db.schema() + "_upgrade";
        try (HikariDataSource ds = db.newPool(2)) {
            Flyway.configure(IdempotencySchema.class.getClassLoader())
                    .dataSource(ds)
                    .locations(IdempotencySchema.LOCATION)
                    .schemas(schema)
                    .defaultSchema(schema)
                    .createSchemas(true)
                    .table(IdempotencySchema.HISTORY_TABLE)
                    .target("1")
                    .load()
                    .migrate();
            // V1 rows: expires_at was set at the claim; the work's duration (completed - created) counted on top
            db.execute(
                    "INSERT INTO " + schema + ".idempotency_claim VALUES"
                            + " ('s', 'done', decode(repeat('00', 32), 'hex'), 1, NULL, '2026-01-01 10:00:00+00', '2026-01-01 10:00:07+00', '2026-01-02 10:00:00+00'),"
                            + " ('s', 'running', decode(repeat('00', 32), 'hex'), 0, NULL, '2026-01-01 10:00:00+00', NULL, '2026-01-02 10:00:00+00')");

            assertThat(IdempotencySchema.migrate(ds, schema))
                    .as("V2, V3, V4, V5, V7 and V8")
                    .isEqualTo(6);

            assertThat(query(
                            "SELECT idem_key || ' ' || to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM "
                                    + schema + ".idempotency_claim ORDER BY idem_key"))
                    .containsExactly("done 2026-01-02 10:00:07", "running 2026-01-02 10:00:00");
            assertThat(query("SELECT proname FROM pg_proc WHERE pronamespace = '" + schema
                            + "'::regnamespace ORDER BY 1"))
                    .as("V1's function stays for instances not yet upgraded")
                    .containsExactly(
                            "idempotency_acquire",
                            "idempotency_await",
                            "idempotency_claim_visible",
                            "idempotency_wait_until");
        } finally {
            db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void refusesSchemaNamesThatAreNotPlainIdentifiers() {
        assertThatThrownBy(() -> IdempotencySchema.migrate(new HikariDataSource(), "x; drop table y"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("schema must be a plain identifier");
        assertThatThrownBy(() -> IdempotencySchema.migrate(new HikariDataSource(), null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("schema");
        assertThatThrownBy(() -> IdempotencySchema.migrate(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("dataSource");
        assertThatThrownBy(() -> IdempotencySchema.requireSchemaName("a".repeat(64)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private List<String> query(String sql) throws Exception {
        List<String> rows = new ArrayList<>();
        try (Connection c = db.connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                rows.add(rs.getString(1));
            }
        }
        return rows;
    }

    private List<String> tables(String schema) throws Exception {
        List<String> names = new ArrayList<>();
        try (Connection c = db.connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = '" + schema + "'")) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        }
        return names;
    }
}
