package io.github.idemtx.db;

import io.github.idemtx.core.UnsupportedDatabaseException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Creates and upgrades the claim table in a PostgreSQL schema, with Flyway.
 *
 * <p>The migrations live at {@value #LOCATION} and keep their own history table,
 * {@value #HISTORY_TABLE}, so they never collide with an application's own Flyway migrations in
 * the same schema: run the application's migrations as usual and call {@link #migrate} beside them.
 *
 * <pre>{@code
 * IdempotencySchema.migrate(dataSource);               // schema "public"
 * IdempotencySchema.migrate(dataSource, "idempotency"); // created if missing
 * }</pre>
 *
 * <p>Safe to call at every start-up and from several processes at once: Flyway takes a lock, and
 * applied migrations are skipped. Thread-safe (stateless).
 */
public final class IdempotencySchema {

    /** Where the migrations are, on the class path. */
    public static final String LOCATION = "classpath:db/idempotency/postgresql";

    /** The Flyway history table of these migrations, in the target schema. */
    public static final String HISTORY_TABLE = "idempotency_schema_history";

    /** The schema used when none is named. */
    public static final String DEFAULT_SCHEMA = "public";

    /** The claim table's name. */
    public static final String CLAIM_TABLE = "idempotency_claim";

    /**
     * The oldest PostgreSQL major version the library supports and is tested on; older servers are
     * refused by {@link #migrate} and by the first call on them.
     */
    public static final int OLDEST_SUPPORTED_VERSION = 14;

    private static final Pattern SCHEMA_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]{0,62}");

    private IdempotencySchema() {}

    /**
     * Applies the pending migrations to the {@value #DEFAULT_SCHEMA} schema, as
     * {@link #migrate(DataSource, String)} does.
     *
     * @param dataSource where to migrate; each connection is closed again
     * @return how many migrations were applied (0 if it was up to date)
     * @throws NullPointerException if {@code dataSource} is null
     * @throws UnsupportedDatabaseException if the server is older than PostgreSQL
     *     {@value #OLDEST_SUPPORTED_VERSION}; nothing was changed
     * @throws IllegalStateException if {@code dataSource} gives no connection (the driver's error is the cause)
     * @throws org.flywaydb.core.api.FlywayException if a migration fails
     */
    public static int migrate(DataSource dataSource) {
        return migrate(dataSource, DEFAULT_SCHEMA);
    }

    /**
     * Applies the pending migrations to {@code schema}, creating it if it does not exist.
     *
     * @param dataSource where to migrate; each connection is closed again
     * @param schema a plain PostgreSQL identifier (see {@link #requireSchemaName})
     * @return how many migrations were applied (0 if it was up to date)
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code schema} is not a plain PostgreSQL identifier
     * @throws UnsupportedDatabaseException if the server is older than PostgreSQL
     *     {@value #OLDEST_SUPPORTED_VERSION}; nothing was changed
     * @throws IllegalStateException if {@code dataSource} gives no connection (the driver's error is the cause)
     * @throws org.flywaydb.core.api.FlywayException if a migration fails
     */
    public static int migrate(DataSource dataSource, String schema) {
        Objects.requireNonNull(dataSource, "dataSource must not be null");
        requireSchemaName(schema);
        try (Connection connection = dataSource.getConnection()) {
            requireSupportedServer(connection);
        } catch (SQLException e) {
            SQLException cause = innermost(e);
            throw new IllegalStateException(
                    "cannot connect to migrate the claim table: " + cause.getMessage()
                            + (cause.getSQLState() == null ? "" : " (SQLSTATE " + cause.getSQLState() + ")"),
                    e);
        }
        MigrateResult result = Flyway.configure(IdempotencySchema.class.getClassLoader())
                .dataSource(dataSource)
                .locations(LOCATION)
                .schemas(schema)
                .defaultSchema(schema)
                .createSchemas(true)
                .table(HISTORY_TABLE)
                // the schema usually holds the application's tables already: start our history at 0
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .baselineDescription("idempotency history starts")
                .cleanDisabled(true)
                .load()
                .migrate();
        return result.migrationsExecuted;
    }

    /**
     * Checks that {@code connection} leads to a PostgreSQL this library supports, from what the
     * driver learned when it connected (no statement is sent).
     *
     * @param connection an open connection; left open
     * @throws NullPointerException if {@code connection} is null
     * @throws UnsupportedDatabaseException if the server is not PostgreSQL, or older than
     *     {@value #OLDEST_SUPPORTED_VERSION}
     * @throws SQLException if the driver cannot say
     */
    public static void requireSupportedServer(Connection connection) throws SQLException {
        Objects.requireNonNull(connection, "connection must not be null");
        DatabaseMetaData meta = connection.getMetaData();
        String product = meta.getDatabaseProductName();
        if (!"PostgreSQL".equalsIgnoreCase(product)) {
            throw new UnsupportedDatabaseException(
                    UnsupportedDatabaseException.Problem.SERVER_TOO_OLD,
                    "the database at " + meta.getURL() + " is " + product
                            + ", not PostgreSQL: idemtx runs on PostgreSQL " + OLDEST_SUPPORTED_VERSION + " or newer",
                    null);
        }
        int major = meta.getDatabaseMajorVersion();
        if (major < OLDEST_SUPPORTED_VERSION) {
            throw new UnsupportedDatabaseException(
                    UnsupportedDatabaseException.Problem.SERVER_TOO_OLD,
                    "the server at " + meta.getURL() + " runs PostgreSQL " + meta.getDatabaseProductVersion()
                            + "; idemtx supports PostgreSQL " + OLDEST_SUPPORTED_VERSION
                            + " and newer: upgrade the server, or point the data source at a newer one",
                    null);
        }
    }

    /**
     * Checks that {@code schema} is a plain identifier (letters, digits, {@code _} and {@code $},
     * not starting with a digit, at most 63 characters), which needs no quoting rules to be right.
     *
     * @param schema the schema name to check
     * @return {@code schema}
     * @throws NullPointerException if it is null
     * @throws IllegalArgumentException otherwise
     */
    public static String requireSchemaName(String schema) {
        Objects.requireNonNull(schema, "schema must not be null");
        if (!SCHEMA_NAME.matcher(schema).matches()) {
            throw new IllegalArgumentException("schema must be a plain identifier of at most 63 characters"
                    + " (letters, digits, _ and $, not starting with a digit), was '" + schema + "'");
        }
        return schema;
    }

    /**
     * The innermost {@code SQLException} in the chain: a pool's "timed out" wraps the driver's reason
     * (refused, no such database, password), and that is the one to name. Stops at a cause that is
     * its own cause.
     */
    @SuppressWarnings("ReferenceEquality") // identity is the point: a self-caused exception ends the walk
    private static SQLException innermost(SQLException e) {
        SQLException innermost = e;
        for (Throwable t = e.getCause(); t != null && t != t.getCause(); t = t.getCause()) {
            if (t instanceof SQLException inner) {
                innermost = inner;
            }
        }
        return innermost;
    }
}
