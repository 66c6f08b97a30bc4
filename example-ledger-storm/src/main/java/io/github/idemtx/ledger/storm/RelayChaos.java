package io.github.idemtx.ledger.storm;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The ledger's events relay SIGKILLed mid-batch: further relays of the events in child processes
 * ({@link StormRelay}: small batches, a lease of a second, a pause between each confirm and its mark),
 * {@value #RELAYS} at a time beside the ledger's own, SIGKILLed {@code kills} times in all during the
 * load, each started again at once under a new owner (the other one keeps relaying meanwhile, so a
 * kill never waits for a JVM to boot).
 *
 * <p>Each kill is due as the finished intents pass one of {@code kills} evenly spaced marks; it then
 * waits (up to {@value #AIM_MILLIS} ms, and no longer than the load) until one of the relays holds
 * leased rows, and kills that one (or, when none did in time, one of them; a kill still waiting when
 * the load ends is not made). Once the process is dead,
 * the rows of the storm's schema still leased by its owner and not delivered are counted: a kill that
 * left any landed mid-batch, between a lease and a mark. {@link #check} fails the storm when kills
 * were asked for and none landed mid-batch, when a message a killed relay held was not delivered
 * afterwards, or when a relay exited by itself.
 */
final class RelayChaos implements AutoCloseable {

    /** The relay processes running at once. */
    static final int RELAYS = 2;

    /**
     * A small relay's JVM: the quick compiler only and one GC thread, so that booting one again after
     * each kill takes little of the CPU the load runs on.
     */
    private static final List<String> JVM_OPTIONS =
            List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m", "-Xss512k");

    /** How long a due kill waits for a relay to hold a lease. */
    private static final long AIM_MILLIS = 10_000;

    private final StormDatabase database;
    private final SideDatabase db;
    private final String schema;
    private final String amqpUrl;
    private final int requested;
    private final String run = Long.toHexString(System.nanoTime());
    private int generation;
    private final Process[] processes = new Process[RELAYS];
    private final String[] owners = new String[RELAYS];
    final AtomicInteger kills = new AtomicInteger();
    final AtomicInteger midBatch = new AtomicInteger();
    final AtomicInteger heldRows = new AtomicInteger();
    private final Set<String> held = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final List<String> unexpectedExits = java.util.Collections.synchronizedList(new ArrayList<>());

    private RelayChaos(StormDatabase database, SideDatabase db, String schema, String amqpUrl, int kills) {
        this.database = database;
        this.db = db;
        this.schema = schema;
        this.amqpUrl = amqpUrl;
        this.requested = kills;
    }

    /** Starts the relay processes over the ledger's {@code schema} in {@code database}, to be killed {@code kills} times. */
    static RelayChaos start(StormDatabase database, SideDatabase db, String schema, String amqpUrl, int kills)
            throws IOException {
        RelayChaos chaos = new RelayChaos(database, db, schema, amqpUrl, kills);
        for (int i = 0; i < RELAYS; i++) {
            chaos.spawn(i);
        }
        return chaos;
    }

    private synchronized void spawn(int i) throws IOException {
        owners[i] = "storm-relay-" + run + "-" + ++generation;
        processes[i] = ChildProcesses.spawn(
                JVM_OPTIONS,
                owners[i],
                StormRelay.class.getName(),
                database,
                "--schema=" + schema,
                "--amqp-url=" + amqpUrl,
                "--owner=" + owners[i],
                "--lease-ms=1000",
                "--send-delay-ms=40",
                "--batch-size=5",
                "--poll-ms=25");
    }

    /**
     * Kills a relay as {@code done} of {@code total} intents pass each mark, while {@code running};
     * returns once every kill is made or the load ended.
     */
    void killDuringLoad(AtomicBoolean running, AtomicInteger done, int total, java.io.PrintStream progress) {
        try (Connection c = db.connect();
                PreparedStatement leased = c.prepareStatement("SELECT message_id FROM " + schema
                        + ".idempotency_outbox WHERE lease_owner = ? AND status = 'pending'")) {
            for (int k = 1; k <= requested && running.get(); k++) {
                while (running.get() && done.get() < (long) total * k / (requested + 1)) {
                    ChildProcesses.sleep(20);
                }
                long until = System.nanoTime() + AIM_MILLIS * 1_000_000;
                int target = -1;
                while (running.get() && target < 0) {
                    target = holding(leased);
                    if (target < 0 && System.nanoTime() > until) {
                        target = k % RELAYS; // none held a lease in time: a kill all the same, counted as such
                    } else if (target < 0) {
                        ChildProcesses.sleep(5);
                    }
                }
                if (!running.get()) {
                    return;
                }
                kill(target, leased, progress);
            }
        } catch (SQLException | IOException | RuntimeException e) {
            progress.println("storm: the relay kills stopped: " + e);
            unexpectedExits.add("the relay kills stopped: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The first relay that is alive and holds leased rows, or -1. */
    private int holding(PreparedStatement leased) throws SQLException {
        for (int i = 0; i < RELAYS; i++) {
            String owner;
            synchronized (this) {
                if (!processes[i].isAlive()) {
                    continue;
                }
                owner = owners[i];
            }
            if (!held(leased, owner).isEmpty()) {
                return i;
            }
        }
        return -1;
    }

    private static Set<String> held(PreparedStatement leased, String owner) throws SQLException {
        Set<String> ids = new HashSet<>();
        leased.setString(1, owner);
        try (ResultSet rs = leased.executeQuery()) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        }
        return ids;
    }

    /** SIGKILLs relay {@code i}, counts what its owner still holds, and starts the next one in its place. */
    private synchronized void kill(int i, PreparedStatement leased, java.io.PrintStream progress)
            throws SQLException, IOException, InterruptedException {
        Process process = processes[i];
        if (!process.isAlive()) {
            unexpectedExits.add(
                    owners[i] + " exited with " + process.exitValue() + " (" + ChildProcesses.logOf(process) + ")");
        } else {
            process.destroyForcibly().waitFor();
            Set<String> ids = held(leased, owners[i]);
            kills.incrementAndGet();
            if (!ids.isEmpty()) {
                midBatch.incrementAndGet();
                heldRows.addAndGet(ids.size());
                held.addAll(ids);
            }
            progress.println("storm: SIGKILLed the events relay " + owners[i] + " holding " + ids.size()
                    + " leased, undelivered events");
        }
        spawn(i);
    }

    /**
     * Adds to {@code results} the kills' counts and checks: that some landed mid-batch when kills were
     * asked for, that every event a killed relay held was delivered afterwards and reached the queue
     * ({@code seen}: the message ids the read model received), and that no relay exited by itself.
     */
    void check(Set<String> delivered, Set<String> seen, Map<String, Boolean> results, java.io.PrintStream progress) {
        synchronized (this) {
            for (int i = 0; i < RELAYS; i++) {
                if (!processes[i].isAlive()) {
                    unexpectedExits.add(owners[i] + " exited with " + processes[i].exitValue() + " ("
                            + ChildProcesses.logOf(processes[i]) + ")");
                }
            }
        }
        long redelivered = held.stream().filter(delivered::contains).count();
        long reached = held.stream().filter(seen::contains).count();
        progress.printf(
                "storm: relay kills: %d (of %d asked for), of them mid-batch: %d, holding %d leased events%n",
                kills.get(), requested, midBatch.get(), heldRows.get());
        results.put(
                "relay kills landed mid-batch (relay kills: " + kills.get() + ", of them mid-batch: " + midBatch.get()
                        + ", " + requested + " asked for)",
                requested == 0 || midBatch.get() > 0);
        results.put(
                "every event a killed relay held was delivered afterwards and reached the queue (" + redelivered
                        + " and " + reached + " of " + held.size() + ")",
                redelivered == held.size() && reached == held.size());
        results.put("the events relay processes exited only when killed " + unexpectedExits, unexpectedExits.isEmpty());
    }

    /** Kills the relay processes for good. */
    @Override
    public synchronized void close() {
        for (Process process : processes) {
            if (process != null) {
                process.destroyForcibly();
                try {
                    process.waitFor();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
