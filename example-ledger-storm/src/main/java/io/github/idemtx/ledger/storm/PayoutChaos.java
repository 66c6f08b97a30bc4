package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The payout storm's faults: the ledger and the bank simulator as child processes on this JVM's
 * class path; the ledger SIGKILLed {@code --kills} times (at random moments, and at the latest as the
 * finished intents pass evenly spaced marks) and restarted; the bank's faults switched on and off,
 * with lookup outages (no lookup answered for a while) among them. With the ledger's events on, it
 * runs with them ({@link PayoutEvents}), which note what each kill left undelivered.
 * {@link StatementPayoutChaos} is the same against the statement bank ({@code --bank=statement}).
 */
class PayoutChaos {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    final PayoutStorm.Options options;
    final java.io.PrintStream progress;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    final int ledgerPort;
    final int bankPort;
    /** The ledger's admin routes (loopback), where the storm's operator resolves claims. */
    final int adminPort;
    /** The ledger's admin token: the operator's (PayoutReconciler's) credential for the JSON routes. */
    final String adminToken = java.util.UUID.randomUUID().toString();

    private volatile Process ledger;
    private Process bank;
    final AtomicInteger kills = new AtomicInteger();
    final AtomicInteger restarts = new AtomicInteger();
    /** Rounds of the chaos in which no bank lookup was answered. */
    final AtomicInteger outages = new AtomicInteger();
    /** Kills left of {@code --kills}; spent under this object's lock (the chaos thread's and the progress kills). */
    private int killsLeft;
    /** The ledger's events, or null when they are off; set before {@link #start}. */
    PayoutEvents events;

    PayoutChaos(PayoutStorm.Options options, java.io.PrintStream progress) throws IOException {
        this.options = options;
        this.progress = progress;
        this.ledgerPort = ChildProcesses.freePort();
        this.bankPort = ChildProcesses.freePort();
        this.adminPort = ChildProcesses.freePort();
        this.killsLeft = options.kills();
    }

    /** Starts the bank (its schema recreated), then the ledger; each answers {@code /health} when this returns. */
    void start() throws IOException {
        List<String> flags =
                new ArrayList<>(List.of("--port=" + bankPort, "--fresh=true", "--schema=" + options.bankSchema()));
        flags.addAll(bankFlags());
        bank = ChildProcesses.spawn(
                "bank", "io.github.idemtx.ledger.bank.BankServer", options.db(), flags.toArray(String[]::new));
        ChildProcesses.awaitHealth(http, bankPort, bank);
        startLedger();
    }

    /** The bank's flags besides its port, schema and database: the keyed bank's hang past the ledger's deadline. */
    List<String> bankFlags() {
        return List.of("--hang-ms=6000");
    }

    /**
     * The ledger's flags besides its ports, tokens, schema, bank and pool: a short lookup schedule, so
     * that a lookup outage hands claims to reconciliation within the run.
     */
    List<String> ledgerFlags() {
        return List.of("--payout-lookups-ms=" + PayoutStorm.LOOKUPS_MS);
    }

    /** Called just before each SIGKILL of the ledger (under this object's lock). */
    void beforeKill() throws IOException {}

    /** Called as soon as a SIGKILLed ledger is dead, before it is started again (under this object's lock). */
    void afterKill() throws IOException {}

    /** Stops both processes, as a SIGKILL. */
    void stop() throws InterruptedException {
        if (ledger != null) {
            ledger.destroyForcibly().waitFor();
        }
        if (bank != null) {
            bank.destroyForcibly().waitFor();
        }
    }

    /** SIGKILLs the ledger every so often and restarts it; switches the bank's faults. */
    void chaos(AtomicBoolean storming) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try {
            while (storming.get()) {
                // lookups: an outage now and then (every lookup fails: 503, or hangs past the ledger's
                // timeout) long enough for the short lookup schedule to hand claims to reconciliation
                int lookups = random.nextInt(5);
                boolean outage = lookups == 0;
                if (outage) {
                    outages.incrementAndGet();
                }
                // in an outage, calls fail too (outcomes unknown) so that some claims meet it
                bankFaults(Map.of(
                        "errorBeforeApplyRate", outage ? 0.3 : random.nextInt(3) == 0 ? 0.15 : 0,
                        "timeoutAfterApplyRate", outage || random.nextInt(3) == 0 ? 0.15 : 0,
                        "declineRate", random.nextInt(3) == 0 ? 0.2 : 0,
                        "lookupLagMs", random.nextInt(2) == 0 ? 800 : 0,
                        "lookupErrorRate", outage ? 1 : lookups == 1 ? 0.3 : 0,
                        "lookupTimeoutRate", outage ? 0.2 : 0));
                Thread.sleep(outage ? 3000 + random.nextInt(2000) : 300 + random.nextInt(700));
                if (!storming.get()) {
                    return;
                }
                if (random.nextInt(10) < 6) {
                    kill(false, 0);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            progress.println("payout storm: chaos stopped: " + e);
        }
    }

    /**
     * A kill when the finished intents pass the next of {@code --kills} evenly spaced marks and
     * fewer kills than marks have happened: every kill of the budget lands while intents are still
     * being sent, however fast the machine runs them (the chaos thread's kills at random moments
     * spend the same budget).
     */
    void killOnProgress(int done, int total) throws IOException, InterruptedException {
        int budget = options.kills();
        int marks = (int) ((long) done * (budget + 1) / total); // the marks passed so far
        if (budget > 0 && kills.get() < marks) { // checked again under the lock; most calls stop here
            kill(true, marks);
        }
    }

    /**
     * SIGKILLs the ledger (no shutdown hook, requests in the middle of anything) and restarts it,
     * if kills are left and, {@code onProgress}, fewer than {@code marks} were made so far.
     */
    synchronized void kill(boolean onProgress, int marks) throws IOException, InterruptedException {
        if (killsLeft == 0 || (onProgress && kills.get() >= marks)) {
            return;
        }
        killsLeft--;
        beforeKill();
        ledger.destroyForcibly().waitFor();
        kills.incrementAndGet();
        afterKill();
        if (events != null) {
            events.afterKill(progress);
        }
        Thread.sleep(200 + ThreadLocalRandom.current().nextInt(600));
        startLedger();
    }

    void startLedger() throws IOException {
        List<String> flags = new ArrayList<>(List.of(
                "--port=" + ledgerPort,
                "--admin-port=" + adminPort,
                "--admin-token=" + adminToken,
                "--schema=" + options.ledgerSchema(),
                "--tokens=" + PayoutStorm.TOKEN + "=" + PayoutStorm.TENANT,
                "--bank-url=http://127.0.0.1:" + bankPort,
                "--bank-name=" + PayoutStorm.BANK,
                "--pool-size=16"));
        flags.addAll(ledgerFlags());
        if (events != null) {
            flags.addAll(events.ledgerArgs());
        }
        ledger = ChildProcesses.spawn(
                "ledger", "io.github.idemtx.ledger.LedgerServer", options.db(), flags.toArray(String[]::new));
        ChildProcesses.awaitHealth(http, ledgerPort, ledger);
        restarts.incrementAndGet();
    }

    void ensureLedger() throws IOException {
        if (ledger == null || !ledger.isAlive()) {
            startLedger();
        }
    }

    void bankFaults(Map<String, Object> faults) {
        try {
            http.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + bankPort + "/faults"))
                            .POST(HttpRequest.BodyPublishers.ofString(MAPPER.writeValueAsString(faults)))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            progress.println("payout storm: could not switch the bank's faults: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
