package io.github.idemtx.db.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Three PostgreSQL servers managed by Patroni over one etcd, all of one test's own on loopback
 * ports and in temporary directories: the high-availability set-up operators run, for tests and
 * storms that fail it over under load. Built with this machine's {@code patroni} and {@code etcd}
 * (Debian: {@code apt-get install patroni etcd-server}) and its PostgreSQL server binaries (as
 * {@link FailoverCluster} finds them); Patroni runs as {@code postgres} under root.
 *
 * <p>Patroni decides, fences and rewinds; this class only asks it to or makes it have to:
 * <ul>
 *   <li>{@link Fault#SWITCHOVER}: an operator's switchover through the leader's REST API;
 *   <li>{@link Fault#KILL_POSTGRES}: SIGKILL of every process of the leader's PostgreSQL (Patroni
 *       lives; with {@code primary_start_timeout: 0} it fails over at once instead of restarting it);
 *   <li>{@link Fault#KILL_PATRONI}: SIGKILL of the leader's Patroni (its PostgreSQL keeps running
 *       as a primary nobody manages until the leader key's TTL runs out and a replica is promoted);
 *       then Patroni is started again, as its service manager would, and demotes and rewinds it.
 * </ul>
 * Each returns once the cluster is healthy again: one leader accepting writes, both replicas
 * streaming from it, and with a synchronous mode one of them its synchronous standby.
 *
 * <p>{@link SynchronousMode#ON} is Patroni's {@code synchronous_mode: true}: a commit is
 * acknowledged once a synchronous standby has it, only that standby may be promoted, and with no
 * healthy replica the leader commits alone. That last clause loses acknowledged commits here: a
 * Patroni killed on the leader and started again after the failover empties its old primary's
 * {@code synchronous_standby_names} before it demotes it, releasing the commits that waited there
 * (docs/reliability.md, "Failover under Patroni"). {@link SynchronousMode#STRICT} adds
 * {@code synchronous_mode_strict}: commits wait instead, and none acknowledged was lost.
 * {@link SynchronousMode#OFF}: asynchronous replication; a failover may lose what a replica had not
 * received, up to {@code maximum_lag_on_failover}, and a primary whose Patroni was killed keeps
 * acknowledging commits its successor never sees until it is demoted.
 *
 * <p>Clients connect with {@link #url()}: pgjdbc's multi-host URL naming the three ports with
 * {@code targetServerType=primary}. {@link #close()} stops everything and deletes the directories;
 * a JVM shutdown hook does the same if a test never gets to close it. Not thread-safe: one thread
 * drives the faults; clients only connect.
 */
public final class PatroniCluster implements ReplicatedCluster {

    /** Patroni's {@code synchronous_mode} (and {@code synchronous_mode_strict}). */
    public enum SynchronousMode {
        OFF,
        ON,
        STRICT;

        /** {@code off}, {@code on} or {@code strict}, as a flag spells it. */
        public static SynchronousMode parse(String flag, String value) {
            return switch (value == null ? "" : value.trim().toLowerCase(Locale.ROOT)) {
                case "off" -> OFF;
                case "on" -> ON;
                case "strict" -> STRICT;
                default -> throw new IllegalArgumentException(flag + " must be on, strict or off, was '" + value + "'");
            };
        }
    }

    /** What {@link #inject} does to the leader. */
    public enum Fault {
        SWITCHOVER,
        KILL_POSTGRES,
        KILL_PATRONI;

        /** For messages: what was done. */
        public String describe() {
            return switch (this) {
                case SWITCHOVER -> "switchover asked through the REST API";
                case KILL_POSTGRES -> "the leader's PostgreSQL SIGKILLed";
                case KILL_PATRONI -> "the leader's Patroni SIGKILLed";
            };
        }
    }

    /**
     * What one {@link #inject} did: the leader before and after, the replicas' largest lag just
     * before (bytes, from the leader's {@code pg_stat_replication}; -1 unknown), how long from the
     * fault until the new leader was out of recovery (a switchover's includes Patroni's REST call,
     * which polls once a second) and until the cluster was healthy again.
     */
    public record Change(
            Fault fault, String from, String to, long lagBytes, long newLeaderMillis, long healthyMillis) {}

    /** Members of the cluster. */
    static final int MEMBERS = 3;

    /**
     * The leader key's TTL, seconds: how long a leader whose Patroni died stays leader before a
     * replica may take over. Short for tests (Patroni's default is 30), and within Patroni's rule
     * {@code loop_wait + 2 * retry_timeout <= ttl}.
     */
    static final int TTL = 10;

    static final int LOOP_WAIT = 1;

    static final int RETRY_TIMEOUT = 4;

    /** A system property naming a directory to copy the members' logs to on {@link #close()}. */
    public static final String KEEP_LOGS = "idemtx.patroni.logs";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration HEALTHY_WITHIN = Duration.ofSeconds(120);

    private final Path bin;
    private final SynchronousMode mode;
    private final String scope;
    private final Path etcdDir;
    private final int etcdPort;
    private final int etcdPeerPort;
    private final List<Member> members = new ArrayList<>();
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Cleanup cleanup;
    private volatile Process etcd;
    private volatile boolean closed;
    private boolean destroyed; // guarded by this

    private PatroniCluster(Path bin, SynchronousMode mode) {
        this.bin = bin;
        this.mode = mode;
        this.scope = "idemtx-" + Long.toHexString(System.nanoTime());
        try {
            this.etcdDir = Files.createTempDirectory("idemtx-etcd-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for etcd", e);
        }
        List<Integer> ports = new ArrayList<>();
        while (ports.size() < 2 + 2 * MEMBERS) {
            int p = LocalServer.freePort();
            if (!ports.contains(p)) {
                ports.add(p);
            }
        }
        this.etcdPort = ports.get(0);
        this.etcdPeerPort = ports.get(1);
        for (int i = 0; i < MEMBERS; i++) {
            members.add(new Member("m" + i, ports.get(2 + 2 * i), ports.get(3 + 2 * i)));
        }
        this.cleanup = new Cleanup("a throwaway Patroni cluster", this::destroy);
    }

    /** What this machine lacks to run a Patroni cluster, for a message; empty when it has it all. */
    public static Optional<String> missing() {
        List<String> lacking = new ArrayList<>();
        if (executable("patroni").isEmpty()) {
            lacking.add("patroni");
        }
        if (executable("etcd").isEmpty()) {
            lacking.add("etcd");
        }
        if (FailoverCluster.binaries().isEmpty()) {
            lacking.add("PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup, pg_rewind)");
        }
        return lacking.isEmpty() ? Optional.empty() : Optional.of(String.join(", ", lacking));
    }

    /**
     * Skips the calling test, saying how to install what it lacks, where {@link #missing()} names
     * something; under CI ({@code CI} set, as .ci/run runs, which installs them) it runs and fails.
     */
    public static void assumeInstalled() {
        Optional<String> lacking = missing();
        org.junit.jupiter.api.Assumptions.assumeTrue(
                lacking.isEmpty() || System.getenv("CI") != null,
                () -> "skipped: a Patroni cluster needs " + lacking.orElse("") + ", which this machine lacks:"
                        + " install them (Debian: apt-get install patroni etcd-server postgresql; elsewhere pip install"
                        + " patroni[etcd3] and etcd from its releases)");
    }

    /**
     * Starts etcd and three Patroni members and returns once the cluster is healthy (a leader, two
     * streaming replicas, with a synchronous mode a synchronous standby). The caller closes it.
     */
    public static PatroniCluster start(SynchronousMode mode) {
        missing().ifPresent(lacking -> {
            throw new IllegalStateException("cannot run a Patroni cluster: this machine lacks " + lacking
                    + " (Debian: apt-get install patroni etcd-server postgresql)");
        });
        PatroniCluster cluster = new PatroniCluster(FailoverCluster.binaries().orElseThrow(), mode);
        cluster.cleanup.onExit();
        cluster.cleanup.orRemove(() -> {
            cluster.startEtcd();
            for (Member m : cluster.members) {
                m.start();
            }
            cluster.awaitHealthy(null, System.nanoTime());
        });
        return cluster;
    }

    /** pgjdbc's multi-host URL of the {@code postgres} database on the three members, reaching the leader. */
    @Override
    public String url() {
        return ReplicatedCluster.multiHostUrl(members.stream().mapToInt(m -> m.pgPort));
    }

    @Override
    public String user() {
        return ThrowawayCluster.USER;
    }

    public SynchronousMode mode() {
        return mode;
    }

    /** For messages: the set-up and who leads now. */
    @Override
    public String description() {
        return "Patroni cluster of " + MEMBERS + " over etcd, synchronous_mode "
                + mode.name().toLowerCase(Locale.ROOT) + ", ttl " + TTL + " s, loop_wait " + LOOP_WAIT
                + " s, primary_start_timeout 0; leader " + leaderName().orElse("(none)");
    }

    /** The name of the member holding the leader key with its PostgreSQL running, if one does now. */
    public Optional<String> leaderName() {
        return clusterState().flatMap(PatroniCluster::runningLeader);
    }

    /**
     * Does {@code fault} to the current leader and waits until the cluster is healthy again with
     * another leader (a switchover and a failover both move it).
     */
    public Change inject(Fault fault) {
        requireOpen();
        JsonNode before = clusterState()
                .orElseThrow(() -> new IllegalStateException("no member answers on its REST API\n" + logTail(3000)));
        String leader = runningLeader(before)
                .orElseThrow(() -> new IllegalStateException("no running leader to act on\n" + before));
        long lag = lagBytes(member(leader));
        Member m = member(leader);
        long t0 = System.nanoTime();
        switch (fault) {
            case SWITCHOVER -> m.switchover();
            case KILL_POSTGRES -> {
                if (m.server.postmaster().isEmpty()) {
                    throw new IllegalStateException("the leader " + leader + "'s PostgreSQL has no live postmaster"
                            + " (postmaster.pid) to kill\n" + logTail(3000));
                }
                m.server.kill();
            }
            case KILL_PATRONI -> m.killPatroni();
        }
        long newLeader = awaitNewLeader(leader, t0);
        if (fault == Fault.KILL_PATRONI) {
            m.start(); // as systemd's Restart= would: it finds another leader, demotes and rewinds its server
        }
        JsonNode after = awaitHealthy(leader, t0);
        String to = runningLeader(after).orElseThrow();
        return new Change(fault, leader, to, lag, (newLeader - t0) / 1_000_000, (System.nanoTime() - t0) / 1_000_000);
    }

    /** The members' Patroni logs (with their PostgreSQL's), the last {@code maxChars} characters of each. */
    @Override
    public String logTail(int maxChars) {
        StringBuilder out = new StringBuilder();
        for (Member m : members) {
            String log = read(m.log);
            out.append("--- ")
                    .append(m.name)
                    .append(" (postgres on ")
                    .append(m.pgPort)
                    .append(", REST on ")
                    .append(m.restPort)
                    .append(")\n")
                    .append(log.length() <= maxChars ? log : "..." + log.substring(log.length() - maxChars));
        }
        String etcdLog = read(etcdDir.resolve("etcd.log"));
        out.append("--- etcd\n")
                .append(
                        etcdLog.length() <= maxChars
                                ? etcdLog
                                : "..." + etcdLog.substring(etcdLog.length() - maxChars));
        return out.toString();
    }

    // ------------------------------------------------------------------ waiting

    private long awaitNewLeader(String old, long t0) {
        long deadline = t0 + HEALTHY_WITHIN.toNanos();
        String last = "nothing";
        while (System.nanoTime() < deadline) {
            Optional<JsonNode> state = clusterState();
            Optional<String> leader = state.flatMap(PatroniCluster::runningLeader);
            if (leader.isPresent() && !leader.get().equals(old) && writable(member(leader.get()))) {
                return System.nanoTime();
            }
            last = state.map(JsonNode::toString).orElse("no member answers");
            pause(100);
        }
        throw new IllegalStateException(
                "no new leader after " + HEALTHY_WITHIN.toSeconds() + " s (last seen: " + last + ")\n" + logTail(4000));
    }

    /**
     * Waits until a running leader (another than {@code old}, unless null) accepts writes and both
     * other members stream from it, one as its synchronous standby with a synchronous mode.
     */
    private JsonNode awaitHealthy(String old, long t0) {
        long deadline = t0 + HEALTHY_WITHIN.toNanos();
        String last = "nothing";
        while (System.nanoTime() < deadline) {
            Optional<JsonNode> state = clusterState();
            if (state.isPresent() && healthy(state.get(), old)) {
                return state.get();
            }
            last = state.map(JsonNode::toString).orElse("no member answers");
            pause(100);
        }
        throw new IllegalStateException("the cluster is not healthy after " + HEALTHY_WITHIN.toSeconds()
                + " s (last seen: " + last + ")\n" + logTail(4000));
    }

    private boolean healthy(JsonNode state, String old) {
        Optional<String> leader = runningLeader(state);
        if (leader.isEmpty() || leader.get().equals(old)) {
            return false;
        }
        int streaming = 0;
        int sync = 0;
        for (JsonNode m : state.path("members")) {
            String role = m.path("role").asText();
            String s = m.path("state").asText();
            if (role.equals("replica") || role.equals("sync_standby")) {
                if ((s.equals("streaming") || s.equals("running"))
                        && m.path("lag").canConvertToLong()) {
                    streaming++;
                }
                if (role.equals("sync_standby")) {
                    sync++;
                }
            }
        }
        return streaming == MEMBERS - 1
                && (mode == SynchronousMode.OFF || sync >= 1)
                && replicasStream(member(leader.get()))
                && writable(member(leader.get()));
    }

    /** Whether the leader's {@code pg_stat_replication} shows both other members streaming. */
    private static boolean replicasStream(Member leader) {
        try (Connection c = connect(leader);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")) {
            return rs.next() && rs.getInt(1) >= MEMBERS - 1;
        } catch (SQLException e) {
            return false;
        }
    }

    private static boolean writable(Member m) {
        try (Connection c = connect(m);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery()")) {
            return rs.next() && !rs.getBoolean(1);
        } catch (SQLException e) {
            return false;
        }
    }

    private static Optional<String> runningLeader(JsonNode state) {
        for (JsonNode m : state.path("members")) {
            if (m.path("role").asText().equals("leader")
                    && m.path("state").asText().equals("running")) {
                return Optional.of(m.path("name").asText());
            }
        }
        return Optional.empty();
    }

    /**
     * Bytes of WAL the leader has written that its furthest-behind replica has not flushed, as the
     * leader's {@code pg_stat_replication} says now (Patroni's own figure is as old as its last
     * loop); -1 when it cannot be read.
     */
    private static long lagBytes(Member leader) {
        try (Connection c = connect(leader);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(
                        "SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn))::bigint FROM pg_stat_replication")) {
            return rs.next() && rs.getObject(1) != null ? rs.getLong(1) : -1;
        } catch (SQLException e) {
            return -1;
        }
    }

    /** The cluster as the first member that answers its REST API sees it ({@code GET /cluster}). */
    private Optional<JsonNode> clusterState() {
        for (Member m : members) {
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + m.restPort + "/cluster"))
                                .timeout(Duration.ofSeconds(2))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return Optional.of(JSON.readTree(r.body()));
                }
            } catch (IOException e) {
                // this member's Patroni is down: ask the next
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted asking Patroni for the cluster", e);
            }
        }
        return Optional.empty();
    }

    private Member member(String name) {
        return members.stream()
                .filter(m -> m.name.equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no member named " + name));
    }

    private static Connection connect(Member m) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", ThrowawayCluster.USER);
        props.setProperty("connectTimeout", "2");
        props.setProperty("socketTimeout", "5");
        props.setProperty("ApplicationName", "patroni-cluster");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + m.pgPort + "/postgres", props);
    }

    // ------------------------------------------------------------------ processes

    private void startEtcd() {
        Path etcdBin = executable("etcd").orElseThrow();
        String peer = "http://127.0.0.1:" + etcdPeerPort;
        String client = "http://127.0.0.1:" + etcdPort;
        try {
            etcd = new ProcessBuilder(
                            etcdBin.toString(),
                            "--name",
                            "e0",
                            "--data-dir",
                            etcdDir.resolve("data").toString(),
                            "--listen-client-urls",
                            client,
                            "--advertise-client-urls",
                            client,
                            "--listen-peer-urls",
                            peer,
                            "--initial-advertise-peer-urls",
                            peer,
                            "--initial-cluster",
                            "e0=" + peer,
                            "--initial-cluster-state",
                            "new")
                    .directory(etcdDir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(etcdDir.resolve("etcd.log").toFile())
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start etcd", e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(URI.create(client + "/health"))
                                .timeout(Duration.ofSeconds(2))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200 && r.body().contains("true")) {
                    return;
                }
            } catch (IOException e) {
                // not up yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for etcd", e);
            }
            if (!etcd.isAlive()) {
                break;
            }
            pause(100);
        }
        throw new IllegalStateException("etcd did not come up on " + client + "\n" + read(etcdDir.resolve("etcd.log")));
    }

    /** One member: a directory of its own (owned by postgres under root), its Patroni and its PostgreSQL. */
    private final class Member {
        final String name;
        final int pgPort;
        final int restPort;
        final LocalServer server;
        final Path config;
        final Path log;
        volatile Process process;

        Member(String name, int pgPort, int restPort) {
            this.name = name;
            this.pgPort = pgPort;
            this.restPort = restPort;
            this.server = new LocalServer(bin, "idemtx-patroni-" + name + "-", pgPort);
            this.config = server.directory().resolve("patroni.yml");
            this.log = server.directory().resolve("patroni.log");
            write(config, config());
        }

        private String config() {
            Path dir = server.directory();
            String hba = """
                        - local all all trust
                        - host all all 127.0.0.1/32 trust
                        - host replication all 127.0.0.1/32 trust
                    """;
            return """
                    scope: %s
                    namespace: /idemtx/
                    name: %s
                    log:
                      level: INFO
                    restapi:
                      listen: 127.0.0.1:%d
                      connect_address: 127.0.0.1:%d
                    etcd3:
                      hosts: 127.0.0.1:%d
                    bootstrap:
                      dcs:
                        ttl: %d
                        loop_wait: %d
                        retry_timeout: %d
                        maximum_lag_on_failover: 1048576
                        primary_start_timeout: 0
                        synchronous_mode: %s
                        synchronous_mode_strict: %s
                        postgresql:
                          use_pg_rewind: true
                          use_slots: true
                          parameters:
                            wal_log_hints: 'on'
                            max_connections: 60
                            max_wal_senders: 10
                            max_replication_slots: 10
                            wal_keep_size: 256MB
                            synchronous_commit: 'on'
                      initdb:
                        - encoding: UTF8
                        - no-locale
                      pg_hba:
                    %s
                    postgresql:
                      listen: 127.0.0.1:%d
                      connect_address: 127.0.0.1:%d
                      data_dir: %s
                      bin_dir: %s
                      pgpass: %s
                      remove_data_directory_on_rewind_failure: true
                      remove_data_directory_on_diverged_timelines: true
                      authentication:
                        superuser:
                          username: %s
                          password: unused
                        replication:
                          username: %s
                          password: unused
                        rewind:
                          username: %s
                          password: unused
                      parameters:
                        unix_socket_directories: '%s'
                        fsync: 'on'
                        logging_collector: 'off'
                      pg_hba:
                    %s
                    tags:
                      nofailover: false
                      noloadbalance: false
                      clonefrom: false
                      nosync: false
                    """.formatted(
                            scope,
                            name,
                            restPort,
                            restPort,
                            etcdPort,
                            TTL,
                            LOOP_WAIT,
                            RETRY_TIMEOUT,
                            mode != SynchronousMode.OFF,
                            mode == SynchronousMode.STRICT,
                            hba.indent(4).stripTrailing(),
                            pgPort,
                            pgPort,
                            dir.resolve("data"),
                            bin,
                            dir.resolve("pgpass"),
                            ThrowawayCluster.USER,
                            ThrowawayCluster.USER,
                            ThrowawayCluster.USER,
                            dir,
                            hba.indent(2).stripTrailing());
        }

        void start() {
            synchronized (PatroniCluster.this) {
                if (destroyed) {
                    throw new IllegalStateException("the cluster is closed");
                }
                launch();
            }
        }

        private void launch() {
            List<String> command = new ArrayList<>();
            if (ThrowawayCluster.runningAsRoot()) {
                command.addAll(List.of("runuser", "-u", ThrowawayCluster.USER, "--"));
            }
            command.add(executable("patroni").orElseThrow().toString());
            command.add(config.toString());
            try {
                process = new ProcessBuilder(command)
                        .directory(server.directory().toFile())
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                        .start();
                process.getOutputStream().close();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot start Patroni for " + name, e);
            }
        }

        /** The Patroni process itself (under root, the child of {@code runuser}). */
        List<ProcessHandle> patroniProcesses() {
            Process p = process;
            if (p == null) {
                return List.of();
            }
            List<ProcessHandle> all = new ArrayList<>();
            all.add(p.toHandle());
            p.toHandle()
                    .descendants()
                    .filter(h ->
                            h.info().command().map(c -> !c.contains("postgres")).orElse(true))
                    .forEach(all::add);
            return all;
        }

        void killPatroni() {
            List<ProcessHandle> patroni = new ArrayList<>(patroniProcesses());
            // the deepest first: runuser would otherwise pass its own SIGKILL to nobody
            java.util.Collections.reverse(patroni);
            LocalServer.signal("KILL", patroni);
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("Patroni of " + name + " outlived SIGKILL");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted killing Patroni", e);
            }
        }

        void switchover() {
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + restPort + "/switchover"))
                                .timeout(Duration.ofSeconds(60))
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString("{\"leader\": \"" + name + "\"}"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                // 503 "status unknown": Patroni stopped polling (after 20 s) before the new leader
                // showed; whether it moved is the wait's to tell, as for every other fault
                if (r.statusCode() != 200 && !(r.statusCode() == 503 && r.body().contains("unknown"))) {
                    throw new IllegalStateException(
                            "Patroni refused the switchover from " + name + ": " + r.statusCode() + " " + r.body());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot ask " + name + " for a switchover", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted asking for a switchover", e);
            }
        }

        /** Patroni and everything it started still running (a pg_rewind, a pg_basebackup), then its PostgreSQL. */
        void destroy() {
            try {
                Process p = process;
                if (p != null) {
                    List<ProcessHandle> all =
                            new ArrayList<>(p.toHandle().descendants().toList());
                    all.add(p.toHandle());
                    all.removeIf(h -> !h.isAlive());
                    if (!all.isEmpty()) {
                        LocalServer.signal("KILL", all);
                    }
                }
            } finally {
                server.destroy();
            }
        }
    }

    // ------------------------------------------------------------------ closing

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the cluster is closed");
        }
    }

    /** Stops every member and etcd and deletes their directories. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        cleanup.now();
    }

    private synchronized void destroy() {
        if (destroyed) {
            return; // by close() and the shutdown hook both
        }
        destroyed = true;
        keepLogs();
        RuntimeException failure = null;
        for (Member m : members) {
            try {
                m.destroy();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        Process e = etcd;
        if (e != null) {
            e.destroyForcibly();
            try {
                e.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        try (Stream<Path> files = Files.walk(etcdDir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException notDeleted) {
            if (failure == null) {
                failure = new UncheckedIOException("cannot delete " + etcdDir, notDeleted);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * With the system property {@value #KEEP_LOGS} naming a directory, copies each member's Patroni
     * log (its PostgreSQL's included) and etcd's there before they are deleted: for finding out
     * afterwards what Patroni decided when.
     */
    private void keepLogs() {
        String to = System.getProperty(KEEP_LOGS);
        if (to == null || to.isBlank()) {
            return;
        }
        try {
            Path dir = Files.createDirectories(Path.of(to));
            for (Member m : members) {
                if (Files.exists(m.log)) {
                    Files.copy(m.log, dir.resolve(scope + "-" + m.name + ".log"), StandardCopyOption.REPLACE_EXISTING);
                }
            }
            Path etcdLog = etcdDir.resolve("etcd.log");
            if (Files.exists(etcdLog)) {
                Files.copy(etcdLog, dir.resolve(scope + "-etcd.log"), StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            System.err.println("could not keep the Patroni cluster's logs in " + to + ": " + e);
        }
    }

    // ------------------------------------------------------------------ small helpers

    private static Optional<Path> executable(String name) {
        String path = System.getenv("PATH");
        List<String> dirs = new ArrayList<>(path == null ? List.of() : List.of(path.split(java.io.File.pathSeparator)));
        dirs.add("/usr/bin");
        dirs.add("/usr/local/bin");
        return dirs.stream()
                .filter(d -> !d.isEmpty())
                .map(d -> Path.of(d, name))
                .filter(Files::isExecutable)
                .findFirst();
    }

    private static void write(Path file, String text) {
        try {
            Files.writeString(file, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the Patroni cluster", e);
        }
    }
}
