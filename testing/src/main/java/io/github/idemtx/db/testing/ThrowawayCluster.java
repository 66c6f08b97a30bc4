package io.github.idemtx.db.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.testcontainers.containers.Container;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * A PostgreSQL server of one test's own, for tests that stop, crash and restart it: never the
 * shared server the other tests use.
 *
 * <p>Resolved in this order:
 * <ol>
 *   <li>local binaries ({@code initdb}, {@code pg_ctl}) in {@code IDEMPOTENCY_TEST_PG_BIN}, else in
 *       {@code pg_config --bindir}, else in the newest {@code /usr/lib/postgresql/<version>/bin}, else
 *       the embedded server's own when the tests run on one ({@link LocalPostgres}): a
 *       cluster initialised in a fresh temporary directory, listening on 127.0.0.1 on a free port,
 *       its unix socket in that directory, run as the {@code postgres} user when the JVM runs as
 *       root (PostgreSQL refuses root);
 *   <li>a Testcontainers {@code postgres:15-alpine} container, when Docker answers, in which the
 *       server is run by {@code pg_ctl} so that stopping it leaves the container (and its mapped
 *       port) in place;
 *   <li>otherwise {@link #start()} fails with a message saying how to provide one.
 * </ol>
 * The cluster runs with {@code fsync} and {@code synchronous_commit} on: the tests that use it are
 * about which commits survive a restart or a crash. Authentication is {@code trust}, user
 * {@code postgres}, database {@code postgres}.
 *
 * <p>{@link #close()} stops the server (immediately) and deletes everything; a JVM shutdown hook
 * does the same if a test never gets to close it. Not thread-safe: one thread drives a cluster.
 */
public final class ThrowawayCluster implements AutoCloseable {

    /** How {@link #stop} shuts the server down, as {@code pg_ctl stop -m}. */
    public enum StopMode {
        /** Disconnects the clients, rolling back their transactions, then writes a shutdown checkpoint. */
        FAST,
        /** Kills every server process at once, like a crash: the next start replays the WAL. */
        IMMEDIATE;

        public String pgCtlName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public static final String BIN_ENV = "IDEMPOTENCY_TEST_PG_BIN";
    public static final String USER = "postgres";

    private final Backend backend;
    private final Cleanup cleanup;
    private boolean running;
    private boolean closed;

    private ThrowawayCluster(Backend backend) {
        this.backend = backend;
        this.cleanup = new Cleanup("a throwaway PostgreSQL", backend::destroy);
    }

    /** Initialises a new cluster and starts it; the caller closes it. */
    public static ThrowawayCluster start() {
        Backend backend = localBinaries().<Backend>map(LocalBackend::new).orElseGet(() -> {
            if (LocalPostgres.dockerAnswers()) {
                return new ContainerBackend();
            }
            throw new IllegalStateException("""
                    No way to run a throwaway PostgreSQL for a test that stops its server. Provide one of:
                      - PostgreSQL server binaries (initdb, pg_ctl): in the directory pg_config --bindir names, under
                        /usr/lib/postgresql/<version>/bin, or in the directory named by %s
                        (as root, a 'postgres' user and runuser are needed too: PostgreSQL refuses root);
                      - a running Docker, for Testcontainers to run postgres:15-alpine.""".formatted(BIN_ENV));
        });
        ThrowawayCluster cluster = new ThrowawayCluster(backend);
        cluster.cleanup.onExit();
        try {
            backend.init();
            cluster.startAgain();
        } catch (RuntimeException e) {
            cluster.closeQuietly(e);
            throw e;
        }
        return cluster;
    }

    /** The JDBC URL of the {@code postgres} database; the same across restarts. */
    public String jdbcUrl() {
        return backend.jdbcUrl();
    }

    public String user() {
        return USER;
    }

    /** Where the cluster runs, for messages. */
    public String description() {
        return backend.description();
    }

    public boolean running() {
        return running;
    }

    /** The directory holding the cluster on this machine; empty when it runs in a container. */
    public Optional<Path> directory() {
        return backend.directory();
    }

    /** Stops the server with {@code pg_ctl stop -m <mode>}, waiting until it is down. */
    public void stop(StopMode mode) {
        requireOpen();
        if (!running) {
            throw new IllegalStateException("the server is not running");
        }
        running = false; // whatever pg_ctl says, it may be half down: never assume it still runs
        backend.pgCtl("stop", "-m", mode.pgCtlName(), "-w", "-t", "60");
    }

    /** Starts the server again on the same data directory and port, waiting until it accepts connections. */
    public void startAgain() {
        requireOpen();
        if (running) {
            throw new IllegalStateException("the server is already running");
        }
        backend.pgCtl("start", "-w", "-t", "90");
        running = true;
    }

    /** The server's log so far (the last {@code maxChars} characters), for failure messages. */
    public String logTail(int maxChars) {
        String log = backend.log();
        return log.length() <= maxChars ? log : "..." + log.substring(log.length() - maxChars);
    }

    /** Stops the server immediately if it runs and deletes the cluster. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        running = false;
        cleanup.now();
    }

    private void closeQuietly(Throwable cause) {
        try {
            close();
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the cluster is closed");
        }
    }

    // ---------------------------------------------------------------- resolution

    /** The directory holding initdb and pg_ctl, if this machine can run them for us. */
    public static Optional<Path> localBinaries() {
        if (runningAsRoot() && !(userExists(USER) && onPath("runuser"))) {
            return Optional.empty();
        }
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv(BIN_ENV);
        if (env != null && !env.isBlank()) {
            candidates.add(Path.of(env));
        }
        pgConfigBindir().ifPresent(candidates::add);
        Path debian = Path.of("/usr/lib/postgresql");
        if (Files.isDirectory(debian)) {
            try (Stream<Path> versions = Files.list(debian)) {
                versions.map(v -> v.resolve("bin"))
                        .sorted(Comparator.comparing((Path p) -> majorVersion(p.getParent()))
                                .reversed())
                        .forEach(candidates::add);
            } catch (IOException e) {
                // unreadable: as if absent
            }
        }
        TestDatabase.embeddedBinaries().ifPresent(candidates::add); // initdb and pg_ctl, no pg_basebackup
        return candidates.stream()
                .filter(bin -> Files.isExecutable(bin.resolve("initdb")) && Files.isExecutable(bin.resolve("pg_ctl")))
                .findFirst();
    }

    private static int majorVersion(Path versionDir) {
        try {
            return Integer.parseInt(versionDir.getFileName().toString());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static Optional<Path> pgConfigBindir() {
        try {
            Process p = new ProcessBuilder("pg_config", "--bindir")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 && !out.isEmpty()
                    ? Optional.of(Path.of(out))
                    : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    static boolean runningAsRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static boolean userExists(String name) {
        try {
            Path.of("/").getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(name);
            return true;
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    static boolean onPath(String command) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String dir : path.split(java.io.File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, command))) {
                return true;
            }
        }
        return false;
    }

    // ---------------------------------------------------------------- backends

    private interface Backend {
        void init();

        /** Runs {@code pg_ctl <args>} against the cluster; fails with its output if it fails. */
        void pgCtl(String... args);

        String jdbcUrl();

        String description();

        String log();

        Optional<Path> directory();

        /** Stops the server if it runs and removes every trace of the cluster. */
        void destroy();
    }

    /** A cluster in a temporary directory, run with this machine's binaries. */
    private static final class LocalBackend implements Backend {
        private final LocalServer server;

        LocalBackend(Path bin) {
            this.server = new LocalServer(bin, "idemtx-pg-", LocalServer.freePort());
        }

        @Override
        public void init() {
            server.initdb("");
        }

        @Override
        public void pgCtl(String... args) {
            server.pgCtl(args);
        }

        @Override
        public String jdbcUrl() {
            return server.jdbcUrl();
        }

        @Override
        public String description() {
            return server.description();
        }

        @Override
        public String log() {
            return server.log();
        }

        @Override
        public Optional<Path> directory() {
            return Optional.of(server.directory());
        }

        @Override
        public void destroy() {
            server.destroy();
        }
    }

    /**
     * A container that only idles; the server inside it is initialised and started with pg_ctl, so
     * stopping the server keeps the container and its mapped port.
     */
    private static final class ContainerBackend implements Backend {
        private static final String DATA = "/tmp/pgdata";
        private static final String LOG = "/tmp/pgdata.log";
        private final GenericContainer<?> container;
        private volatile boolean destroyed;

        @SuppressWarnings("resource") // closed in destroy()
        ContainerBackend() {
            this.container = new GenericContainer<>(DockerImageName.parse("postgres:15-alpine"))
                    .withExposedPorts(5432)
                    .withCreateContainerCmdModifier(cmd -> cmd.withUser(USER).withEntrypoint("tail", "-f", "/dev/null"))
                    .waitingFor(Wait.forSuccessfulCommand("true"));
        }

        @Override
        public void init() {
            container.start();
            exec("initdb", "-D", DATA, "-A", "trust", "-U", USER, "-E", "UTF8", "--no-locale", "--no-sync");
            exec(
                    "sh",
                    "-c",
                    "printf '%s\\n' \"listen_addresses = '*'\" 'fsync = on' 'synchronous_commit = on'"
                            + " 'max_connections = 60' >> " + DATA + "/postgresql.conf"
                            + " && echo 'host all all all trust' >> " + DATA + "/pg_hba.conf");
        }

        @Override
        public void pgCtl(String... args) {
            List<String> command = new ArrayList<>(List.of("pg_ctl", "-D", DATA, "-l", LOG));
            command.addAll(List.of(args));
            exec(command.toArray(String[]::new));
        }

        private String exec(String... command) {
            try {
                Container.ExecResult r = container.execInContainerWithUser(USER, command);
                if (r.getExitCode() != 0) {
                    throw new IllegalStateException("failed (exit " + r.getExitCode() + "): "
                            + String.join(" ", command) + "\n" + r.getStdout() + r.getStderr());
                }
                return r.getStdout();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot run " + String.join(" ", command) + " in the container", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while running " + String.join(" ", command), e);
            }
        }

        @Override
        public String jdbcUrl() {
            return "jdbc:postgresql://" + container.getHost() + ":" + container.getMappedPort(5432) + "/postgres";
        }

        @Override
        public String description() {
            return "Testcontainers postgres:15-alpine " + container.getContainerId();
        }

        @Override
        public String log() {
            try {
                return exec("cat", LOG);
            } catch (RuntimeException e) {
                return "(unreadable: " + e.getMessage() + ")";
            }
        }

        @Override
        public Optional<Path> directory() {
            return Optional.empty();
        }

        @Override
        public synchronized void destroy() {
            if (!destroyed) {
                destroyed = true;
                container.stop();
            }
        }
    }
}
