package io.github.idemtx.db.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One PostgreSQL server run with this machine's binaries, in a temporary directory of its own
 * (data directory, log, unix socket), listening on 127.0.0.1 on a given port; every command runs as
 * the {@code postgres} user when the JVM runs as root (PostgreSQL refuses root). Made by
 * {@code initdb} ({@link #initdb}) or copied from a running server by {@code pg_basebackup}
 * ({@link #baseBackupOf}). The local half of {@link ThrowawayCluster} and both servers of
 * {@link FailoverCluster}.
 */
final class LocalServer {

    static final String USER = ThrowawayCluster.USER;
    private static final long COMMAND_TIMEOUT_SECONDS = 120;

    private final Path bin;
    private final Path dir;
    private final Path data;
    private final Path logFile;
    private final int port;
    private final boolean asPostgres = ThrowawayCluster.runningAsRoot();
    private volatile boolean destroyed;

    /** Creates the directory (owned by {@code postgres} under root); nothing runs yet. */
    LocalServer(Path bin, String prefix, int port) {
        this.bin = bin;
        this.port = port;
        try {
            this.dir = Files.createTempDirectory(prefix);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for a throwaway PostgreSQL", e);
        }
        this.data = dir.resolve("data");
        this.logFile = dir.resolve("server.log");
        if (asPostgres) {
            try {
                giveToPostgres(dir);
            } catch (IOException e) {
                UncheckedIOException failure = new UncheckedIOException("cannot give " + dir + " to " + USER, e);
                try {
                    Files.delete(dir);
                } catch (IOException notDeleted) {
                    failure.addSuppressed(notDeleted);
                }
                throw failure;
            }
        }
    }

    /** A port on the loopback interface that nothing listens on now. */
    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free port", e);
        }
    }

    /** Initialises a new cluster ({@code initdb}), configured as {@link #settings} says plus {@code extra}. */
    void initdb(String extra) {
        // --no-sync only skips flushing what initdb wrote; the server itself runs with fsync on
        run(command(
                bin.resolve("initdb").toString(),
                "-D",
                data.toString(),
                "-A",
                "trust",
                "-U",
                USER,
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync"));
        append(data.resolve("postgresql.conf"), settings() + extra);
    }

    /**
     * Copies {@code source} (running) into this server's data directory with {@code pg_basebackup}
     * (a fast checkpoint, the WAL streamed alongside), creating the physical replication slot
     * {@code slot} on the source for it; then configures it as {@link #settings} says plus
     * {@code extra}, in {@code postgresql.auto.conf} so that these lines win over everything copied.
     */
    void baseBackupOf(LocalServer source, String slot, String extra) {
        run(command(
                bin.resolve("pg_basebackup").toString(),
                "-h",
                "127.0.0.1",
                "-p",
                Integer.toString(source.port),
                "-U",
                USER,
                "-D",
                data.toString(),
                "-c",
                "fast",
                "-X",
                "stream",
                "-C",
                "-S",
                slot,
                "--no-sync"));
        append(data.resolve("postgresql.auto.conf"), settings() + extra);
    }

    /** Creates an empty file in the data directory, e.g. {@code standby.signal}. */
    void touch(String name) {
        try {
            Path file = Files.createFile(data.resolve(name));
            if (asPostgres) {
                giveToPostgres(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + name + " in " + data, e);
        }
    }

    private String settings() {
        return """

                # throwaway cluster of a test
                port = %d
                listen_addresses = '127.0.0.1'
                unix_socket_directories = '%s'
                max_connections = 60
                fsync = on
                synchronous_commit = on
                full_page_writes = on
                logging_collector = off
                """.formatted(port, dir);
    }

    private static void append(Path file, String text) {
        try {
            Files.writeString(file, text, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot configure the throwaway cluster (" + file + ")", e);
        }
    }

    private static void giveToPostgres(Path path) throws IOException {
        UserPrincipalLookupService users = path.getFileSystem().getUserPrincipalLookupService();
        Files.setOwner(path, users.lookupPrincipalByName(USER));
    }

    /** Runs {@code pg_ctl <args>} against the server; fails with its output if it fails. */
    void pgCtl(String... args) {
        List<String> command = new ArrayList<>(
                List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-l", logFile.toString()));
        command.addAll(List.of(args));
        run(command(command.toArray(String[]::new)));
    }

    private List<String> command(String... args) {
        List<String> command = new ArrayList<>();
        if (asPostgres) {
            command.addAll(List.of("runuser", "-u", USER, "--"));
        }
        command.addAll(List.of(args));
        return command;
    }

    private void run(List<String> command) {
        String output;
        int exit;
        try {
            Process p = new ProcessBuilder(command)
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .start();
            p.getOutputStream().close();
            output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("timed out: " + String.join(" ", command) + "\n" + output);
            }
            exit = p.exitValue();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + String.join(" ", command), e);
        }
        if (exit != 0) {
            throw new IllegalStateException("failed (exit " + exit + "): " + String.join(" ", command) + "\n" + output
                    + "\nserver log:\n" + log());
        }
    }

    /** The postmaster, if {@code postmaster.pid} names a live process. */
    Optional<ProcessHandle> postmaster() {
        Path pidFile = data.resolve("postmaster.pid");
        try {
            if (!Files.exists(pidFile)) {
                return Optional.empty();
            }
            String first = Files.readAllLines(pidFile, StandardCharsets.UTF_8).stream()
                    .findFirst()
                    .orElse("")
                    .trim();
            return ProcessHandle.of(Long.parseLong(first)).filter(ProcessHandle::isAlive);
        } catch (IOException | NumberFormatException e) {
            return Optional.empty(); // being written or removed: as if absent
        }
    }

    /**
     * Kills the server like a power cut: the postmaster is stopped first (SIGSTOP: it forks nothing
     * more, restarts nothing and notices nothing), then every process it forked gets SIGKILL, then
     * the postmaster itself, so that no backend outlives it long enough to notice its death and tell
     * its client anything. Backends do not share the postmaster's process group, hence the list.
     * Waits until all are gone; a no-op when the server is not running.
     */
    void kill() {
        Optional<ProcessHandle> postmaster = postmaster();
        if (postmaster.isEmpty()) {
            return;
        }
        ProcessHandle pm = postmaster.get();
        signal("STOP", List.of(pm));
        List<ProcessHandle> all = new ArrayList<>(pm.children().toList());
        all.add(pm);
        signal("KILL", all);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (ProcessHandle p : all) {
            while (!gone(p)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "process " + p.pid() + " of " + description() + " outlived SIGKILL");
                }
                Thread.onSpinWait();
            }
        }
    }

    /** Whether the process has exited: a zombie counts (its parent is dead; reaping it is init's business, not ours). */
    private static boolean gone(ProcessHandle p) {
        if (!p.isAlive()) {
            return true;
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(p.pid()), "stat"), StandardCharsets.US_ASCII);
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            return state == 'Z' || state == 'X';
        } catch (IOException | RuntimeException e) {
            return true; // no such process any more (without /proc a zombie cannot be told apart: taken as gone)
        }
    }

    /** Sends {@code signal} to the processes with {@code kill}; only a failed SIGSTOP is an error. */
    static void signal(String signal, List<ProcessHandle> processes) {
        List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
        processes.forEach(p -> command.add(Long.toString(p.pid())));
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)
                    || (p.exitValue() != 0 && signal.equals("STOP"))) {
                throw new IllegalStateException("failed: " + String.join(" ", command) + "\n" + output);
            }
            // SIGKILL may find a backend that has just exited on its own: that one is gone either way
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + String.join(" ", command), e);
        }
    }

    int port() {
        return port;
    }

    String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    String description() {
        return "local cluster " + data + " on 127.0.0.1:" + port + " (" + bin + ")";
    }

    String log() {
        try {
            return Files.exists(logFile) ? Files.readString(logFile, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    Path directory() {
        return dir;
    }

    /**
     * Stops the server if it runs ({@code pg_ctl stop -m immediate}, else SIGKILL) and deletes the
     * directory. Idempotent; safe from a shutdown hook.
     */
    synchronized void destroy() {
        if (destroyed) {
            return;
        }
        destroyed = true;
        RuntimeException failure = null;
        if (postmaster().isPresent()) {
            try {
                pgCtl("stop", "-m", "immediate", "-w", "-t", "60");
            } catch (RuntimeException e) {
                try {
                    kill(); // it may have died just now, or pg_ctl failed: either way it must not outlive us
                } catch (RuntimeException notKilled) {
                    notKilled.addSuppressed(e);
                    failure = notKilled;
                }
            }
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            UncheckedIOException notDeleted = new UncheckedIOException("cannot delete " + dir, e);
            if (failure != null) {
                failure.addSuppressed(notDeleted);
            } else {
                failure = notDeleted;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
