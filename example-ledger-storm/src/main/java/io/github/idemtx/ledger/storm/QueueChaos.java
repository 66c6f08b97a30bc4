package io.github.idemtx.ledger.storm;

import io.github.idemtx.ledger.LedgerConfig;
import java.io.IOException;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code storm --queue}'s faults: the ledger's queue consumers as child processes, SIGKILLed
 * {@code --kills} times and restarted; each halting by itself between a commit and its
 * acknowledgement ({@code --queue-fault-halt-every}, exit status 86 before the answer, 87 after it)
 * and restarted; and the broker closing every client connection {@code --closes} times
 * ({@code rabbitmqctl close_all_connections}). The kills land as the accounted intents pass evenly
 * spaced marks, the closes as the published ones do, so all of them happen while messages flow,
 * however fast the machine.
 */
final class QueueChaos {

    private static final int HALT_BEFORE_ANSWER = LedgerConfig.Queue.HALT_BEFORE_ANSWER;
    private static final int HALT_BEFORE_ACK = LedgerConfig.Queue.HALT_BEFORE_ACK;

    private final QueueStorm.Options options;
    private final java.io.PrintStream progress;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Process[] consumers;
    private final boolean[] killed;
    private final boolean[] starting;
    private boolean stopping;
    final int[] ports;
    final AtomicInteger kills = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();
    final AtomicInteger haltsBeforeAnswer = new AtomicInteger();
    final AtomicInteger haltsBeforeAck = new AtomicInteger();
    final AtomicInteger restarts = new AtomicInteger();
    private volatile List<String> eventArgs = List.of();
    final List<String> unexpectedExits = java.util.Collections.synchronizedList(new ArrayList<>());
    final List<String> closeFailures = java.util.Collections.synchronizedList(new ArrayList<>());

    QueueChaos(QueueStorm.Options options, java.io.PrintStream progress) throws IOException {
        this.options = options;
        this.progress = progress;
        this.consumers = new Process[options.consumers()];
        this.killed = new boolean[options.consumers()];
        this.starting = new boolean[options.consumers()];
        this.ports = new int[options.consumers()];
        for (int i = 0; i < ports.length; i++) {
            ports[i] = ChildProcesses.freePort();
        }
    }

    /** Starts every consumer process, one after the other (the first migrates the schema). */
    void start() throws IOException {
        for (int i = 0; i < consumers.length; i++) {
            Process p;
            synchronized (this) {
                p = spawnConsumer(i);
            }
            ChildProcesses.awaitHealth(http, ports[i], p);
            restarts.incrementAndGet();
        }
    }

    /** The ledger's events flags ({@link StormEvents#exchangeArgs}) for the processes started from now on. */
    void announceOn(List<String> args) {
        eventArgs = List.copyOf(args);
    }

    private Process spawnConsumer(int i) throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "--port=" + ports[i],
                "--schema=" + options.schema(),
                "--tokens=" + QueueStorm.TOKEN + "=" + QueueStorm.TENANT,
                "--pool-size=8",
                "--amqp-url=" + options.amqpUrl(),
                "--queue=" + options.queue(),
                "--queue-consumers=4",
                "--queue-prefetch=8",
                "--queue-fault-halt-every=" + options.haltEvery(),
                "--key-secret=" + QueueStorm.KEY_SECRET));
        args.addAll(eventArgs);
        consumers[i] = ChildProcesses.spawn(
                "queue-ledger-" + i, "io.github.idemtx.ledger.LedgerServer", options.db(), args.toArray(String[]::new));
        killed[i] = false;
        return consumers[i];
    }

    /**
     * Starts consumer {@code i} again after {@code delayMillis}, on a thread of its own (a start
     * takes seconds: the storm's loop must not wait for it); the slot counts as starting until the
     * new process is spawned, and may be killed from then on, even while it boots.
     */
    private void restartLater(int i, long delayMillis) {
        starting[i] = true;
        Thread.ofVirtual().name("queue-storm-restart-" + i).start(() -> {
            ChildProcesses.sleep(delayMillis);
            Process p;
            synchronized (this) {
                starting[i] = false;
                if (stopping) {
                    return;
                }
                try {
                    p = spawnConsumer(i);
                } catch (IOException e) {
                    unexpectedExits.add("consumer " + i + " could not be started again: " + e.getMessage());
                    return;
                }
            }
            try {
                ChildProcesses.awaitHealth(http, ports[i], p);
                restarts.incrementAndGet();
            } catch (IOException e) {
                // it exited while it booted: killed (kill() restarts it) or by itself (reviveTheDead counts why)
            }
        });
    }

    /**
     * Restarts every consumer that exited by itself, counting why: a halt between a commit and its
     * acknowledgement, or anything else (which the report lists as a failure).
     */
    synchronized void reviveTheDead() {
        for (int i = 0; i < consumers.length; i++) {
            Process p = consumers[i];
            if (p == null || p.isAlive() || killed[i] || starting[i] || stopping) {
                continue;
            }
            int status = p.exitValue();
            if (status == HALT_BEFORE_ANSWER) {
                haltsBeforeAnswer.incrementAndGet();
            } else if (status == HALT_BEFORE_ACK) {
                haltsBeforeAck.incrementAndGet();
            } else {
                unexpectedExits.add("consumer " + i + " exited with " + status + " (" + ChildProcesses.logOf(p) + ")");
            }
            restartLater(i, 0);
        }
    }

    /**
     * The kills due when {@code accounted} of {@code total} intents are accounted for: a SIGKILL of
     * a random consumer (restarted at once) as the accounted pass each of {@code --kills} evenly
     * spaced marks.
     */
    void onProgress(int accounted, int total) throws InterruptedException {
        int killMarks = (int) ((long) accounted * (options.kills() + 1) / total);
        while (kills.get() < Math.min(killMarks, options.kills()) && kill()) {
            // the next mark, if passed too
        }
    }

    /**
     * Runs on a thread of its own (a consumer's restart takes seconds): closes every broker
     * connection as the published intents pass each of {@code --closes} evenly spaced marks, while
     * the producer publishes, until {@code done}.
     */
    void closeOnPublishing(
            java.util.function.IntSupplier published, int total, java.util.function.BooleanSupplier done) {
        try {
            while (!done.getAsBoolean() && closes.get() + closeFailures.size() < options.closes()) {
                int marks = (int) ((long) published.getAsInt() * (options.closes() + 1) / total);
                if (closes.get() + closeFailures.size() < Math.min(marks, options.closes())) {
                    closeBrokerConnections();
                } else {
                    Thread.sleep(20);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * SIGKILLs a random running consumer (mid-anything: booting, a transaction, a publish, between a
     * commit and an ack) and has it restarted; false, killing nothing, when no process is up (then
     * no message is being consumed either).
     */
    private synchronized boolean kill() throws InterruptedException {
        reviveTheDead(); // a consumer that halted by itself is counted as such, not as this kill
        List<Integer> running = new ArrayList<>();
        for (int i = 0; i < consumers.length; i++) {
            if (consumers[i] != null && consumers[i].isAlive()) {
                running.add(i);
            }
        }
        if (running.isEmpty()) {
            return false;
        }
        int i = running.get(ThreadLocalRandom.current().nextInt(running.size()));
        killed[i] = true;
        consumers[i].destroyForcibly().waitFor();
        kills.incrementAndGet();
        restartLater(i, 100 + ThreadLocalRandom.current().nextInt(400));
        return true;
    }

    /** Has the broker close every client connection, the storm's own included; each client recovers. */
    private void closeBrokerConnections() throws InterruptedException {
        try {
            Process p = new ProcessBuilder("rabbitmqctl", "close_all_connections", "storm --queue: a broker fault")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                closeFailures.add("rabbitmqctl close_all_connections failed: " + out);
                progress.println("queue storm: could not close the broker's connections: " + out);
                return;
            }
            closes.incrementAndGet();
            progress.println("queue storm: the broker closed every client connection");
        } catch (IOException e) {
            closeFailures.add("rabbitmqctl: " + e.getMessage());
            progress.println("queue storm: cannot close the broker's connections (" + e.getMessage()
                    + "): rabbitmqctl must be on the PATH and allowed to reach the node");
        }
    }

    /** Stops every consumer, as a SIGKILL; no restart starts one after this. */
    synchronized void stop() throws InterruptedException {
        stopping = true;
        for (int i = 0; i < consumers.length; i++) {
            if (consumers[i] != null) {
                killed[i] = true;
                consumers[i].destroyForcibly().waitFor();
            }
        }
    }
}
