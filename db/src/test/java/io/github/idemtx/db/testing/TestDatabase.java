package io.github.idemtx.db.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * The PostgreSQL the database tests run against, resolved once per test JVM in this order:
 *
 * <ol>
 *   <li>the JDBC URL in {@code IDEMPOTENCY_TEST_DB_URL} (with {@code IDEMPOTENCY_TEST_DB_USER} and
 *       {@code IDEMPOTENCY_TEST_DB_PASSWORD});
 *   <li>a server at 127.0.0.1:5432, user {@code postgres}, when one answers;
 *   <li>a Testcontainers container, when Docker answers;
 *   <li>otherwise every database test fails with a message saying how to provide one.
 * </ol>
 *
 * <p>Each JVM works in a schema of its own ({@code idemtx_test_<random>}), created here and dropped
 * when the JVM exits; the migrations are applied to it by whoever needs them.
 */
public final class TestDatabase {

    public static final String URL_ENV = "IDEMPOTENCY_TEST_DB_URL";
    public static final String USER_ENV = "IDEMPOTENCY_TEST_DB_USER";
    public static final String PASSWORD_ENV = "IDEMPOTENCY_TEST_DB_PASSWORD";
    static final String LOCAL_URL = "jdbc:postgresql://127.0.0.1:5432/postgres";

    private static TestDatabase instance;
    private static RuntimeException failure;

    private final String url;
    private final String user;
    private final String password;
    private final String schema;
    private final String origin;

    private TestDatabase(String url, String user, String password, String origin) {
        this.url = url;
        this.user = user;
        this.password = password;
        this.origin = origin;
        this.schema = "idemtx_test_" + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
    }

    /** The database of this test JVM, resolved and prepared on first use. */
    public static synchronized TestDatabase get() {
        if (instance != null) {
            return instance;
        }
        if (failure != null) {
            throw failure;
        }
        try {
            TestDatabase db = resolve();
            db.createSchema();
            Runtime.getRuntime().addShutdownHook(new Thread(db::dropSchema, "drop-test-schema"));
            instance = db;
            return db;
        } catch (RuntimeException e) {
            failure = e;
            throw e;
        }
    }

    private static TestDatabase resolve() {
        String url = System.getenv(URL_ENV);
        if (url != null && !url.isBlank()) {
            return new TestDatabase(url, System.getenv(USER_ENV), System.getenv(PASSWORD_ENV), URL_ENV);
        }
        if (answers(LOCAL_URL, "postgres", null)) {
            return new TestDatabase(LOCAL_URL, "postgres", null, "local server at 127.0.0.1:5432");
        }
        if (dockerAnswers()) {
            PostgreSQLContainer container = new PostgreSQLContainer("postgres:15-alpine");
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "stop-test-postgres"));
            return new TestDatabase(container.getJdbcUrl(), container.getUsername(), container.getPassword(), "Testcontainers");
        }
        throw new IllegalStateException("""
                No PostgreSQL for the database tests. Provide one of:
                  - IDEMPOTENCY_TEST_DB_URL=jdbc:postgresql://host:port/db (with IDEMPOTENCY_TEST_DB_USER and
                    IDEMPOTENCY_TEST_DB_PASSWORD), a database where the user may create schemas;
                  - a PostgreSQL at 127.0.0.1:5432 accepting user 'postgres' without a password;
                  - a running Docker, for Testcontainers to start postgres:15-alpine.""");
    }

    private static boolean answers(String url, String user, String password) {
        Properties props = credentials(user, password);
        props.setProperty("connectTimeout", "3");
        props.setProperty("loginTimeout", "3");
        try (Connection c = DriverManager.getConnection(url, props)) {
            return c.isValid(3);
        } catch (SQLException e) {
            return false;
        }
    }

    private static boolean dockerAnswers() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
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

    /** The JDBC URL of the server (not of a schema). */
    public String url() {
        return url;
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

    /** A new direct connection (not pooled), in autocommit mode; the caller closes it. */
    public Connection connect() throws SQLException {
        return DriverManager.getConnection(url, credentials(user, password));
    }

    /**
     * A new HikariCP pool of up to {@code maxSize} connections whose search path starts with this
     * JVM's schema; the caller closes it.
     */
    public HikariDataSource newPool(int maxSize) {
        return newPool(maxSize, config -> {});
    }

    /** Like {@link #newPool(int)}, with a last say on the configuration. */
    public HikariDataSource newPool(int maxSize, java.util.function.Consumer<HikariConfig> customizer) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        if (user != null) {
            config.setUsername(user);
        }
        if (password != null) {
            config.setPassword(password);
        }
        config.setMaximumPoolSize(maxSize);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(30_000);
        config.setPoolName("test-" + schema);
        config.addDataSourceProperty("currentSchema", schema);
        customizer.accept(config);
        return new HikariDataSource(config);
    }

    /** Runs one statement in autocommit mode on a fresh connection. */
    public void execute(String sql) {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("test database statement failed: " + sql, e);
        }
    }

    private void createSchema() {
        execute("CREATE SCHEMA " + schema);
    }

    private void dropSchema() {
        try {
            execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        } catch (RuntimeException e) {
            System.err.println("could not drop test schema " + schema + ": " + e.getMessage().toLowerCase(Locale.ROOT));
        }
    }

    /** A data source for {@link io.github.idemtx.db.IdempotencySchema}-style callers that want one. */
    public DataSource dataSource() {
        return newPool(4);
    }
}
