package io.github.idemtx.db.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;

/**
 * The PostgreSQL the database tests run against, resolved once per test JVM as {@link LocalPostgres}
 * says (the same order as the ledger's): the JDBC URL in {@code IDEMPOTENCY_TEST_DB_URL} (with
 * {@code IDEMPOTENCY_TEST_DB_USER} and {@code IDEMPOTENCY_TEST_DB_PASSWORD}), or the words
 * {@code embedded[:version]} / {@code testcontainers[:image]} there; else a server at 127.0.0.1:5432
 * that lets user {@code postgres} in; else an embedded PostgreSQL; else Testcontainers where Docker
 * answers; else every database test fails with one message that says why and how to provide one.
 *
 * <p>Each JVM works in a database of its own ({@code idemtx_test_<random>}, created on that server and
 * dropped when the JVM exits), and in a schema of the same name in it; the migrations are applied to
 * it by whoever needs them. So whatever a test asks about "other sessions" ({@code pg_stat_activity},
 * {@code pg_locks}) with {@code datname = current_database()} sees only this JVM's: not another
 * program's on a shared server, not another surefire fork's, not a second build's. Where the user may
 * not create databases, the JVM works in a schema of the database it was given, and says so: then
 * those questions see every session of that database.
 *
 * <p>With the system property {@value #PGBOUNCER_PROPERTY}{@code =true}, the code under test reaches
 * that server through a PgBouncer in transaction pooling mode that this class starts on a free
 * loopback port (and stops at JVM exit): {@link #url()}, {@link #newPool(int)} and
 * {@link #dataSource()} then lead through it, with pgjdbc's {@code prepareThreshold=0}, while
 * {@link #connect()} and {@link #execute(String)} (set-up, inspection, fault injection) still go
 * straight to the server. A few server connections are shared by all client connections and never
 * reset between them, so a test passes there only if nothing it ran left session state behind.
 * When PgBouncer is asked for but not installed, every database test fails saying how to install
 * it.
 */
public final class TestDatabase {

    public static final String URL_ENV = "IDEMPOTENCY_TEST_DB_URL";
    public static final String USER_ENV = "IDEMPOTENCY_TEST_DB_USER";
    public static final String PASSWORD_ENV = "IDEMPOTENCY_TEST_DB_PASSWORD";

    /** System property: {@code true} to run the code under test through PgBouncer (transaction mode). */
    public static final String PGBOUNCER_PROPERTY = "idemtx.test.pgbouncer";

    /**
     * Settings set for the session when a connection is made (by pgjdbc straight to the server; by
     * PgBouncer, in step with each client, whenever a client lands on a server connection): the
     * connection's own, not state a transaction left behind.
     */
    private static final Set<String> SET_AT_CONNECT =
            Set.of("client_encoding", "datestyle", "timezone", "standard_conforming_strings", "application_name");

    private static TestDatabase instance;
    private static RuntimeException failure;

    private final String givenUrl;
    private String url;
    private final String user;
    private final String password;
    private final String schema;
    private final String origin;
    private boolean ownDatabase;
    private PgBouncer pgBouncer;
    private LocalPostgres local;

    private TestDatabase(String url, String user, String password, String origin) {
        this.givenUrl = url;
        this.url = url;
        this.user = user;
        this.password = password;
        this.origin = origin;
        this.schema = "idemtx_test_" + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
    }

    /** Whether this JVM already tried to resolve the database and failed (every later {@link #get} throws the same). */
    public static synchronized boolean failedAlready() {
        return failure != null;
    }

    /**
     * System property: {@code true} in a run of the unit tests alone (the {@code unit} profile), where
     * every database test class is left out by its tag and asking for the database is a mistake.
     */
    public static final String NO_DATABASE_PROPERTY = "idemtx.test.noDatabase";

    /** The database of this test JVM, resolved and prepared on first use. */
    public static synchronized TestDatabase get() {
        if (instance != null) {
            return instance;
        }
        if (failure != null) {
            throw failure;
        }
        if (Boolean.getBoolean(NO_DATABASE_PROPERTY)) {
            throw new IllegalStateException("a test asked for the database in a run of the unit tests alone ("
                    + NO_DATABASE_PROPERTY + "=true, which leaves out the classes tagged '" + DatabaseTest.TAG
                    + "'): annotate its class @DatabaseTest (jqwik: @net.jqwik.api.Tag(\"" + DatabaseTest.TAG
                    + "\")) so that the unit run leaves it out");
        }
        try {
            TestDatabase db = resolve();
            db.createDatabase();
            db.createSchema();
            Runtime.getRuntime().addShutdownHook(new Thread(db::drop, "drop-test-database"));
            if (Boolean.getBoolean(PGBOUNCER_PROPERTY)) {
                db.pgBouncer = PgBouncer.start(PgBouncer.ServerAddress.parse(db.url, db.user, db.password), db.schema);
                System.out.println(
                        "database tests run through " + db.pgBouncer.describe() + ", in front of " + db.origin);
            }
            instance = db;
            return db;
        } catch (RuntimeException e) {
            failure = e;
            throw e;
        }
    }

    /** The settings' names, for messages. */
    public static final ConnectionCheck.Settings SETTINGS =
            new ConnectionCheck.Settings(URL_ENV, USER_ENV, PASSWORD_ENV);

    private static TestDatabase resolve() {
        LocalPostgres found = LocalPostgres.resolve(
                System.getenv(URL_ENV), System.getenv(USER_ENV), System.getenv(PASSWORD_ENV), SETTINGS);
        System.out.println("database tests: " + found.describe());
        TestDatabase db = new TestDatabase(found.url(), found.user(), found.password(), found.describe());
        db.local = found;
        return db;
    }

    /** The embedded server's {@code bin} directory, when the tests run on one ({@link ThrowawayCluster}'s fallback). */
    static Optional<java.nio.file.Path> embeddedBinaries() {
        TestDatabase db;
        synchronized (TestDatabase.class) {
            db = instance;
        }
        return db == null || db.local == null ? Optional.empty() : db.local.binaries();
    }

    private static Properties credentials(String user, String password) {
        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null) {
            props.setProperty("password", password);
        }
        return props;
    }

    /**
     * The JDBC URL the code under test connects to (not of a schema): the server's, or PgBouncer's
     * in front of it (then the search path is already this JVM's schema).
     */
    public String url() {
        return pgBouncer != null ? pgBouncer.jdbcUrl() : url;
    }

    /**
     * The JDBC URL the tests were given (setting, 127.0.0.1:5432, embedded server): its database is
     * where this JVM's own was created from, and where other programs may be.
     */
    public String givenUrl() {
        return givenUrl;
    }

    /**
     * A new connection to the given database ({@link #givenUrl()}), where this JVM's own is created
     * and dropped and where other programs may be; autocommit, the caller closes it.
     */
    public Connection connectGiven() throws SQLException {
        return DriverManager.getConnection(givenUrl, credentials(user, password));
    }

    /** Whether this JVM works in a database of its own (else in a schema of the given one). */
    public boolean ownDatabase() {
        return ownDatabase;
    }

    /** The JDBC URL of the server itself, never through PgBouncer. */
    public String serverUrl() {
        return url;
    }

    /** Whether the code under test reaches the server through PgBouncer in transaction mode. */
    public boolean throughPgBouncer() {
        return pgBouncer != null;
    }

    /** The user to connect as; may be null. */
    public String user() {
        return user;
    }

    /** The password; may be null. */
    public String password() {
        return password;
    }

    /** The schema this JVM's tests work in. */
    public String schema() {
        return schema;
    }

    /** Where the database came from, for messages. */
    public String origin() {
        return origin;
    }

    /**
     * A new connection straight to the server (neither pooled nor through PgBouncer), in autocommit
     * mode, for set-up, inspection and fault injection; the caller closes it.
     */
    public Connection connect() throws SQLException {
        return DriverManager.getConnection(url, credentials(user, password));
    }

    /**
     * A new HikariCP pool of up to {@code maxSize} connections whose search path starts with this
     * JVM's schema, through PgBouncer when it is in between; the caller closes it.
     */
    public HikariDataSource newPool(int maxSize) {
        return newPool(maxSize, config -> {});
    }

    /** Like {@link #newPool(int)}, with a last say on the configuration. */
    public HikariDataSource newPool(int maxSize, java.util.function.Consumer<HikariConfig> customizer) {
        return newPool(url(), maxSize, config -> {
            if (pgBouncer == null) {
                // PgBouncer 1.18 refuses a search_path start-up parameter; its database entry sets it
                config.addDataSourceProperty("currentSchema", schema);
            }
            customizer.accept(config);
        });
    }

    private HikariDataSource newPool(
            String jdbcUrl, int maxSize, java.util.function.Consumer<HikariConfig> customizer) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        if (user != null) {
            config.setUsername(user);
        }
        if (password != null) {
            config.setPassword(password);
        }
        config.setMaximumPoolSize(maxSize);
        config.setMinimumIdle(0);
        // an idle connection goes back within HikariCP's housekeeping period (30 s), so that a class that
        // once needed many leaves none open for the rest of the JVM: two forks of a suite, a second
        // build and other programs share the server's max_connections
        config.setIdleTimeout(10_000);
        config.setConnectionTimeout(30_000);
        config.setPoolName("test-" + schema);
        customizer.accept(config);
        return new HikariDataSource(config);
    }

    /**
     * Waits (up to 30 s) until at least {@code n} other sessions of this database matching
     * {@code condition} (SQL over pg_stat_activity's columns, e.g. {@code application_name =
     * 'ledger:books'}; make it select the test's own sessions: other programs share the server) wait on
     * a lock.
     */
    public void awaitLockWaiters(String condition, int n) throws InterruptedException {
        awaitLockWaitersUnless(condition, n, () -> false);
    }

    /**
     * Like {@link #awaitLockWaiters}, but gives up as soon as {@code stop} is true (checked before
     * each look): whether the waiters came.
     */
    public boolean awaitLockWaitersUnless(String condition, int n, java.util.function.BooleanSupplier stop)
            throws InterruptedException {
        String sql = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                + " AND datname = current_database() AND (" + condition + ")";
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
        while (true) {
            if (stop.getAsBoolean()) {
                return false;
            }
            try (Connection c = connect();
                    Statement s = c.createStatement();
                    java.sql.ResultSet rs = s.executeQuery(sql)) {
                rs.next();
                if (rs.getInt(1) >= n) {
                    return true;
                }
            } catch (SQLException e) {
                throw new IllegalStateException("cannot read pg_stat_activity", e);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "no " + n + " session(s) where " + condition + " started waiting on a lock within 30 s");
            }
            Thread.sleep(5);
        }
    }

    /** Runs one statement in autocommit mode on a fresh connection. */
    public void execute(String sql) {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("test database statement failed: " + sql, e);
        }
    }

    /**
     * Creates this JVM's database (named as its schema) and moves {@link #url} to it; where the user
     * may not create databases, stays in the given one and says what that costs.
     */
    private void createDatabase() {
        try (Connection c = connectGiven();
                Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + schema);
            ownDatabase = true;
            url = withDatabase(givenUrl, schema);
            System.out.println("database tests: this JVM works in database " + schema + ", dropped when it exits");
        } catch (SQLException e) {
            if (!"42501".equals(e.getSQLState())) { // insufficient_privilege
                throw new IllegalStateException("cannot create the test database " + schema + " on " + origin, e);
            }
            System.out.println("database tests: user " + user + " may not create databases (" + e.getMessage()
                    + "); this JVM works in schema " + schema + " of " + givenUrl
                    + ", and the tests that look for other sessions see every session of that database");
        }
    }

    /**
     * {@code jdbcUrl} (a {@code jdbc:postgresql://hosts[/database][?options]} URL) naming
     * {@code database} instead of its own.
     */
    static String withDatabase(String jdbcUrl, String database) {
        String prefix = "jdbc:postgresql://";
        if (!jdbcUrl.regionMatches(true, 0, prefix, 0, prefix.length())) {
            throw new IllegalArgumentException("not a PostgreSQL JDBC URL: " + jdbcUrl);
        }
        String rest = jdbcUrl.substring(prefix.length());
        int query = rest.indexOf('?');
        String options = query >= 0 ? rest.substring(query) : "";
        String address = query >= 0 ? rest.substring(0, query) : rest;
        int slash = address.indexOf('/');
        String hosts = slash >= 0 ? address.substring(0, slash) : address;
        return jdbcUrl.substring(0, prefix.length()) + hosts + "/" + database + options;
    }

    private void createSchema() {
        execute("CREATE SCHEMA " + schema);
    }

    /** At JVM exit: the database (its sessions ended first), or the schema where there is none. */
    private void drop() {
        if (local != null && local.startedHere()) {
            return; // the server goes with this JVM, and its stop may already be under way
        }
        String statement = ownDatabase
                ? "DROP DATABASE IF EXISTS " + schema + " WITH (FORCE)"
                : "DROP SCHEMA IF EXISTS " + schema + " CASCADE";
        try (Connection c = connectGiven();
                Statement s = c.createStatement()) {
            s.execute(statement);
        } catch (SQLException e) {
            System.err.println("could not drop the test " + (ownDatabase ? "database " : "schema ") + schema + ": "
                    + e.getMessage().toLowerCase(Locale.ROOT));
        }
    }

    /**
     * What the server connections behind {@code pool} carry that a transaction left behind for the
     * next one: settings changed for the session ({@code SET}, {@code set_config(..., false)},
     * {@code SET SESSION CHARACTERISTICS}), session-level advisory locks, prepared statements (through
     * PgBouncer), cursors {@code WITH HOLD}, {@code LISTEN}s, temporary tables. One line per tainted
     * server connection; empty when all are clean.
     *
     * <p>It holds as many connections of {@code pool} in open transactions at once as there are
     * server connections behind it, so that each sits on a server connection of its own and every
     * one is looked at: the pool's maximum size, or, through PgBouncer, PgBouncer's pool size (the
     * server connections all client connections share; no other transaction may be open meanwhile,
     * or this waits for it).
     *
     * @throws IllegalArgumentException through PgBouncer, when {@code pool} is smaller than PgBouncer's pool
     */
    public List<String> leftoverSessionState(HikariDataSource pool) {
        int connections = pool.getMaximumPoolSize();
        if (pgBouncer != null) {
            if (connections < pgBouncer.poolSize()) {
                throw new IllegalArgumentException("a pool of " + connections + " cannot reach all "
                        + pgBouncer.poolSize() + " server connections behind PgBouncer");
            }
            connections = pgBouncer.poolSize();
        }
        String audit = """
                select pg_backend_pid(),
                       (select string_agg(name || '=' || setting, ', ' order by name) from pg_settings
                         where source = 'session' and setting is distinct from reset_val
                           and not (lower(name) = any (?))
                           and not (name = 'search_path' and setting = ?)),
                       (select count(*) from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()),
                       (select count(*) from pg_prepared_statements where ?),
                       (select count(*) from pg_cursors where is_holdable),
                       (select count(*) from pg_listening_channels()),
                       (select count(*) from pg_class where relnamespace = pg_my_temp_schema())
                """;
        List<Connection> held = new ArrayList<>();
        List<String> tainted = new ArrayList<>();
        try {
            for (int i = 0; i < connections; i++) {
                Connection c = pool.getConnection();
                held.add(c);
                c.setAutoCommit(false);
                try (PreparedStatement s = c.prepareStatement(audit)) {
                    s.setArray(1, c.createArrayOf("text", SET_AT_CONNECT.toArray()));
                    s.setString(2, schema);
                    // straight to the server, pgjdbc's own prepared statements belong to the
                    // connection that made them; behind PgBouncer none may exist (prepareThreshold=0)
                    s.setBoolean(3, pgBouncer != null);
                    try (ResultSet rs = s.executeQuery()) {
                        rs.next();
                        List<String> found = new ArrayList<>();
                        if (rs.getString(2) != null) {
                            found.add("settings " + rs.getString(2));
                        }
                        String[] kinds = {
                            "advisory locks", "prepared statements", "cursors", "LISTENs", "temporary tables"
                        };
                        for (int k = 0; k < kinds.length; k++) {
                            if (rs.getLong(3 + k) > 0) {
                                found.add(rs.getLong(3 + k) + " " + kinds[k]);
                            }
                        }
                        if (!found.isEmpty()) {
                            tainted.add("backend " + rs.getInt(1) + ": " + String.join("; ", found));
                        }
                    }
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not inspect the session state of the pool's connections", e);
        } finally {
            for (Connection c : held) {
                try {
                    c.rollback();
                    c.close();
                } catch (SQLException e) {
                    // already broken: nothing to give back
                }
            }
        }
        return tainted;
    }

    /**
     * A new HikariCP pool of up to {@code maxSize} connections straight to the server, never through
     * PgBouncer, whose search path starts with this JVM's schema: for migrations, which behind a
     * transaction-mode pooler can leave Flyway's session-level search path on a server connection;
     * the caller closes it.
     */
    public HikariDataSource newServerPool(int maxSize) {
        return newPool(url, maxSize, config -> config.addDataSourceProperty("currentSchema", schema));
    }

    /** A data source for {@link io.github.idemtx.db.IdempotencySchema}-style callers that want one. */
    public DataSource dataSource() {
        return newPool(4);
    }
}
