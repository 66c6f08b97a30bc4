package io.github.idemtx.db.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;

/**
 * A primary and a streaming standby of one test's own on loopback, for tests that kill the primary
 * and promote the standby: never the shared server the other tests use. Built with this machine's
 * binaries ({@code initdb}, {@code pg_basebackup}, {@code pg_ctl}; found as {@link ThrowawayCluster}
 * finds them, run as {@code postgres} under root), each server in a temporary directory of its own
 * on a free port, the standby fed through a physical replication slot.
 *
 * <p>{@link Replication#SYNC}: the primary names the standby in {@code synchronous_standby_names},
 * so a commit is acknowledged only once the standby has it too (how far, says
 * {@code synchronous_commit}: {@code on}, flushed to its disk, by default). {@link Replication#ASYNC}:
 * the primary commits alone and the standby follows as fast as it can.
 *
 * <p>Clients connect with {@link #url()}: pgjdbc's multi-host URL naming both ports with
 * {@code targetServerType=primary}, so a new connection lands on whichever server is the primary
 * now. {@link #failover()} kills the primary (SIGKILL of every process, like a power cut) and
 * promotes the standby; {@link #attachStandby()} then copies the new primary into a new standby on
 * the dead server's port, so the URL names the pair again and the next failover can follow. The
 * promoted server runs alone until then: with SYNC its {@code synchronous_standby_names} names the
 * standby again only once the new one streams (else every commit would wait for it).
 *
 * <p>{@link #close()} kills both and deletes everything; a JVM shutdown hook does the same if a
 * test never gets to close it. Not thread-safe: one thread drives failovers; clients only connect.
 */
public final class FailoverCluster implements ReplicatedCluster {

    /** How the primary replicates to the standby. */
    public enum Replication {
        SYNC,
        ASYNC;

        /** {@code sync} or {@code async}, as a flag spells it. */
        public static Replication parse(String flag, String value) {
            return switch (value == null ? "" : value.trim().toLowerCase(Locale.ROOT)) {
                case "sync" -> SYNC;
                case "async" -> ASYNC;
                default -> throw new IllegalArgumentException(flag + " must be sync or async, was '" + value + "'");
            };
        }
    }

    /** The values of {@code synchronous_commit} that wait for the standby with SYNC replication. */
    public static final Set<String> SYNCHRONOUS_COMMITS = Set.of("on", "remote_apply", "remote_write");

    /** The standby's name: its {@code application_name} and its replication slot. */
    static final String STANDBY = "standby";

    /** What one {@link #failover()} did. */
    public record Failover(
            int killedPort, int promotedPort, long standbyLagBytes, long killMillis, long promoteMillis) {}

    private final Path bin;
    private final Replication replication;
    private final String synchronousCommit;
    private final int[] ports;
    private final Cleanup cleanup;
    private volatile LocalServer primary;
    private volatile LocalServer standby;
    private volatile boolean closed;

    private FailoverCluster(Path bin, Replication replication, String synchronousCommit) {
        this.bin = bin;
        this.replication = replication;
        this.synchronousCommit = synchronousCommit;
        int a = LocalServer.freePort();
        int b = LocalServer.freePort();
        while (b == a) {
            b = LocalServer.freePort();
        }
        this.ports = new int[] {a, b};
        this.cleanup = new Cleanup("a throwaway primary and standby", this::destroy);
    }

    /**
     * The PostgreSQL server binaries a primary and a standby can be run with ({@code initdb},
     * {@code pg_ctl}, {@code pg_basebackup}: a server installation, not the embedded server's, which
     * has no {@code pg_basebackup}); empty where this machine has none.
     */
    public static java.util.Optional<Path> binaries() {
        return ThrowawayCluster.localBinaries().filter(b -> Files.isExecutable(b.resolve("pg_basebackup")));
    }

    /**
     * Skips the calling test, saying how to install what it needs, where {@link #binaries()} finds
     * none; under CI ({@code CI} set, as .ci/run runs) the test runs and fails instead, since there
     * the binaries must be installed.
     */
    public static void assumeBinaries() {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                binaries().isPresent() || System.getenv("CI") != null,
                "skipped: a failover test needs PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup), which this"
                        + " machine lacks: install PostgreSQL (Debian: apt-get install postgresql; macOS: brew install"
                        + " postgresql), or name their directory in " + ThrowawayCluster.BIN_ENV);
    }

    /** {@link #start(Replication, String)} with {@code synchronous_commit = on}. */
    public static FailoverCluster start(Replication replication) {
        return start(replication, "on");
    }

    /**
     * Initialises a primary, starts it, copies it into a standby and starts that; returns once the
     * standby streams (with SYNC: once the primary counts it as its synchronous standby). The caller
     * closes it.
     *
     * @param synchronousCommit the servers' {@code synchronous_commit}: one of {@link #SYNCHRONOUS_COMMITS}
     */
    public static FailoverCluster start(Replication replication, String synchronousCommit) {
        if (!SYNCHRONOUS_COMMITS.contains(synchronousCommit)) {
            throw new IllegalArgumentException(
                    "synchronous_commit must be one of " + SYNCHRONOUS_COMMITS + ", was '" + synchronousCommit + "'");
        }
        Path bin = binaries().orElseThrow(() -> new IllegalStateException("""
                        No way to run a primary and a standby for a failover test: it needs PostgreSQL server binaries
                        (initdb, pg_ctl, pg_basebackup) in the directory pg_config --bindir names, under
                        /usr/lib/postgresql/<version>/bin, or in the directory named by %s
                        (as root, a 'postgres' user and runuser are needed too: PostgreSQL refuses root).""".formatted(ThrowawayCluster.BIN_ENV)));
        FailoverCluster cluster = new FailoverCluster(bin, replication, synchronousCommit);
        cluster.cleanup.onExit();
        cluster.cleanup.orRemove(() -> {
            LocalServer first = new LocalServer(bin, "idemtx-pg-primary-", cluster.ports[0]);
            cluster.primary = first;
            first.initdb("""
                    synchronous_commit = %s
                    synchronous_standby_names = ''
                    wal_level = replica
                    max_wal_senders = 4
                    max_replication_slots = 4
                    """.formatted(synchronousCommit));
            first.pgCtl("start", "-w", "-t", "90");
            cluster.attachStandby();
        });
        return cluster;
    }

    /** pgjdbc's multi-host URL of the {@code postgres} database on both ports, always reaching the primary. */
    @Override
    public String url() {
        return ReplicatedCluster.multiHostUrl(java.util.Arrays.stream(ports));
    }

    /** The URL of the current primary alone. */
    public String primaryUrl() {
        return primary.jdbcUrl();
    }

    @Override
    public String user() {
        return ThrowawayCluster.USER;
    }

    public Replication replication() {
        return replication;
    }

    public String synchronousCommit() {
        return synchronousCommit;
    }

    /** Whether a standby streams from the primary now (false between a failover and {@link #attachStandby()}). */
    public boolean hasStandby() {
        return standby != null;
    }

    /** For messages: both servers and the set-up. */
    @Override
    public String description() {
        return replication.name().toLowerCase(Locale.ROOT) + " replication (synchronous_commit=" + synchronousCommit
                + "), primary " + primary.description()
                + (standby == null ? ", no standby" : ", standby " + standby.description());
    }

    /** The servers' logs so far (the last {@code maxChars} characters of each), for failure messages. */
    @Override
    public String logTail(int maxChars) {
        StringBuilder out = new StringBuilder();
        for (LocalServer s : new LocalServer[] {primary, standby}) {
            if (s != null) {
                String log = s.log();
                out.append("--- ")
                        .append(s == primary ? "primary" : "standby")
                        .append(" on ")
                        .append(s.port())
                        .append('\n')
                        .append(log.length() <= maxChars ? log : "..." + log.substring(log.length() - maxChars));
            }
        }
        return out.toString();
    }

    /**
     * Bytes of WAL the primary has written that the standby has not yet flushed, as the primary
     * sees it now ({@code pg_stat_replication}); -1 without a standby.
     */
    public long standbyLagBytes() {
        if (standby == null) {
            return -1;
        }
        try (Connection c = connect(primary);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)::bigint"
                        + " FROM pg_stat_replication WHERE application_name = '" + STANDBY + "'")) {
            return rs.next() ? rs.getLong(1) : -1;
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read pg_stat_replication on the primary", e);
        }
    }

    /**
     * Kills the primary (every process, SIGKILL, at once) and promotes the standby, waiting until it
     * accepts writes; the dead server's directory is deleted. Afterwards there is no standby until
     * {@link #attachStandby()}.
     */
    public Failover failover() {
        requireOpen();
        if (standby == null) {
            throw new IllegalStateException("no standby to promote: attachStandby() first");
        }
        long lag = standbyLagBytes();
        LocalServer dead = primary;
        long t0 = System.nanoTime();
        dead.kill();
        long t1 = System.nanoTime();
        standby.pgCtl("promote", "-w", "-t", "60");
        long t2 = System.nanoTime();
        primary = standby;
        standby = null;
        dead.destroy();
        return new Failover(dead.port(), primary.port(), lag, (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000);
    }

    /**
     * Copies the primary into a new standby (on the port the URL names that the primary does not
     * use) and starts it; returns once it streams, and with SYNC once the primary names it as its
     * synchronous standby and counts it as such.
     */
    public void attachStandby() {
        requireOpen();
        if (standby != null) {
            throw new IllegalStateException("a standby is attached already");
        }
        int port = primary.port() == ports[0] ? ports[1] : ports[0];
        LocalServer next = new LocalServer(bin, "idemtx-pg-standby-", port);
        standby = next;
        // never synchronous_standby_names here: promoted, it would wait for a standby that is not there;
        // wal_retrieve_retry_interval: the primary gone, the default 5 s between attempts to reach it can
        // hold up a promotion that long
        next.baseBackupOf(primary, STANDBY, """
                synchronous_commit = %s
                synchronous_standby_names = ''
                primary_conninfo = 'host=127.0.0.1 port=%d user=%s application_name=%s'
                primary_slot_name = '%s'
                hot_standby = on
                wal_retrieve_retry_interval = 100ms
                """.formatted(
                        synchronousCommit, primary.port(), ThrowawayCluster.USER, STANDBY, STANDBY));
        next.touch("standby.signal");
        next.pgCtl("start", "-w", "-t", "90");
        awaitStandby("streaming", Duration.ofSeconds(60));
        if (replication == Replication.SYNC) {
            execute(primary, "ALTER SYSTEM SET synchronous_standby_names = '" + STANDBY + "'");
            execute(primary, "SELECT pg_reload_conf()");
            awaitStandby("sync", Duration.ofSeconds(60));
        }
    }

    /**
     * Waits until the standby has flushed all the WAL the primary has written (no load running: with
     * ASYNC, so that what the test set up before its load is on both servers).
     */
    public void awaitStandbyCaughtUp(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long lag;
        while ((lag = standbyLagBytes()) != 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "the standby still lags " + lag + " bytes after " + timeout.toSeconds() + " s");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for the standby", e);
            }
        }
    }

    /** Waits until the primary's pg_stat_replication shows the standby streaming, or sync ({@code "sync"}). */
    private void awaitStandby(String what, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "nothing";
        while (System.nanoTime() < deadline) {
            try (Connection c = connect(primary);
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT state, sync_state FROM pg_stat_replication"
                            + " WHERE application_name = '" + STANDBY + "'")) {
                if (rs.next()) {
                    last = rs.getString(1) + "/" + rs.getString(2);
                    if ("streaming".equals(rs.getString(1))
                            && ("streaming".equals(what) || what.equals(rs.getString(2)))) {
                        return;
                    }
                }
            } catch (SQLException e) {
                last = e.toString();
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for the standby", e);
            }
        }
        throw new IllegalStateException("the standby is not " + what + " after " + timeout.toSeconds()
                + " s (last seen: " + last + ")\n" + logTail(4000));
    }

    private static void execute(LocalServer server, String sql) {
        try (Connection c = connect(server);
                Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("failed on " + server.description() + ": " + sql, e);
        }
    }

    private static Connection connect(LocalServer server) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", ThrowawayCluster.USER);
        props.setProperty("connectTimeout", "5");
        props.setProperty("ApplicationName", "failover-cluster");
        return DriverManager.getConnection(server.jdbcUrl(), props);
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the cluster is closed");
        }
    }

    /** Kills both servers and deletes their directories. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        cleanup.now();
    }

    private void destroy() {
        RuntimeException failure = null;
        for (LocalServer s : new LocalServer[] {standby, primary}) {
            if (s == null) {
                continue;
            }
            try {
                s.destroy();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
