package io.github.idemtx.db.testing;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * A PgBouncer in transaction pooling mode, started for this test JVM on a free loopback port in
 * front of the resolved server, and stopped when the JVM exits.
 *
 * <p>Its settings make the pooler as unforgiving as it gets for a library that leaves session
 * state behind: a small pool of server connections shared by every client connection, handed out
 * round-robin, and never reset between clients ({@code server_reset_query} is not run in
 * transaction mode). A {@code SET}, a session-level advisory lock or a server-side prepared
 * statement left on a server connection would reach some other client's next transaction.
 *
 * <p>The executable is {@code pgbouncer} on the PATH or {@code /usr/sbin/pgbouncer}. PgBouncer
 * refuses to run as root, so under root it runs as {@code postgres}, or {@code nobody} where there
 * is no such user (its {@code -u} option; it reads its configuration before it switches). It runs
 * under a small shell that kills it as soon as the JVM's end of a pipe closes, so it never outlives
 * the JVM, however the JVM ends.
 */
final class PgBouncer {

    /**
     * Server connections PgBouncer keeps to the database, shared by all client connections of the
     * test JVM (the tests' pools hold up to 24). Three is the least some tests need at once (a
     * claim holder, a duplicate waiting on it inside the server, and the test polling
     * {@code pg_stat_activity} for that waiter); the rest is headroom so that the 16-thread
     * storms still have several transactions truly concurrent in the server while the other
     * clients queue in PgBouncer.
     */
    static final int DEFAULT_POOL_SIZE = 6;

    /** Overrides {@link #DEFAULT_POOL_SIZE}. */
    static final String POOL_SIZE_PROPERTY = "idemtx.test.pgbouncer.poolSize";

    /** The database name clients connect to; PgBouncer maps it to the real server and database. */
    static final String ALIAS = "idemtx";

    private static final List<String> UNPRIVILEGED_USERS = List.of("postgres", "nobody");

    private static final List<String> WELL_KNOWN_PATHS = List.of(
            "/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer");

    // Runs pgbouncer, and kills it as soon as stdin (a pipe from the JVM) reaches end of file: on
    // stop(), and also when the JVM dies without running its shutdown hooks.
    private static final String WATCHDOG = """
            exec 3<&0
            "$0" "$@" &
            pid=$!
            (read -r _ <&3; kill "$pid" 2>/dev/null) &
            watcher=$!
            wait "$pid"
            status=$?
            kill "$watcher" 2>/dev/null
            exit "$status"
            """;

    private final Process process;
    private final Path log;
    private final int port;
    private final int poolSize;
    private final String version;

    private PgBouncer(Process process, Path log, int port, int poolSize, String version) {
        this.process = process;
        this.log = log;
        this.port = port;
        this.poolSize = poolSize;
        this.version = version;
    }

    /**
     * Starts a PgBouncer in front of {@code server} whose server connections all have
     * {@code searchPath} as their search path, and registers its stop at JVM exit.
     *
     * @throws IllegalStateException when PgBouncer is not installed or does not come up
     */
    static PgBouncer start(ServerAddress server, String searchPath) {
        Path executable = findExecutable();
        int poolSize = Integer.getInteger(POOL_SIZE_PROPERTY, DEFAULT_POOL_SIZE);
        if (poolSize < 3) {
            throw new IllegalStateException(POOL_SIZE_PROPERTY + " must be at least 3 (some tests hold three server"
                    + " connections at once), was " + poolSize);
        }
        String version = version(executable);
        IllegalStateException last = null;
        for (int attempt = 1; attempt <= 3; attempt++) { // the free port may be taken before PgBouncer binds it
            try {
                PgBouncer bouncer = launch(executable, server, searchPath, poolSize, version);
                Runtime.getRuntime().addShutdownHook(new Thread(bouncer::stop, "stop-test-pgbouncer"));
                return bouncer;
            } catch (IllegalStateException e) {
                last = e;
            }
        }
        throw last;
    }

    /** Its files go to target/ of the module under test, where the log stays for a look, else to the temp dir. */
    private static PgBouncer launch(
            Path executable, ServerAddress server, String searchPath, int poolSize, String version) {
        Path dir;
        boolean keep = Files.isDirectory(Path.of("target"));
        try {
            dir = Files.createTempDirectory(
                    keep ? Path.of("target").toAbsolutePath() : Path.of(System.getProperty("java.io.tmpdir")),
                    "pgbouncer-");
        } catch (IOException e) {
            throw new IllegalStateException("cannot create a directory for PgBouncer's files", e);
        }
        int port = freeLoopbackPort();
        Path ini = dir.resolve("pgbouncer.ini");
        Path log = dir.resolve("pgbouncer.log");
        if (!keep) { // deleted in reverse order, after the shutdown hook that stops PgBouncer
            List.of(dir, ini, log).forEach(p -> p.toFile().deleteOnExit());
        }
        List<String> command = new ArrayList<>(List.of("sh", "-c", WATCHDOG, executable.toString()));
        if (runningAsRoot()) {
            command.addAll(List.of("-u", unprivilegedUser()));
        }
        command.add(ini.toString());
        Process process;
        try {
            Files.writeString(ini, ini(server, searchPath, port, poolSize), StandardCharsets.UTF_8);
            // no logfile in the ini: PgBouncer logs to stderr, which this JVM (not the unprivileged
            // user PgBouncer switches to) writes to the file
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start PgBouncer (" + executable + ")", e);
        }
        PgBouncer bouncer = new PgBouncer(process, log, port, poolSize, version);
        bouncer.awaitListening();
        return bouncer;
    }

    /**
     * The configuration. Every value that matters is spelt out rather than left to the default of
     * whichever PgBouncer version is installed.
     */
    static String ini(ServerAddress server, String searchPath, int port, int poolSize) {
        StringBuilder target = new StringBuilder()
                .append("host=")
                .append(quote(server.host()))
                .append(" port=")
                .append(server.port())
                .append(" dbname=")
                .append(quote(server.database()));
        if (server.user() != null) {
            target.append(" user=").append(quote(server.user()));
        }
        if (server.password() != null) {
            target.append(" password=").append(quote(server.password()));
        }
        // PgBouncer 1.18 refuses search_path as a startup parameter (pgjdbc's currentSchema), so the
        // search path is a property of the database entry: every server connection gets it once, when
        // PgBouncer opens it. It is the same for all clients, so it is not state left by one of them.
        target.append(" connect_query=").append(quote("SET search_path = " + searchPath));
        return """
                [databases]
                %s = %s

                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = %d
                ; no Unix socket: nothing outside this JVM's loopback port
                unix_socket_dir =
                ; the client's user name is ignored; every server connection logs in as the database entry says
                auth_type = any
                pool_mode = transaction
                ; a few server connections shared by all client connections (the tests' pools hold up to 24),
                ; never more: leftoverSessionState looks at each of them by holding that many at once
                default_pool_size = %d
                min_pool_size = 0
                reserve_pool_size = 0
                max_db_connections = %d
                max_client_conn = 500
                ; hand server connections out in turn rather than reusing the most recent one, so that
                ; consecutive transactions of one client land on different server connections
                server_round_robin = 1
                ; never clean a server connection between clients: state a transaction leaves behind
                ; must reach the next client, where the tests see it
                server_reset_query =
                server_reset_query_always = 0
                ; clients queue here while all server connections are in transactions: a 32-thread storm
                ; queues for seconds on a busy machine, so be generous: the tests' own 30 s waits should
                ; fail first, with clearer messages
                query_wait_timeout = 120
                ; pgjdbc sends it at start-up; PgBouncer 1.18 would refuse the connection otherwise
                ignore_startup_parameters = extra_float_digits
                ; for a server given by IDEMPOTENCY_TEST_DB_URL that wants TLS
                server_tls_sslmode = prefer
                ; the tests' pools open and close many client connections: log only what goes wrong
                log_connections = 0
                log_disconnections = 0
                """.formatted(ALIAS, target, port, poolSize, poolSize);
    }

    /** A value in a PgBouncer connection string: single-quoted, a quote inside doubled. */
    static String quote(String value) {
        return "'" + value.replace("'", "''") + "'";
    }

    /** The JDBC URL of the database behind this PgBouncer. */
    String jdbcUrl() {
        // PgBouncer before 1.21 cannot keep a prepared statement on the server connection a
        // client's next transaction lands on: pgjdbc must not prepare statements on the server.
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + ALIAS + "?prepareThreshold=0";
    }

    int poolSize() {
        return poolSize;
    }

    /** For messages: the version and where it listens. */
    String describe() {
        return version + " at 127.0.0.1:" + port + ", pool_mode=transaction, default_pool_size=" + poolSize + " (log: "
                + log + ")";
    }

    private void awaitListening() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("PgBouncer exited at start-up with status " + process.exitValue()
                        + "; its log (" + log + "):\n" + logText());
            }
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
                return;
            } catch (IOException notYet) {
                sleep(50);
            }
        }
        stop();
        throw new IllegalStateException(
                "PgBouncer did not listen on 127.0.0.1:" + port + " within 15 s; its log (" + log + "):\n" + logText());
    }

    /** Stops PgBouncer (closing the watchdog's pipe kills it) and waits for it to go. */
    void stop() {
        try {
            OutputStream stdin = process.getOutputStream();
            stdin.close();
        } catch (IOException ignored) {
            // the watchdog is gone already
        }
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private String logText() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    private static Path findExecutable() {
        List<Path> candidates = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            for (String entry : path.split(File.pathSeparator)) {
                if (!entry.isEmpty()) {
                    candidates.add(Path.of(entry, "pgbouncer"));
                }
            }
        }
        WELL_KNOWN_PATHS.forEach(p -> candidates.add(Path.of(p)));
        for (Path candidate : candidates) {
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException(
                """
                The database tests were asked to run through PgBouncer (-D%s=true), but no pgbouncer \
                executable is on the PATH or at /usr/sbin/pgbouncer. Install it (Debian and Ubuntu: \
                apt-get install pgbouncer; the package's own service need not run, the tests start one of \
                their own), or run without -D%s to test against the server directly.""".formatted(TestDatabase.PGBOUNCER_PROPERTY, TestDatabase.PGBOUNCER_PROPERTY));
    }

    private static String version(Path executable) {
        try {
            Process p = new ProcessBuilder(executable.toString(), "--version")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(10, TimeUnit.SECONDS);
            return out.lines().findFirst().orElse("PgBouncer").trim();
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + executable + " --version", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "PgBouncer";
        }
    }

    private static boolean runningAsRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static String unprivilegedUser() {
        UserPrincipalLookupService users = FileSystems.getDefault().getUserPrincipalLookupService();
        for (String name : UNPRIVILEGED_USERS) {
            try {
                users.lookupPrincipalByName(name);
                return name;
            } catch (IOException absent) {
                // try the next one
            }
        }
        throw new IllegalStateException("PgBouncer refuses to run as root, and there is no user "
                + String.join(" or ", UNPRIVILEGED_USERS) + " to run it as: run the tests as another user");
    }

    private static int freeLoopbackPort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("no free port on the loopback interface for PgBouncer", e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while PgBouncer started", e);
        }
    }

    /** Where PgBouncer connects to, parsed from a {@code jdbc:postgresql://host:port/database} URL. */
    record ServerAddress(String host, int port, String database, String user, String password) {

        static ServerAddress parse(String jdbcUrl, String user, String password) {
            String prefix = "jdbc:postgresql://";
            if (!jdbcUrl.toLowerCase(Locale.ROOT).startsWith(prefix)) {
                throw unsupported(jdbcUrl);
            }
            String rest = jdbcUrl.substring(prefix.length());
            int query = rest.indexOf('?');
            if (query >= 0) {
                rest = rest.substring(0, query); // PgBouncer's own connection carries no driver options
            }
            int slash = rest.indexOf('/');
            String hostPort = slash >= 0 ? rest.substring(0, slash) : rest;
            String database = slash >= 0 && slash < rest.length() - 1 ? rest.substring(slash + 1) : "postgres";
            if (hostPort.isEmpty() || hostPort.contains(",")) {
                throw unsupported(jdbcUrl);
            }
            String host = hostPort;
            int port = 5432;
            int colon = hostPort.lastIndexOf(':');
            if (colon > 0 && !hostPort.endsWith("]")) {
                host = hostPort.substring(0, colon);
                port = Integer.parseInt(hostPort.substring(colon + 1));
            }
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            return new ServerAddress(host, port, database, user, password);
        }

        private static IllegalStateException unsupported(String jdbcUrl) {
            return new IllegalStateException("cannot put PgBouncer in front of " + jdbcUrl
                    + ": expected jdbc:postgresql://host[:port][/database] with one host");
        }
    }
}
