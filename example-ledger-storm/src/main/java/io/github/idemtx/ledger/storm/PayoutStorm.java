package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.idemtx.db.testing.LocalPostgres;
import io.github.idemtx.ledger.Flags;
import java.io.IOException;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code storm --payouts}: the ledger and the bank simulator as child processes; clients pay out
 * through the ledger, each intent retried with its key until a final answer, while the storm kills
 * the ledger process (SIGKILL) {@code --kills} times while payouts are in flight (at random moments,
 * and at the latest as the finished intents pass evenly spaced marks) and restarts it, and switches the bank's faults
 * (5xx before applying, timeouts after applying, lagging and failing lookups, declines) on and off.
 * Then it lets the ledger's recoverer finish and checks the bank's records against the ledger's:
 *
 * <ul>
 *   <li>each payout intent charged at the bank at most once, and no charge that no payout asked for;
 *   <li>every intent a client saw as paid charged exactly once (the charge it was told) and posted
 *       exactly once (one paid payout with that charge);
 *   <li>no hold without a claim in flight or awaiting reconciliation;
 *   <li>balances conserved: customer debits = bank charges + holds;
 *   <li>the books over every account, the bank's clearing and paid_out accounts included; each
 *       payout's movements (hold, settle, release) as its state says; the clearing account = the
 *       payouts still held; the paid_out account = the bank's own records;
 *   <li>nothing left in flight, and every claim that needed reconciliation is one whose bank lookups
 *       went unanswered.
 * </ul>
 *
 * <p>The chaos includes lookup outages (no lookup answered for a while) and the ledger's lookup
 * schedule is short, so claims reach reconciliation; after the load, a lookup outage of
 * {@code --reconcile} payouts makes that certain (half charged, half not). The storm then acts as an
 * operator ({@link PayoutReconciler}): it lists every payout claim needing reconciliation through the
 * ledger's admin routes, looks each up in the bank's own records by its downstream key and resolves
 * it there, applied or refused, with a reason; and checks that none is left unsettled, that a second
 * resolution is refused, that each client gets the resolution as its answer, and that every final
 * answer replays unchanged, besides the invariants above (the books included).
 *
 * <p>With a broker ({@link io.github.idemtx.db.testing.LocalBroker}; without one, the storm says so
 * and checks the rest), the ledger runs with its events on, on an exchange of the storm's own, and
 * once every payout is settled or at an operator the storm drains the relay and checks them
 * ({@link PayoutEvents}): every paid payout's {@code payout.paid} event delivered at least once under
 * exactly one message id, the one its claim and payout id give, with its charge and amount; none for
 * a payout refused, at an operator or never paid; none of an unknown id; nothing left pending or
 * leased; and what each SIGKILLed ledger left undelivered delivered afterwards by the next one.
 *
 * <p>Flags: {@code --intents=300 --clients=8 --kills=8 --reconcile=4 --seed=N} and the ledger's {@code --db-url},
 * {@code --db-user}, {@code --db-password}. Exits 1 on any violation.
 *
 * <p>{@code --bank=statement} storms the statement bank instead (no key, no lookup: payouts settled
 * by its camt.053 statements; {@code --statement-lag-ms=1500 --statement-poll-ms=200
 * --late-bookings=3}): its faults and aimed kills are {@link StatementPayoutChaos}', its invariants
 * (every payout paid once, absent and sent again, flagged, or at an operator; no silent double
 * payment, none lost) {@link StatementPayoutChecks}'.
 *
 * <p>This class runs the clients ({@link PayoutClient}: their requests); the processes and their
 * faults are {@link PayoutChaos}', the invariants {@link PayoutChecks}'. It shares the flags'
 * parsing, the side connections to the database ({@link SideDatabase}) and the verdict's lines
 * ({@link StormReport}) with {@link Storm}.
 */
public final class PayoutStorm {

    static final String TOKEN = "payout-storm-token";
    static final String TENANT = "payout-storm-tenant";
    /** The name the ledger's books give the bank (its clearing and paid_out accounts). */
    static final String BANK = "storm-bank";
    /** The ledger's lookup schedule for payouts of unknown outcome: short, so outages reach reconciliation. */
    static final String LOOKUPS_MS = "150,300,600";
    /** The amount of each payout of the lookup outage after the load. */
    private static final BigDecimal OUTAGE_AMOUNT = new BigDecimal("5.00");

    private static final int ACCOUNTS = 12;

    /** The storm's settings. */
    public record Options(
            int intents,
            int clients,
            int kills,
            int reconcile,
            long seed,
            StormDatabase db,
            String ledgerSchema,
            String bankSchema,
            Statement statement) {

        /** These settings on {@code resolved}. */
        Options on(StormDatabase resolved) {
            return new Options(intents, clients, kills, reconcile, seed, resolved, ledgerSchema, bankSchema, statement);
        }
    }

    /**
     * {@code --bank=statement}: the ledger's statement lag and poll, and the payouts booked late on
     * purpose after the load; absent (null) for the keyed bank.
     */
    record Statement(int lagMs, int pollMs, int lateBookings) {
        /** The ledger's payout lease (LedgerServer's): no send is found absent before it passed. */
        static final int LEDGER_PAYOUT_LEASE_MS = 5000;

        /**
         * How late a late booking comes: well past the window in which the library finds a send
         * absent (the lag, but at least the payout's lease), so that its payout is found absent and
         * sent again first.
         */
        int lateBookingMs() {
            return Math.max(lagMs, LEDGER_PAYOUT_LEASE_MS) + 5000;
        }
    }

    /**
     * What the storm found; {@code statement}, with {@code --bank=statement}, how the payouts ended
     * and the kills between send and record ({@link StatementPayoutChecks#summary}), else empty.
     */
    public record Report(
            int intents,
            Map<String, Integer> answers,
            int kills,
            int restarts,
            List<String> reconciliation,
            Map<String, Integer> reconciled,
            Map<String, Boolean> invariants,
            double seconds,
            Map<String, Long> bank,
            Map<String, Integer> statement) {

        public boolean passed() {
            return StormReport.allHold(invariants);
        }

        public String render() {
            StringBuilder out = new StringBuilder(String.format("%npayout storm report%n"));
            out.append(String.format("  intents            %d (final answers: %s)%n", intents, answers));
            out.append(String.format(
                    "  ledger kills       %d SIGKILLs, %d restarts, over %.1f s%n", kills, restarts, seconds));
            out.append(String.format("  bank               %s%n", bank));
            if (!statement.isEmpty()) {
                out.append(String.format("  statement bank     %s%n", StatementPayoutChecks.summary(statement)));
                return StormReport.ending(out, invariants);
            }
            out.append(String.format(
                    "  reconciliation     %d claim(s) resolved through the admin routes %s%s%n",
                    reconciliation.size(), reconciled, reconciliation.isEmpty() ? "" : ": " + reconciliation));
            return StormReport.ending(out, invariants);
        }
    }

    public static Options parse(String[] args) {
        Map<String, String> flags = StormFlags.withSwitches(args, "payouts");
        Set<String> known = Set.of(
                "payouts",
                "intents",
                "clients",
                "kills",
                "reconcile",
                "seed",
                "db-url",
                "db-user",
                "db-password",
                "schema",
                "bank",
                "statement-lag-ms",
                "statement-poll-ms",
                "late-bookings");
        for (String name : flags.keySet()) {
            if (!known.contains(name)) {
                throw new IllegalArgumentException("unknown flag --" + name + " for storm --payouts; known: " + known);
            }
        }
        String schema = flags.getOrDefault("schema", "ledger_payout_storm");
        if (!schema.matches("[a-z_][a-z0-9_]{0,50}")) {
            throw new IllegalArgumentException("--schema must be a plain lower-case identifier, was '" + schema + "'");
        }
        Statement statement = StatementPayoutChaos.parse(flags);
        return new Options(
                Flags.intFlag(flags, "intents", 300, 1, 100_000),
                Flags.intFlag(flags, "clients", 8, 1, 128),
                Flags.intFlag(flags, "kills", 8, 0, 1000),
                statement == null ? Flags.intFlag(flags, "reconcile", 4, 0, 1000) : 0,
                Flags.longFlag(flags, "seed", System.nanoTime()),
                StormDatabase.fromFlags(flags),
                schema,
                schema + "_bank",
                statement);
    }

    public static void main(String[] args) throws Exception {
        Report report = run(parse(args), System.out);
        System.out.print(report.render());
        System.exit(report.passed() ? 0 : 1);
    }

    // ---------------------------------------------------------------- the run

    private final Options options;
    private final java.io.PrintStream progress;
    private final SideDatabase db;
    private final PayoutChaos chaos;
    private final PayoutClient client;
    private final AtomicInteger finished = new AtomicInteger();

    private PayoutStorm(Options options, java.io.PrintStream progress) throws IOException {
        this.options = options;
        this.progress = progress;
        this.db = options.db().side("payout-storm");
        this.chaos = options.statement() == null
                ? new PayoutChaos(options, progress)
                : new StatementPayoutChaos(options, progress, db);
        this.client = new PayoutClient(chaos.ledgerPort);
    }

    /**
     * Runs the storm; the database is resolved as the ledger's ({@link LocalPostgres}: the URL, else
     * 127.0.0.1:5432, else an embedded server that lives as long as this run) and handed to the ledger
     * and bank processes by URL.
     */
    public static Report run(Options options, java.io.PrintStream progress) throws Exception {
        return options.db().resolve(progress, db -> new PayoutStorm(options.on(db), progress).run());
    }

    record Intent(int index, String account, BigDecimal amount, String key) {}

    private Report run() throws Exception {
        long start = System.nanoTime();
        db.execute("DROP SCHEMA IF EXISTS " + options.ledgerSchema() + " CASCADE");
        PayoutEvents events = PayoutEvents.declare(progress);
        chaos.events = events;
        try {
            chaos.start();
            if (events != null) {
                events.start(db, options.ledgerSchema());
            }
            Report report = storm(start);
            if (events != null) { // every payout settled or at an operator: the relay drains, the events' checks
                events.check(chaos.kills.get(), report.invariants(), progress);
            }
            return report;
        } finally {
            chaos.stop();
            if (events != null) {
                events.close();
            }
        }
    }

    private Report storm(long start) throws Exception {
        Random seeded = new Random(options.seed());
        List<String> accounts = new ArrayList<>();
        BigDecimal deposited = BigDecimal.ZERO;
        for (int i = 0; i < ACCOUNTS; i++) {
            JsonNode account = client.finalAnswer(
                            "/accounts",
                            "{\"currency\":\"BRL\"}",
                            UUID.randomUUID().toString())
                    .json();
            String id = account.get("id").asText();
            BigDecimal amount = new BigDecimal(500 + seeded.nextInt(1500) + ".00");
            client.finalAnswer(
                    "/accounts/" + id + "/deposits",
                    "{\"amount\":\"" + amount.toPlainString() + "\"}",
                    UUID.randomUUID().toString());
            accounts.add(id);
            deposited = deposited.add(amount);
        }
        // the account the lookup outage (keyed) or the late bookings (statement) after the load pay out
        // from: funded for all of it
        int waves = options.reconcile()
                + (options.statement() == null ? 0 : options.statement().lateBookings());
        String outageAccount = null;
        if (waves > 0) {
            outageAccount = client.finalAnswer(
                            "/accounts",
                            "{\"currency\":\"BRL\"}",
                            UUID.randomUUID().toString())
                    .json()
                    .get("id")
                    .asText();
            BigDecimal amount = OUTAGE_AMOUNT.multiply(BigDecimal.valueOf(waves));
            client.finalAnswer(
                    "/accounts/" + outageAccount + "/deposits",
                    "{\"amount\":\"" + amount.toPlainString() + "\"}",
                    UUID.randomUUID().toString());
            deposited = deposited.add(amount);
        }
        List<Intent> intents = new ArrayList<>();
        for (int i = 0; i < options.intents(); i++) {
            intents.add(new Intent(
                    i,
                    accounts.get(seeded.nextInt(ACCOUNTS)),
                    new BigDecimal((1 + seeded.nextInt(150)) + ".00"),
                    UUID.randomUUID().toString()));
        }
        progress.println("payout storm: ledger :" + chaos.ledgerPort + ", bank :" + chaos.bankPort + ", " + options);

        Map<String, Answer> answers = new ConcurrentHashMap<>();
        AtomicBoolean storming = new AtomicBoolean(true);
        Thread chaosThread = Thread.ofPlatform().name("payout-storm-chaos").start(() -> chaos.chaos(storming));
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService clients = Executors.newFixedThreadPool(options.clients())) {
            List<Future<?>> running = new ArrayList<>();
            for (int c = 0; c < options.clients(); c++) {
                running.add(clients.submit(() -> {
                    int i;
                    while ((i = next.getAndIncrement()) < intents.size()) {
                        Intent intent = intents.get(i);
                        answers.put(intent.key(), client.untilFinal(intent));
                        chaos.killOnProgress(finished.incrementAndGet(), intents.size());
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) {
                f.get();
            }
        } finally {
            storming.set(false);
            chaosThread.join();
        }
        if (chaos instanceof StatementPayoutChaos statement) {
            return statementEnd(statement, outageAccount, intents, answers, deposited, start);
        }
        // the faults stop; the ledger (alive) settles what is in flight with its recoverer
        chaos.bankFaults(Map.of(
                "errorBeforeApplyRate",
                0,
                "timeoutAfterApplyRate",
                0,
                "declineRate",
                0,
                "lookupLagMs",
                0,
                "lookupErrorRate",
                0,
                "lookupTimeoutRate",
                0));
        chaos.ensureLedger();
        long until = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (db.count("SELECT count(*) FROM " + options.ledgerSchema()
                                + ".idempotency_claim WHERE effect = 'payout' AND state = 3")
                        > 0
                && System.nanoTime() < until) {
            Thread.sleep(500);
        }
        List<Intent> outage = outageWave(outageAccount, intents, answers);
        Map<String, Answer> outageAnswers = new java.util.HashMap<>();
        outage.forEach(i -> outageAnswers.put(i.key(), answers.get(i.key())));
        // the operator: every claim needing reconciliation, found in the bank's records, resolved
        PayoutReconciler operator =
                new PayoutReconciler(chaos.adminPort, chaos.adminToken, db, options.bankSchema(), progress);
        List<JsonNode> handedOver = operator.needingReconciliation();
        List<PayoutReconciler.Resolution> resolutions = operator.resolveAll(handedOver);
        int refusedAgain = 0;
        for (PayoutReconciler.Resolution r : resolutions) {
            refusedAgain += operator.resolveAgain(r) == 409 ? 1 : 0;
        }
        progress.println("payout storm: " + resolutions.size() + " claim(s) resolved through the admin routes");
        List<String> changed = askAgain(intents, answers);
        PayoutChecks.Reconciliation reconciliation = new PayoutChecks.Reconciliation(
                outage, outageAnswers, resolutions, refusedAgain, intents.size(), changed, chaos.outages.get());
        return new PayoutChecks(options, db, chaos)
                .check(intents, answers, deposited, reconciliation, (System.nanoTime() - start) / 1e9);
    }

    /**
     * Clients that stopped at "reconciliation" (502) or ran out of patience ask once more; then every
     * intent once more, whose final answer (or 502) must replay unchanged: the keys whose answer changed.
     */
    private List<String> askAgain(List<Intent> intents, Map<String, Answer> answers) {
        for (Intent intent : intents) {
            Answer a = answers.get(intent.key());
            if (a == null || !a.isFinal()) {
                answers.put(intent.key(), client.untilFinal(intent));
            }
        }
        List<String> changed = new ArrayList<>();
        for (Intent intent : intents) {
            Answer first = answers.get(intent.key());
            Answer again = client.untilFinal(intent);
            // the same final answer, or still needing reconciliation (the statement bank's operator cases)
            boolean same = first != null
                    && again != null
                    && (first.sameAs(again) || (first.status() == 502 && again.status() == 502));
            if (!same) {
                changed.add(intent.key());
            }
        }
        return changed;
    }

    /**
     * The statement bank's end ({@code --bank=statement}): the faults stop; {@code --late-bookings}
     * payouts whose first send is booked late on purpose ({@link StatementPayoutChaos#lateBookings});
     * the ledger (alive) runs until every claim is settled or at an operator and every booking, late
     * ones included, is in a statement it applied; the clients ask again; then the checks.
     */
    private Report statementEnd(
            StatementPayoutChaos statement,
            String account,
            List<Intent> intents,
            Map<String, Answer> answers,
            BigDecimal deposited,
            long start)
            throws Exception {
        progress.printf("payout storm: the load ended after %.1f s%n", (System.nanoTime() - start) / 1e9);
        statement.calm();
        chaos.ensureLedger();
        List<Intent> late = wave(account, options.statement().lateBookings(), intents);
        statement.lateBookings(late, client::once, client::untilFinal, answers);
        String unsettled = statement.awaitSettled();
        progress.printf(
                "payout storm: %s, %.1f s into the run%n",
                unsettled == null ? "all settled and in statements" : unsettled, (System.nanoTime() - start) / 1e9);
        List<String> changed = askAgain(intents, answers);
        return new StatementPayoutChecks(options, db, statement)
                .check(intents, answers, deposited, late, changed, unsettled, (System.nanoTime() - start) / 1e9);
    }

    /** {@code n} payouts of {@link #OUTAGE_AMOUNT} from {@code account}, added to {@code intents}. */
    private static List<Intent> wave(String account, int n, List<Intent> intents) {
        List<Intent> wave = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            wave.add(new Intent(
                    intents.size() + i,
                    account,
                    OUTAGE_AMOUNT,
                    UUID.randomUUID().toString()));
        }
        intents.addAll(wave);
        return wave;
    }

    /**
     * A lookup outage the storm makes certain, after the load: {@code --reconcile} payouts sent while
     * the bank answers no lookup (503), the first half while it charges each and then does not answer
     * in time, the rest while it fails before charging. No lookup can settle them, so each claim needs
     * reconciliation; its client's answer is 502 (kept, to check). Then the faults stop.
     */
    private List<Intent> outageWave(String account, List<Intent> intents, Map<String, Answer> answers)
            throws Exception {
        int n = options.reconcile();
        List<Intent> wave = wave(account, n, intents);
        int charged = (n + 1) / 2;
        for (int half = 0; half < 2; half++) {
            List<Intent> part = half == 0 ? wave.subList(0, charged) : wave.subList(charged, n);
            chaos.bankFaults(Map.of(
                    "errorBeforeApplyRate", half == 0 ? 0 : 1,
                    "timeoutAfterApplyRate", half == 0 ? 1 : 0,
                    "declineRate", 0,
                    "lookupLagMs", 0,
                    "lookupErrorRate", 1,
                    "lookupTimeoutRate", 0));
            try (ExecutorService clients = Executors.newFixedThreadPool(Math.max(1, part.size()))) {
                List<Future<?>> running = new ArrayList<>();
                for (Intent intent : part) {
                    running.add(clients.submit(() -> answers.put(intent.key(), client.untilFinal(intent))));
                }
                for (Future<?> f : running) {
                    f.get();
                }
            }
        }
        chaos.bankFaults(Map.of(
                "errorBeforeApplyRate", 0,
                "timeoutAfterApplyRate", 0,
                "declineRate", 0,
                "lookupLagMs", 0,
                "lookupErrorRate", 0,
                "lookupTimeoutRate", 0));
        Map<Integer, Integer> statuses = new java.util.TreeMap<>();
        wave.forEach(i -> statuses.merge(
                answers.get(i.key()) == null ? 0 : answers.get(i.key()).status(), 1, Integer::sum));
        progress.println(
                "payout storm: lookup outage after the load: " + n + " payouts, answers by status " + statuses);
        return wave;
    }

    record Answer(int status, JsonNode json, String replayed) {
        boolean isFinal() {
            return status == 201 || status == 422;
        }

        /** The same final answer: status, and the payout (201) or the problem's code (422). */
        boolean sameAs(Answer other) {
            return isFinal()
                    && status == other.status
                    && (status == 201
                            ? json.path("id").equals(other.json.path("id"))
                                    && json.path("chargeId").equals(other.json.path("chargeId"))
                                    && json.path("state").equals(other.json.path("state"))
                                    && json.path("amount").equals(other.json.path("amount"))
                            : json.path("code").equals(other.json.path("code")));
        }
    }
}
