package io.github.idemtx.ledger.storm;

import io.github.idemtx.ledger.Flags;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The payout storm's faults against the statement bank ({@code storm --payouts --bank=statement}):
 * the bank runs {@code --mode=statement} (no key, no lookup), the ledger {@code --bank-mode=statement}
 * with the storm's lag and poll, so each payout is marked sent before every send and settled by the
 * bank's camt.053 statements.
 *
 * <ul>
 *   <li>The bank's faults, switched every 0.3 to 1 s: a latency of at least {@value #LATENCY_MS} ms
 *       on every payment (so that sends are in flight), 503s before recording, answers lost after
 *       recording (the connection hangs {@value #HANG_MS} ms, then drops), declines, a booking delay,
 *       and late bookings, {@link PayoutStorm.Statement#lateBookingMs()} after receipt, well past the
 *       ledger's lag: a payout whose answer was lost and whose booking is late is found absent, sent
 *       again, and paid twice; the second line of its reference must be flagged.
 *   <li>The ledger SIGKILLed {@code --kills} times, as the finished intents pass evenly spaced marks,
 *       each kill aimed (up to {@value #AIM_MILLIS} ms) at a payout marked sent less than {@value
 *       #FRESH_MS} ms before. A kill lands between send and record when, once the ledger is dead,
 *       claims are still marked sent with a {@code sent_at} less than {@value #LATENCY_MS} ms before
 *       the kill: the bank answers no payment sooner, so the killed process had sent (or was about
 *       to send) each and had recorded no answer. {@link StatementPayoutChecks} fails the storm when
 *       kills were asked for and none landed so.
 *   <li>After the load, {@link #lateBookings}: payouts whose first answer is lost and whose booking
 *       is late, on purpose, so that double payments to detect occur whatever the chaos did.
 * </ul>
 */
final class StatementPayoutChaos extends PayoutChaos {

    /** The bank's least latency while storming: no payment is answered sooner after its send. */
    static final int LATENCY_MS = 300;
    /** How long the bank hangs on an answer it will not give, before it drops the connection. */
    static final int HANG_MS = 2500;
    /** A kill aims at a payout marked sent less than this before it. */
    private static final int FRESH_MS = 100;
    /** How long a due kill waits for a fresh send. */
    private static final long AIM_MILLIS = 3000;

    private final SideDatabase db;
    private final PayoutStorm.Statement statement;
    private volatile int done;
    private volatile int total;
    /** The chaos thread's connection: it aims the kills and counts what each left sent. */
    private Connection aim;
    /** The database's clock just before the current kill. */
    private OffsetDateTime killAt;
    /** For each kill, the claims it left sent and unrecorded, whose answer had not come. */
    final List<Integer> sentAtKills = Collections.synchronizedList(new ArrayList<>());

    StatementPayoutChaos(PayoutStorm.Options options, java.io.PrintStream progress, SideDatabase db)
            throws IOException {
        super(options, progress);
        this.db = db;
        this.statement = options.statement();
    }

    /**
     * {@code --bank=statement} and its flags, or null for {@code --bank=keyed} (the default); a flag
     * that does not fit is refused, naming it.
     */
    static PayoutStorm.Statement parse(Map<String, String> flags) {
        String bank = flags.getOrDefault("bank", "keyed");
        List<String> own = List.of("statement-lag-ms", "statement-poll-ms", "late-bookings");
        if (bank.equals("keyed")) {
            for (String name : own) {
                if (flags.containsKey(name)) {
                    throw new IllegalArgumentException("--" + name + " needs --bank=statement");
                }
            }
            return null;
        }
        if (!bank.equals("statement")) {
            throw new IllegalArgumentException("--bank must be keyed or statement, was '" + bank + "'");
        }
        if (flags.containsKey("reconcile")) {
            throw new IllegalArgumentException("--reconcile is a lookup outage of the keyed bank; the statement bank"
                    + " answers no lookup (with --bank=statement, --late-bookings makes double payments certain)");
        }
        return new PayoutStorm.Statement(
                Flags.intFlag(flags, "statement-lag-ms", 1500, 100, 600_000),
                Flags.intFlag(flags, "statement-poll-ms", 200, 10, 60_000),
                Flags.intFlag(flags, "late-bookings", 3, 0, 1000));
    }

    @Override
    List<String> bankFlags() {
        return List.of(
                "--mode=statement",
                "--hang-ms=" + HANG_MS,
                "--latency-ms=" + LATENCY_MS,
                "--late-booking-ms=" + statement.lateBookingMs());
    }

    @Override
    List<String> ledgerFlags() {
        return List.of(
                "--bank-mode=statement",
                "--statement-lag-ms=" + statement.lagMs(),
                "--statement-poll-ms=" + statement.pollMs());
    }

    /** The progress only: this storm's kills are the chaos thread's, each aimed at a send in flight. */
    @Override
    void killOnProgress(int done, int total) {
        this.total = total;
        this.done = done;
    }

    /** Switches the bank's faults every 0.3 to 1 s and SIGKILLs the ledger at the marks; then the kills left. */
    @Override
    void chaos(AtomicBoolean storming) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try (Connection c = db.connect();
                PreparedStatement fresh = c.prepareStatement("SELECT count(*) FROM " + options.ledgerSchema()
                        + ".idempotency_claim WHERE effect = 'payout' AND state = 5"
                        + " AND sent_at > clock_timestamp() - " + FRESH_MS + " * interval '1 millisecond'")) {
            aim = c;
            while (storming.get()) {
                bankFaults(Map.of(
                        "latencyMs", LATENCY_MS + random.nextInt(200),
                        "errorBeforeApplyRate", random.nextInt(3) == 0 ? 0.15 : 0,
                        "timeoutAfterApplyRate", random.nextInt(3) == 0 ? 0.2 : 0,
                        "declineRate", random.nextInt(4) == 0 ? 0.15 : 0,
                        "bookingDelayMs", random.nextInt(2) == 0 ? 200 : 0,
                        "lateBookingRate", random.nextInt(2) == 0 ? 0.3 : 0));
                long roundEnd = System.nanoTime() + (300 + random.nextInt(700)) * 1_000_000L;
                while (storming.get() && System.nanoTime() < roundEnd) {
                    if (killDue()) {
                        long until = System.nanoTime() + AIM_MILLIS * 1_000_000;
                        while (storming.get() && System.nanoTime() < until && count(fresh) == 0) {
                            Thread.sleep(5);
                        }
                        kill(false, 0);
                    } else {
                        Thread.sleep(20);
                    }
                }
            }
            while (kills.get() < options.kills()) { // the load ended first: the kills left, now
                kill(false, 0);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | SQLException e) {
            progress.println("payout storm: chaos stopped: " + e);
        } finally {
            aim = null;
        }
    }

    /** Whether the finished intents passed the next of {@code --kills} evenly spaced marks. */
    private boolean killDue() {
        int budget = options.kills();
        return total > 0 && kills.get() < budget && (long) done * (budget + 1) >= (long) total * (kills.get() + 1);
    }

    private static long count(PreparedStatement query) throws SQLException {
        try (ResultSet rs = query.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Override
    void beforeKill() throws IOException {
        try (PreparedStatement now = aim.prepareStatement("SELECT clock_timestamp()");
                ResultSet rs = now.executeQuery()) {
            rs.next();
            killAt = rs.getObject(1, OffsetDateTime.class);
        } catch (SQLException e) {
            throw new IOException("reading the database's clock before a kill failed", e);
        }
    }

    /** Counts the claims the dead ledger left sent whose answer cannot have come before the kill. */
    @Override
    void afterKill() throws IOException {
        try (PreparedStatement left = aim.prepareStatement("SELECT count(*) FROM " + options.ledgerSchema()
                + ".idempotency_claim WHERE effect = 'payout' AND state = 5"
                + " AND sent_at > ? - " + LATENCY_MS + " * interval '1 millisecond'")) {
            left.setObject(1, killAt);
            int n = (int) count(left);
            sentAtKills.add(n);
            progress.println("payout storm: SIGKILLed the ledger with " + n + " payout(s) sent and not recorded");
        } catch (SQLException e) {
            throw new IOException("counting the claims a kill left sent failed", e);
        }
    }

    /** The kills that left claims sent and not recorded. */
    int killsBetweenSendAndRecord() {
        synchronized (sentAtKills) {
            return (int) sentAtKills.stream().filter(n -> n > 0).count();
        }
    }

    /** The bank's faults off: nothing fails, nothing waits, everything is booked at once. */
    void calm() {
        bankFaults(Map.of(
                "latencyMs", 0,
                "errorBeforeApplyRate", 0,
                "timeoutAfterApplyRate", 0,
                "declineRate", 0,
                "bookingDelayMs", 0,
                "lateBookingRate", 0,
                "hangMs", HANG_MS));
    }

    /**
     * Double payments made certain, after the load: each of {@code wave} sent once while the bank
     * records every payment, books it late and loses the answer (it hangs 200 ms, then drops the
     * connection); then the faults stop, and each is asked until a final answer ({@code untilFinal},
     * into {@code answers}). The ledger finds each absent after its lag, sends it again with the same
     * reference, and the bank pays it at once; the late booking of the first send then shows the
     * reference a second time: a double payment, to be flagged.
     */
    void lateBookings(
            List<PayoutStorm.Intent> wave,
            Function<PayoutStorm.Intent, PayoutStorm.Answer> once,
            Function<PayoutStorm.Intent, PayoutStorm.Answer> untilFinal,
            Map<String, PayoutStorm.Answer> answers)
            throws Exception {
        if (wave.isEmpty()) {
            return;
        }
        bankFaults(Map.of("timeoutAfterApplyRate", 1, "lateBookingRate", 1, "hangMs", 200));
        Map<Integer, Integer> first = new java.util.TreeMap<>();
        try (ExecutorService clients = Executors.newFixedThreadPool(wave.size())) {
            List<Future<PayoutStorm.Answer>> sent = new ArrayList<>();
            wave.forEach(i -> sent.add(clients.submit(() -> once.apply(i))));
            for (Future<PayoutStorm.Answer> f : sent) {
                first.merge(f.get() == null ? 0 : f.get().status(), 1, Integer::sum);
            }
            calm();
            List<Future<?>> asked = new ArrayList<>();
            wave.forEach(i -> asked.add(clients.submit(() -> answers.put(i.key(), untilFinal.apply(i)))));
            for (Future<?> f : asked) {
                f.get();
            }
        }
        progress.println("payout storm: " + wave.size() + " late bookings after the load: first answers by status "
                + first + ", then " + PayoutChecks.answerCounts(wave, answers));
    }

    /**
     * Waits until no payout claim is in flight or sent (each settled, or at an operator) and every
     * payment the bank recorded, late bookings included, is booked before the end of the statements
     * the ledger applied; restarts the ledger if it is down. Null when so, else what was left when
     * the bound (a minute past the late bookings and two rounds of sends) ran out.
     */
    String awaitSettled() throws Exception {
        long boundMs = 60_000L + statement.lateBookingMs() + 4L * (statement.lagMs() + statement.pollMs() + 2000);
        long until = System.nanoTime() + boundMs * 1_000_000;
        String l = options.ledgerSchema();
        String left;
        do {
            ensureLedger();
            long open = db.count(
                    "SELECT count(*) FROM " + l + ".idempotency_claim WHERE effect = 'payout' AND state IN (3, 5)");
            long behind = db.count("SELECT count(*) FROM " + options.bankSchema() + ".payment WHERE booked_at >="
                    + " coalesce((SELECT max(period_to) FROM " + l + ".idempotency_statement"
                    + " WHERE effect = 'payout'), '-infinity')");
            if (open == 0 && behind == 0) {
                return null;
            }
            left = open + " payout claim(s) in flight or sent, " + behind
                    + " bank payment(s) not yet in a statement the ledger applied";
            Thread.sleep(250);
        } while (System.nanoTime() < until);
        return "not settled after " + Duration.ofMillis(boundMs).toSeconds() + " s: " + left;
    }
}
