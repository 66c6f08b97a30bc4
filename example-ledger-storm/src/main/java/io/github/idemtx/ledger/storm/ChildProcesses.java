package io.github.idemtx.ledger.storm;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** The storms' child processes (ledgers, the bank) on this JVM's class path, each logging to a file of its own. */
final class ChildProcesses {

    private ChildProcesses() {}

    /**
     * Starts {@code mainClass} with {@code args} and the flags that name {@code db}
     * ({@code --db-url}, and {@code --db-user} and {@code --db-password} when there are) in a new
     * JVM, its output appended to a temporary file named after {@code name}.
     */
    static Process spawn(String name, String mainClass, StormDatabase db, String... args) throws IOException {
        return spawn(List.of(), name, mainClass, db, args);
    }

    /** {@link #spawn(String, String, StormDatabase, String...)}, the JVM started with {@code jvmOptions}. */
    static Process spawn(List<String> jvmOptions, String name, String mainClass, StormDatabase db, String... args)
            throws IOException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(classPath());
        command.add(mainClass);
        command.addAll(List.of(args));
        command.add("--db-url=" + db.url());
        if (db.user() != null) { // else the URL's user parameter names it
            command.add("--db-user=" + db.user());
        }
        if (db.password() != null) {
            command.add("--db-password=" + db.password());
        }
        File log = File.createTempFile("storm-" + name + "-", ".log");
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
                .start();
        LOGS.put(process.pid(), log.toPath());
        return process;
    }

    private static final java.util.Map<Long, Path> LOGS = new java.util.concurrent.ConcurrentHashMap<>();

    /** Where {@code process}'s output went, and its last lines: for a report that must say why it exited. */
    static String logOf(Process process) {
        Path log = LOGS.get(process.pid());
        if (log == null) {
            return "(no log)";
        }
        try {
            List<String> lines = java.nio.file.Files.readAllLines(log);
            return log + ", ending: " + String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
        } catch (IOException e) {
            return log.toString();
        }
    }

    /** The class path this program runs with, also under exec:java, whose class loader is not the system one. */
    private static String classPath() {
        Set<String> entries = new LinkedHashSet<>();
        for (ClassLoader cl = ChildProcesses.class.getClassLoader(); cl != null; cl = cl.getParent()) {
            if (cl instanceof URLClassLoader u) {
                for (URL url : u.getURLs()) {
                    try {
                        entries.add(Path.of(url.toURI()).toString());
                    } catch (Exception e) {
                        // not a file: skip
                    }
                }
            }
        }
        if (entries.isEmpty()) {
            return System.getProperty("java.class.path");
        }
        return String.join(File.pathSeparator, entries);
    }

    /** Returns once {@code process} answers {@code GET /health} on {@code port}; fails if it exits or 60 s pass. */
    static void awaitHealth(HttpClient http, int port, Process process) throws IOException {
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < until) {
            if (!process.isAlive()) {
                throw new IOException("the process for port " + port + " exited with " + process.exitValue());
            }
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                                .timeout(Duration.ofSeconds(1))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not up yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            sleep(100);
        }
        throw new IOException("nothing answers on port " + port + " after 60 s");
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Sleeps, keeping an interrupt for the caller to see. */
    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
