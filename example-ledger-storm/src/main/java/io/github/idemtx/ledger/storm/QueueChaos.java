package io.github.idemtx.ledger.storm;

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
 * ({@code rabbitmqctl close_all_connections}). The kills and closes land as the accounted intents
 * pass evenly spaced marks, so all of them happen while messages flow, however fast the machine.
 */
final class QueueChaos {

    /** The exit statuses of the ledger's own halts (TransferQueue.HALT_BEFORE_ANSWER, HALT_BEFORE_ACK). */
    static final int HALT_BEFORE_ANSWER = 86;

    static final int HALT_BEFORE_ACK = 87;

    private final QueueStorm.Options options;
    private final java.io.PrintStream progress;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final Process[] consumers;
    private final boolean[] killed;
    final int[] ports;
    final AtomicInteger kills = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();
    final AtomicInteger haltsBeforeAnswer = new AtomicInteger();
    final AtomicInteger haltsBeforeAck = new AtomicInteger();
    final AtomicInteger restarts = new AtomicInteger();
    final List<String> unexpectedExits = new ArrayList<>();
    final List<String> closeFailures = new ArrayList<>();

    QueueChaos(QueueStorm.Options options, java.io.PrintStream progress) throws IOException {
        this.options = options;
        this.progress = progress;
        this.consumers = new Process[options.consumers()];
        this.killed = new boolean[options.consumers()];
        this.ports = new int[options.consumers()];
        for (int i = 0; i < ports.length; i++) {
            ports[i] = ChildProcesses.freePort();
        }
    }

    /** Starts every consumer process, one after the other (the first migrates the schema). */
    synchronized void start() throws IOException {
        for (int i = 0; i < consumers.length; i++) {
            startConsumer(i);
        }
    }

    private void startConsumer(int i) throws IOException {
        consumers[i] = ChildProcesses.spawn(
                "queue-ledger-" + i,
                "io.github.idemtx.ledger.LedgerServer",
                options.dbPassword(),
                "--port=" + ports[i],
                "--schema=" + options.schema(),
                "--db-url=" + options.dbUrl(),
                "--db-user=" + options.dbUser(),
                "--tokens=" + QueueStorm.TOKEN + "=" + QueueStorm.TENANT,
                "--pool-size=8",
                "--amqp-url=" + options.amqpUrl(),
                "--queue=" + options.queue(),
                "--queue-consumers=4",
                "--queue-prefetch=8",
                "--queue-fault-halt-every=" + options.haltEvery(),
                "--key-secret=" + QueueStorm.KEY_SECRET);
        killed[i] = false;
        ChildProcesses.awaitHealth(http, ports[i], consumers[i]);
        restarts.incrementAndGet();
    }

    /**
     * Restarts every consumer that exited by itself, counting why: a halt between a commit and its
     * acknowledgement, or anything else (which the report lists as a failure).
     */
    synchronized void reviveTheDead() throws IOException {
        for (int i = 0; i < consumers.length; i++) {
            Process p = consumers[i];
            if (p == null || p.isAlive() || killed[i]) {
                continue;
            }
            int status = p.exitValue();
            if (status == HALT_BEFORE_ANSWER) {
                haltsBeforeAnswer.incrementAndGet();
            } else if (status == HALT_BEFORE_ACK) {
                haltsBeforeAck.incrementAndGet();
            } else {
                unexpectedExits.add("consumer " + i + " exited with " + status);
            }
            startConsumer(i);
        }
    }

    /**
     * The faults due when {@code accounted} of {@code total} intents are accounted for: a SIGKILL
     * of a random consumer (restarted at once) as each of {@code --kills} evenly spaced marks is
     * passed, and a close of every broker connection as each of {@code --closes} marks is.
     */
    void onProgress(int accounted, int total) throws IOException, InterruptedException {
        int killMarks = (int) ((long) accounted * (options.kills() + 1) / total);
        while (kills.get() < Math.min(killMarks, options.kills())) {
            kill();
        }
        int closeMarks = (int) ((long) accounted * (options.closes() + 1) / total);
        while (closes.get() + closeFailures.size() < Math.min(closeMarks, options.closes())) {
            closeBrokerConnections();
        }
    }

    /** SIGKILLs a random consumer (mid-anything: a transaction, a publish, between a commit and an ack), restarts it. */
    private synchronized void kill() throws IOException, InterruptedException {
        reviveTheDead(); // a consumer that halted by itself is counted as such, not as this kill
        int i = ThreadLocalRandom.current().nextInt(consumers.length);
        killed[i] = true;
        consumers[i].destroyForcibly().waitFor();
        kills.incrementAndGet();
        Thread.sleep(100 + ThreadLocalRandom.current().nextInt(400));
        startConsumer(i);
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

    /** Whether any consumer is up (the storm waits for one before it judges a stall). */
    synchronized boolean anyAlive() {
        for (Process p : consumers) {
            if (p != null && p.isAlive()) {
                return true;
            }
        }
        return false;
    }

    /** Stops every consumer, as a SIGKILL. */
    synchronized void stop() throws InterruptedException {
        for (int i = 0; i < consumers.length; i++) {
            if (consumers[i] != null) {
                killed[i] = true;
                consumers[i].destroyForcibly().waitFor();
            }
        }
    }
}
