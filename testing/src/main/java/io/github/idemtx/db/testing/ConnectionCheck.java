package io.github.idemtx.db.testing;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Optional;
import java.util.Properties;
import org.postgresql.util.PSQLException;

/**
 * Tries one connection and, when it fails, says why in words a user can act on: nothing listens
 * there, the server refused the user, the database is missing, the server is too old. Each message
 * names the setting to change ({@link Settings}' variable names), never "no PostgreSQL answers" for
 * a server that answered.
 */
public final class ConnectionCheck {

    /** The oldest PostgreSQL major version the library supports (the db module's {@code IdempotencySchema}). */
    public static final int OLDEST_SUPPORTED_VERSION = 14;

    /** Why a connection could not be used. */
    public enum Problem {
        /** Nothing accepted a connection at that address (refused, unknown host, no route, no answer in time). */
        UNREACHABLE,
        /** A server answered but refused the user: wrong password, unknown role, no pg_hba.conf entry. */
        AUTHENTICATION,
        /** A server answered but has no database of that name. */
        DATABASE_MISSING,
        /** A PostgreSQL older than {@link #OLDEST_SUPPORTED_VERSION}, or a server that is not PostgreSQL. */
        UNSUPPORTED_SERVER,
        /** Anything else the server or the driver said. */
        OTHER
    }

    /**
     * The names of the settings a user changes, for messages: {@code LEDGER_DB_URL} and its
     * companions for the ledger, {@code IDEMPOTENCY_TEST_DB_URL} and its for the tests.
     */
    public record Settings(String urlVariable, String userVariable, String passwordVariable) {}

    /** A connection that could not be used: why, and the message that says it. */
    public record Failure(Problem problem, String message, Exception cause) {}

    private ConnectionCheck() {}

    /**
     * Connects to {@code url} (3 s to connect and to log in) and checks the server's version.
     *
     * @param user null: pgjdbc's default, the operating-system user (unless the URL names one)
     * @return empty when a connection was made to a supported PostgreSQL
     */
    public static Optional<Failure> check(String url, String user, String password, Settings settings) {
        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null) {
            props.setProperty("password", password);
        }
        props.setProperty("connectTimeout", "3");
        props.setProperty("loginTimeout", "3");
        props.setProperty("socketTimeout", "10");
        try (Connection c = DriverManager.getConnection(url, props)) {
            return unsupported(c.getMetaData(), url, settings);
        } catch (SQLException e) {
            return Optional.of(diagnose(e, url, user, settings));
        }
    }

    private static Optional<Failure> unsupported(DatabaseMetaData meta, String url, Settings settings)
            throws SQLException {
        String product = meta.getDatabaseProductName();
        int major = meta.getDatabaseMajorVersion();
        if (!"PostgreSQL".equalsIgnoreCase(product) || major < OLDEST_SUPPORTED_VERSION) {
            return Optional.of(new Failure(
                    Problem.UNSUPPORTED_SERVER,
                    "the server at " + url + " runs " + product + " "
                            + meta.getDatabaseProductVersion() + "; idemtx needs PostgreSQL " + OLDEST_SUPPORTED_VERSION
                            + " or newer: upgrade it, or set " + settings.urlVariable() + " to a newer server",
                    null));
        }
        return Optional.empty();
    }

    /** What {@code e}, thrown by connecting to {@code url} as {@code user}, means for the user. */
    public static Failure diagnose(SQLException e, String url, String user, Settings settings) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        String who = user != null
                ? "user '" + user + "'"
                : "user '" + System.getProperty("user.name") + "' (" + settings.userVariable()
                        + " is unset, so pgjdbc used the operating-system user)";
        String server = serverWords(e);
        if (state.equals("28P01") || state.equals("28000")) {
            return new Failure(
                    Problem.AUTHENTICATION,
                    "the server at " + url + " refused " + who + ": " + server
                            + " (SQLSTATE " + state + "); set " + settings.userVariable() + " and "
                            + settings.passwordVariable()
                            + " to a role it accepts",
                    e);
        }
        if (state.equals("3D000")) {
            return new Failure(
                    Problem.DATABASE_MISSING,
                    "the server at " + url + " answered, but " + server
                            + " (SQLSTATE 3D000): create it (createdb), or name an existing database in "
                            + settings.urlVariable(),
                    e);
        }
        Throwable io = ioCause(e);
        if (io != null || state.equals("08001") || state.equals("08004") && server.contains("refused")) {
            String why = io instanceof ConnectException
                    ? "connection refused: nothing listens there"
                    : io instanceof UnknownHostException
                            ? "unknown host " + io.getMessage()
                            : io instanceof NoRouteToHostException
                                    ? "no route to the host"
                                    : io instanceof SocketTimeoutException
                                            ? "no answer within 3 s"
                                            : String.valueOf(e.getMessage());
            return new Failure(
                    Problem.UNREACHABLE,
                    "no PostgreSQL answers at " + url + " (" + why + "): start one there," + " or set "
                            + settings.urlVariable() + " to one that runs",
                    e);
        }
        return new Failure(
                Problem.OTHER,
                "connecting to " + url + " as " + who + " failed: " + server
                        + (state.isEmpty() ? "" : " (SQLSTATE " + state + ")"),
                e);
    }

    /** The server's own words for {@code e}, else the driver's. */
    private static String serverWords(SQLException e) {
        if (e instanceof PSQLException p
                && p.getServerErrorMessage() != null
                && p.getServerErrorMessage().getMessage() != null) {
            return p.getServerErrorMessage().getMessage();
        }
        return String.valueOf(e.getMessage());
    }

    private static Throwable ioCause(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof ConnectException
                    || c instanceof UnknownHostException
                    || c instanceof NoRouteToHostException
                    || c instanceof SocketTimeoutException) {
                return c;
            }
        }
        return null;
    }
}
