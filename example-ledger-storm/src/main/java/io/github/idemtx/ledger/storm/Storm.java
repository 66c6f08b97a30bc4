package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.db.testing.Backends;
import io.github.idemtx.db.testing.FailoverCluster;
import io.github.idemtx.db.testing.FailoverCluster.Replication;
import io.github.idemtx.ledger.Flags;
import io.github.idemtx.ledger.LedgerConfig;
import io.github.idemtx.ledger.LedgerServer;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.ConcurrentHistogram;

/**
 * Drives the ledger like a fleet of flaky mobile clients, through real HTTP, while killing the
 * database connections behind it, then checks against the database that nothing moved twice.
 *
 * <p>Each intent (a deposit or a transfer) gets one key and is sent again and again, sometimes as
 * concurrent duplicates, after client-side timeouts, with the JSON re-serialised, until a final
 * answer (neither 409 nor 5xx) arrives; sometimes once more after that. Then: every acknowledged
 * intent took effect exactly once, every intent has one recorded answer, balances per tenant and
 * currency sum to zero, no customer balance is negative, postings match balances, and every
 * answer for a key was byte-identical to the first.
 */
public final class Storm {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** The storm's settings; see {@link #parse}. */
    public record Options(int clients, int intents, double faultsPerSecond, int accountsPerTenant,
            double duplicateRate, Duration clientTimeout, long seed) {}

    /**
     * {@code --failover}: the ledger's database is a primary and a standby of the storm's own
     * ({@link FailoverCluster}), the ledger on pgjdbc's multi-host URL; {@code failovers} times during
     * the load the primary is SIGKILLed and the standby promoted (a new standby is copied from it
     * before the next one). No connection kills then: the primary's death is the fault.
     */
    public record FailoverPlan(Replication replication, String synchronousCommit, int failovers) {}

    /**
     * What the failovers did and cost: {@code lostExecuted} 201s and {@code lostOther} other final
     * answers the promoted primary no longer holds (measured before any key is sent again), and
     * what sending every key once more afterwards answered ({@code "same answer"}, {@code "executed
     * again"}: a 201 with another transfer, {@code "another answer"}).
     */
    public record FailoverSummary(String setUp, int planned, List<FailoverCluster.Failover> failovers, int finalAnswers,
            int lostExecuted, int lostOther, Map<String, Integer> resent) {
        public int lost() {
            return lostExecuted + lostOther;
        }

        public int executedAgain() {
            return resent.getOrDefault(EXECUTED_AGAIN, 0);
        }
    }

    static final String SAME_ANSWER = "same answer";
    static final String EXECUTED_AGAIN = "executed again";
    static final String ANOTHER_ANSWER = "another answer";

    /**
     * The checks that hold only if every acknowledged commit survives a failover: with asynchronous
     * replication they are measured ({@link Report#measured}), not required.
     */
    private static final List<String> DURABILITY_CHECKS = List.of("no final answer lost", "every key sent again",
            "every acknowledged intent took effect exactly once", "every answer for a key was byte-identical",
            "the library's executed count");

    /** What the storm saw and found; {@code failover} is null without {@code --failover}. */
    public record Report(int intents, long requests, long replays, long conflicts, long serverErrors, long timeouts,
            long faults, double seconds, long p50Micros, long p99Micros, Map<String, Boolean> invariants,
            Map<String, Integer> answers, Map<String, Long> library, FailoverSummary failover, Map<String, Boolean> measured) {

        public boolean passed() {
            return invariants.values().stream().allMatch(Boolean::booleanValue);
        }

        public String render() {
            StringBuilder out = new StringBuilder();
            out.append(String.format("%nstorm report%n"));
            out.append(String.format("  intents            %d (answers: %s)%n", intents, answers));
            int mismatches = answers.getOrDefault("422 currency_mismatch", 0);
            int unfunded = answers.getOrDefault("422 insufficient_funds", 0);
            out.append(String.format("  %-18s %s%n", "", String.format("422s are the intent mix's refusals, on purpose: %d currency_mismatch (%.1f%% of"
                    + " intents; 85%% are transfers and one account in ten holds USD, so about 15%% expected), %d insufficient_funds"
                    + " (%.1f%%; transfers of up to 400.00 drain balances of 500-2000)", mismatches, 100.0 * mismatches / Math.max(1, intents),
                    unfunded, 100.0 * unfunded / Math.max(1, intents))));
            out.append(String.format("  requests sent      %d (replayed answers %d, 409s %d, 5xx %d, client timeouts %d)%n",
                    requests, replays, conflicts, serverErrors, timeouts));
            if (failover == null) {
                if (faults > 0) {
                    out.append(String.format("  %-18s %s%n", "", "5xx are expected here: a connection kill fails the request it hits (the progress lines"
                            + " \"ledger: ... answered 503\"), and the client sends it again with its key"));
                }
                out.append(String.format("  faults injected    %d connection kills%n", faults));
            } else {
                out.append(String.format("  faults injected    %d of %d failovers (%s): the primary SIGKILLed, the standby promoted"
                        + " in %s ms; the standby's lag sampled just before each kill: %s bytes%n", failover.failovers().size(),
                        failover.planned(), failover.setUp(), failover.failovers().stream().map(f -> Long.toString(f.promoteMillis())).toList(),
                        failover.failovers().stream().map(f -> Long.toString(f.standbyLagBytes())).toList()));
                out.append(String.format("  answers lost       %d of %d final answers missing on the promoted primary (%d were 201s, %d others)%n",
                        failover.lost(), failover.finalAnswers(), failover.lostExecuted(), failover.lostOther()));
                out.append(String.format("  keys sent again    every key once more after the load: %s%n", failover.resent()));
            }
            out.append(String.format("  throughput         %.0f intents/s, %.0f requests/s over %.1f s%n",
                    intents / seconds, requests / seconds, seconds));
            out.append(String.format("  latency            p50 %.1f ms, p99 %.1f ms%n", p50Micros / 1000.0, p99Micros / 1000.0));
            if (!library.isEmpty()) {
                out.append(String.format("  library (/metrics) %s%n", library));
            }
            invariants.forEach((name, ok) -> out.append(String.format("  %-4s %s%n", ok ? "PASS" : "FAIL", name)));
            if (!measured.isEmpty()) {
                out.append(String.format("  measured, not required (asynchronous replication promises none of these across a failover):%n"));
                measured.forEach((name, ok) -> out.append(String.format("  %-4s %s%n", ok ? "held" : "LOST", name)));
            }
            out.append(passed() ? "  all invariants hold\n" : "  SOME INVARIANTS FAILED\n");
            return out.toString();
        }
    }

    /** The flags; a bare {@code --failover} means {@code --failover=true}. */
    private static Map<String, String> flags(String[] args) {
        return Flags.parse("storm arguments",
                Arrays.stream(args).map(a -> a.equals("--failover") ? "--failover=true" : a).toArray(String[]::new));
    }

    private static final List<String> FAILOVER_FLAGS = List.of("failover", "replication", "failovers", "synchronous-commit");

    /** The {@code --failover} flags, or null without {@code --failover}; refused, naming the flag, when they do not fit. */
    static FailoverPlan parseFailover(String[] args) {
        Map<String, String> flags = flags(args);
        String on = flags.getOrDefault("failover", "false");
        if (!on.equals("true") && !on.equals("false")) {
            throw new IllegalArgumentException("--failover takes no value (or true or false), was '" + on + "'");
        }
        if (on.equals("false")) {
            for (String name : FAILOVER_FLAGS.subList(1, FAILOVER_FLAGS.size())) {
                if (flags.containsKey(name)) {
                    throw new IllegalArgumentException("--" + name + " needs --failover");
                }
            }
            return null;
        }
        for (String name : List.of("db-url", "db-user", "db-password", "faults", "base-url", "token")) {
            if (flags.containsKey(name)) {
                throw new IllegalArgumentException("--failover runs a primary and a standby of its own and kills the primary:"
                        + " --" + name + " cannot be given with it");
            }
        }
        Replication replication = Replication.parse("--replication", flags.getOrDefault("replication", "sync"));
        String synchronousCommit = flags.getOrDefault("synchronous-commit", "on");
        if (!FailoverCluster.SYNCHRONOUS_COMMITS.contains(synchronousCommit)) {
            throw new IllegalArgumentException("--synchronous-commit must be one of " + new java.util.TreeSet<>(FailoverCluster.SYNCHRONOUS_COMMITS)
                    + ", was '" + synchronousCommit + "'");
        }
        if (replication == Replication.ASYNC && flags.containsKey("synchronous-commit")) {
            throw new IllegalArgumentException("--synchronous-commit says how far a commit waits for a synchronous standby:"
                    + " it needs --replication=sync");
        }
        return new FailoverPlan(replication, synchronousCommit, Flags.intFlag(flags, "failovers", 1, 1, 100));
    }

    static Options parse(String[] args) {
        Map<String, String> flags = flags(args);
        Options o = new Options(
                Flags.intFlag(flags, "clients", 16, 1, 256),
                Flags.intFlag(flags, "intents", 5000, 1, 10_000_000),
                Flags.doubleFlag(flags, "faults", 5.0, 0, 1000),
                Flags.intFlag(flags, "accounts", 100, 2, 10_000),
                Flags.doubleFlag(flags, "duplicates", 0.3, 0, 1),
                Duration.ofMillis(Flags.intFlag(flags, "timeout-ms", 1500, 50, 60_000)),
                Flags.longFlag(flags, "seed", System.nanoTime()));
        Set<String> known = Set.of("clients", "intents", "faults", "accounts", "duplicates", "timeout-ms", "seed");
        for (String name : flags.keySet()) {
            if (!known.contains(name) && !FAILOVER_FLAGS.contains(name) && !name.startsWith("db-") && !name.equals("schema")
                    && !name.equals("pool-size") && !name.equals("claim-mode")) {
                throw new IllegalArgumentException("unknown storm flag --" + name + "; known: " + known + ", " + FAILOVER_FLAGS
                        + " and the ledger's --db-url, --db-user, --db-password, --schema, --pool-size, --claim-mode");
            }
        }
        return o;
    }

    /**
     * Starts a ledger (database as {@code LEDGER_*} and {@code --db-*} say, schema
     * {@code ledger_storm} unless {@code --schema} names another, recreated), runs the storm against
     * it, prints the report and exits 1 if an invariant failed.
     */
    public static void main(String[] args) throws Exception {
        try {
            launch(args);
        } catch (io.github.idemtx.db.testing.LocalPostgres.NoDatabaseException e) {
            // a setting to change, not a crash: the reason alone, without a stack trace
            System.err.println("storm: " + e.getMessage());
            System.exit(2);
        }
    }

    private static void launch(String[] args) throws Exception {
        if (Arrays.asList(args).contains("--payouts") || Arrays.asList(args).contains("--payouts=true")) {
            PayoutStorm.main(args);
            return;
        }
        String baseUrl = null;
        String token = null;
        List<String> rest = new ArrayList<>();
        for (String arg : args) {
            if (arg.startsWith("--base-url=")) {
                baseUrl = arg.substring("--base-url=".length());
            } else if (arg.startsWith("--token=")) {
                token = arg.substring("--token=".length());
            } else {
                rest.add(arg);
            }
        }
        FailoverPlan failover = parseFailover(args);
        if (baseUrl != null || token != null) {
            if (failover != null) {
                throw new IllegalArgumentException("--failover runs a ledger of its own: --base-url and --token cannot be given with it");
            }
            if (baseUrl == null || token == null || !baseUrl.matches("https?://\\S+")) {
                throw new IllegalArgumentException("a running ledger needs both --base-url=http://host:port and --token=<a tenant's token>");
            }
            Report report = runAgainstRunningLedger(URI.create(baseUrl), token, parse(rest.toArray(String[]::new)), System.out);
            System.out.print(report.render());
            System.exit(report.passed() ? 0 : 1);
            return;
        }
        Options options = parse(args);
        List<String> ledgerArgs = new ArrayList<>();
        for (String arg : args) {
            if (arg.startsWith("--db-") || arg.startsWith("--schema=") || arg.startsWith("--pool-size=")
                    || arg.startsWith("--claim-mode=")) {
                ledgerArgs.add(arg);
            }
        }
        if (ledgerArgs.stream().noneMatch(a -> a.startsWith("--schema="))) {
            ledgerArgs.add("--schema=ledger_storm");
        }
        Report report = failover == null ? runAgainstNewLedger(ledgerArgs.toArray(String[]::new), options, System.out)
                : runWithFailover(ledgerArgs.toArray(String[]::new), options, failover, System.out);
        System.out.print(report.render());
        System.exit(report.passed() ? 0 : 1);
    }

    /** Starts a fresh ledger from {@code ledgerArgs} (its schema recreated), storms it, stops it. */
    public static Report runAgainstNewLedger(String[] ledgerArgs, Options options, java.io.PrintStream progress) throws Exception {
        return runAgainstNewLedger(ledgerArgs, options, null, null, progress);
    }

    /**
     * Starts a primary and a standby of its own ({@link FailoverCluster}, as {@code plan} says) and a
     * fresh ledger on them (pgjdbc's multi-host URL, {@code ledgerArgs} for the rest: schema, pool
     * size), storms it while the primary is killed and the standby promoted {@code plan.failovers()}
     * times, sends every key once more, checks, and removes both servers.
     */
    public static Report runWithFailover(String[] ledgerArgs, Options options, FailoverPlan plan, java.io.PrintStream progress)
            throws Exception {
        try (FailoverCluster cluster = FailoverCluster.start(plan.replication(), plan.synchronousCommit())) {
            progress.println("storm: " + cluster.description());
            List<String> args = new ArrayList<>(Arrays.asList(ledgerArgs));
            args.add("--db-url=" + cluster.url());
            args.add("--db-user=" + cluster.user());
            Options noConnectionKills = new Options(options.clients(), options.intents(), 0, options.accountsPerTenant(),
                    options.duplicateRate(), options.clientTimeout(), options.seed());
            return runAgainstNewLedger(args.toArray(String[]::new), noConnectionKills, cluster, plan, progress);
        }
    }

    private static Report runAgainstNewLedger(String[] ledgerArgs, Options options, FailoverCluster cluster, FailoverPlan plan,
            java.io.PrintStream progress) throws Exception {
        String tokenA = "storm-token-a-" + Long.toHexString(options.seed());
        String tokenB = "storm-token-b-" + Long.toHexString(options.seed());
        List<String> args = new ArrayList<>(Arrays.asList(ledgerArgs));
        args.add("--port=0");
        args.add("--tokens=" + tokenA + "=storm-tenant-a," + tokenB + "=storm-tenant-b");
        try (LocalLedger ledger = LocalLedger.start(LedgerConfig.from(args.toArray(String[]::new), System.getenv()), true)) {
            LedgerServer server = ledger.server();
            progress.println("storm: ledger on port " + server.port() + ", " + options);
            if (cluster != null) {
                progress.println("storm: lines \"ledger: ... answered 503\" below are requests that met the dead primary or"
                        + " found no primary yet: the client retries with the same key; the report counts them as 5xx");
            } else if (options.faultsPerSecond() > 0) {
                progress.println("storm: lines \"ledger: ... answered 503\" below are the injected connection kills doing their"
                        + " job: the client retries with the same key; the report counts them as 5xx");
            }
            return new Storm(new Target(URI.create("http://127.0.0.1:" + server.port()), server, cluster, plan),
                    Map.of(tokenA, "storm-tenant-a", tokenB, "storm-tenant-b"), options, progress).run();
        }
    }

    /**
     * Storms a ledger it did not start, at {@code baseUrl} with one tenant's {@code token}: no
     * connection kills (it has no access to the database); the checks are those HTTP can make.
     */
    public static Report runAgainstRunningLedger(URI baseUrl, String token, Options options, java.io.PrintStream progress)
            throws Exception {
        progress.println("storm: ledger at " + baseUrl + ", " + options);
        return new Storm(new Target(baseUrl, null, null, null), Map.of(token, "the token's tenant"), options, progress).run();
    }

    private record Intent(int index, String token, String tenant, String path, Map<String, String> body, IdempotencyKey key) {}

    private record Answer(int status, String location, byte[] body) {
        boolean sameAs(Answer other) {
            return status == other.status && Objects.equals(location, other.location) && Arrays.equals(body, other.body);
        }
    }

    /**
     * The ledger stormed: its base URL and, when the storm started it, its database (for the
     * database-side checks and the connection kills); null for a ledger it did not start. With
     * {@code --failover}, the primary and standby under it and the plan; else null.
     */
    private record Target(URI base, LedgerServer server, FailoverCluster cluster, FailoverPlan plan) {}

    private final LedgerServer server;
    private final Map<String, String> tokens;
    private final Options options;
    private final java.io.PrintStream progress;
    private final HttpClient http;
    private final URI base;
    private final Map<String, List<String>> accountsByTenant = new LinkedHashMap<>();
    private final Map<String, String> currencyOf = new ConcurrentHashMap<>();
    private final ConcurrentHistogram latency = new ConcurrentHistogram(3);
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong replays = new AtomicLong();
    private final AtomicLong conflicts = new AtomicLong();
    private final AtomicLong serverErrors = new AtomicLong();
    private final AtomicLong timeouts = new AtomicLong();
    private final AtomicLong faults = new AtomicLong();
    private final AtomicInteger mismatchedReplays = new AtomicInteger();
    private final Map<Integer, Answer> finalAnswers = new ConcurrentHashMap<>();

    private final Map<String, BigDecimal> setUpBalances = new ConcurrentHashMap<>();
    private final FailoverCluster cluster;
    private final FailoverPlan plan;
    private final List<FailoverCluster.Failover> failovers = Collections.synchronizedList(new ArrayList<>());
    private volatile RuntimeException failoverError;
    /** Set when a kill and promotion failed: there may be no primary left, so the clients stop instead of retrying forever. */
    private volatile boolean aborted;

    private Storm(Target target, Map<String, String> tokens, Options options, java.io.PrintStream progress) {
        this.server = target.server();
        this.tokens = tokens;
        this.options = options;
        this.progress = progress;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
                .executor(Executors.newVirtualThreadPerTaskExecutor()).build();
        this.base = target.base();
        this.cluster = target.cluster();
        this.plan = target.plan();
    }

    private Report run() throws Exception {
        setUp();
        List<Intent> intents = new ArrayList<>();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        List<String> tokenList = new ArrayList<>(tokens.keySet());
        java.util.Random seeded = new java.util.Random(options.seed());
        for (int i = 0; i < options.intents(); i++) {
            String token = tokenList.get(seeded.nextInt(tokenList.size()));
            String tenant = tokens.get(token);
            List<String> accounts = accountsByTenant.get(tenant);
            String to = accounts.get(seeded.nextInt(accounts.size()));
            if (seeded.nextInt(100) < 15) {
                intents.add(new Intent(i, token, tenant, "/accounts/" + to + "/deposits",
                        Map.of("amount", amount(seeded, 1, 200)), IdempotencyKey.random()));
            } else {
                String from = accounts.get(seeded.nextInt(accounts.size()));
                while (from.equals(to)) {
                    from = accounts.get(seeded.nextInt(accounts.size()));
                }
                intents.add(new Intent(i, token, tenant, "/transfers",
                        Map.of("from", from, "to", to, "amount", amount(seeded, 1, 400)), IdempotencyKey.random()));
            }
        }
        Set<String> transfersBefore = server == null ? Set.of() : transferIds();
        Map<String, Long> metricsBefore = libraryCounts();
        long replaysBefore = replays.get();

        AtomicBoolean running = new AtomicBoolean(true);
        AtomicInteger next = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        Thread faultInjector = Thread.ofPlatform().name("storm-faults")
                .start(() -> {
                    if (cluster != null) {
                        injectFailovers(running, done);
                    } else {
                        injectFaults(running);
                    }
                });
        long start = System.nanoTime();
        Thread reporter = Thread.ofPlatform().daemon().name("storm-progress").start(() -> {
            while (running.get()) {
                try {
                    Thread.sleep(2000);
                } catch (InterruptedException e) {
                    return;
                }
                progress.printf("storm: %d/%d intents, %d requests, %d faults, %d replays, %d 409s%n",
                        done.get(), options.intents(), requests.get(), faults.get(), replays.get(), conflicts.get());
            }
        });
        try (ExecutorService clients = Executors.newFixedThreadPool(options.clients())) {
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            for (int c = 0; c < options.clients(); c++) {
                futures.add(CompletableFuture.runAsync(() -> {
                    int i;
                    while ((i = next.getAndIncrement()) < intents.size()) {
                        perform(intents.get(i));
                        done.incrementAndGet();
                    }
                }, clients));
            }
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
        } finally {
            running.set(false);
            faultInjector.join();
            reporter.interrupt();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        FailoverSummary failover = cluster == null ? null : afterFailovers(intents);
        Map<String, Boolean> invariants = server == null ? checkOverHttp(intents) : check(intents, transfersBefore);
        Map<String, Long> library = new java.util.TreeMap<>(libraryCounts());
        metricsBefore.forEach((k, v) -> library.merge(k, -v, Long::sum));
        if (!library.isEmpty()) {
            checkMetrics(library, replays.get() - replaysBefore, invariants);
        }
        Map<String, Boolean> measured = new LinkedHashMap<>();
        if (failover != null) {
            invariants.put("every failover worked (" + failovers.size() + " of " + plan.failovers() + " planned"
                    + (failovers.size() < plan.failovers() ? ", the load ended before the rest: more --intents for more" : "")
                    + (failoverError == null ? "" : "; failed: " + failoverError) + ")", failoverError == null && !failovers.isEmpty());
            invariants.put("no final answer lost in the failovers (" + failover.lost() + " of " + failover.finalAnswers() + ")",
                    failover.lost() == 0);
            invariants.put("every key sent again after the failovers got its first answer back ("
                    + failover.resent().getOrDefault(SAME_ANSWER, 0) + " of " + intents.size() + ")",
                    failover.resent().getOrDefault(SAME_ANSWER, 0) == intents.size());
            if (plan.replication() == Replication.ASYNC) {
                for (String name : List.copyOf(invariants.keySet())) {
                    if (DURABILITY_CHECKS.stream().anyMatch(name::startsWith)) {
                        measured.put(name, invariants.remove(name));
                    }
                }
            }
        }
        return new Report(intents.size(), requests.get(), replays.get(), conflicts.get(), serverErrors.get(), timeouts.get(),
                faults.get(), seconds, latency.getValueAtPercentile(50), latency.getValueAtPercentile(99),
                invariants, answerCounts(), library, failover, measured);
    }

    // ---------------------------------------------------------------- clients

    private void setUp() throws Exception {
        java.util.Random seeded = new java.util.Random(options.seed() ^ 0x5DEECE66DL);
        for (Map.Entry<String, String> t : tokens.entrySet()) {
            List<String> accounts = new ArrayList<>();
            for (int i = 0; i < options.accountsPerTenant(); i++) {
                String currency = i % 10 == 9 ? "USD" : "BRL";
                Answer created = untilFinal(t.getKey(), "/accounts", Map.of("currency", currency), IdempotencyKey.random());
                String id = MAPPER.readTree(created.body()).get("id").asText();
                accounts.add(id);
                currencyOf.put(id, currency);
                String deposit = amount(seeded, 500, 2000);
                untilFinal(t.getKey(), "/accounts/" + id + "/deposits", Map.of("amount", deposit), IdempotencyKey.random());
                setUpBalances.put(id, new BigDecimal(deposit));
            }
            accountsByTenant.put(t.getValue(), accounts);
        }
    }

    /** Sends one intent until it has a final answer, as a flaky client would; checks every answer. */
    private void perform(Intent intent) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        List<Answer> answers = new ArrayList<>();
        while (answers.isEmpty() && !aborted) {
            int copies = random.nextDouble() < options.duplicateRate() ? 2 + random.nextInt(2) : 1;
            List<CompletableFuture<Answer>> inFlight = new ArrayList<>();
            for (int c = 0; c < copies; c++) {
                inFlight.add(send(intent.token(), intent.path(), intent.body(), intent.key()));
            }
            for (CompletableFuture<Answer> f : inFlight) {
                Answer a = f.join();
                if (a != null) {
                    answers.add(a);
                }
            }
            if (answers.isEmpty()) {
                pause(random);
            }
        }
        if (answers.isEmpty()) {
            return; // aborted: no final answer, which the checks report
        }
        if (random.nextInt(100) < 20) { // a late retry: the client never saw the answer
            Answer late = null;
            while (late == null && !aborted) {
                late = send(intent.token(), intent.path(), intent.body(), intent.key()).join();
                if (late == null) {
                    pause(random);
                }
            }
            if (late != null) {
                answers.add(late);
            }
        }
        Answer first = answers.get(0);
        for (Answer a : answers) {
            if (!a.sameAs(first)) {
                mismatchedReplays.incrementAndGet();
                progress.println("storm: intent " + intent.index() + " got two different answers: " + first.status()
                        + " " + new String(first.body()) + " vs " + a.status() + " " + new String(a.body()));
            }
        }
        finalAnswers.put(intent.index(), first);
    }

    private Answer untilFinal(String token, String path, Map<String, String> body, IdempotencyKey key) {
        Answer a = null;
        while (a == null) {
            a = send(token, path, body, key).join();
            if (a == null) {
                pause(ThreadLocalRandom.current());
            }
        }
        if (a.status() >= 300) {
            throw new IllegalStateException("storm set-up failed: " + path + " answered " + a.status() + " " + new String(a.body()));
        }
        return a;
    }

    /** One request; its final answer, or null when the client should try again (timeout, 409, 5xx). */
    private CompletableFuture<Answer> send(String token, String path, Map<String, String> body, IdempotencyKey key) {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path))
                .timeout(options.clientTimeout())
                .header("Authorization", "Bearer " + token)
                .header("Idempotency-Key", ThreadLocalRandom.current().nextBoolean() ? key.value() : "\"" + key.value() + "\"")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(reserialise(body)))
                .build();
        requests.incrementAndGet();
        long start = System.nanoTime();
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray()).handle((response, error) -> {
            latency.recordValue(Math.max(1, (System.nanoTime() - start) / 1000));
            if (error != null) {
                if (error.getCause() instanceof HttpTimeoutException || error instanceof HttpTimeoutException) {
                    timeouts.incrementAndGet();
                }
                return null;
            }
            if (response.statusCode() == 409) {
                conflicts.incrementAndGet();
                return null;
            }
            if (response.statusCode() >= 500) {
                serverErrors.incrementAndGet();
                return null;
            }
            if (response.headers().firstValue("Idempotent-Replayed").isPresent()) {
                replays.incrementAndGet();
            }
            return new Answer(response.statusCode(), response.headers().firstValue("Location").orElse(null), response.body());
        });
    }

    /** The same JSON object with its members in a random order and random spacing. */
    private static String reserialise(Map<String, String> body) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        List<Map.Entry<String, String>> members = new ArrayList<>(body.entrySet());
        Collections.shuffle(members, random);
        String space = random.nextBoolean() ? "" : " \n ";
        StringBuilder out = new StringBuilder("{").append(space);
        for (int i = 0; i < members.size(); i++) {
            if (i > 0) {
                out.append(',').append(space);
            }
            out.append('"').append(members.get(i).getKey()).append('"').append(space).append(':').append(space)
                    .append('"').append(members.get(i).getValue()).append('"');
        }
        return out.append(space).append('}').toString();
    }

    private static void pause(ThreadLocalRandom random) {
        try {
            Thread.sleep(10 + random.nextInt(40));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("storm interrupted", e);
        }
    }

    private static String amount(java.util.Random random, int min, int max) {
        int cents = min * 100 + random.nextInt((max - min) * 100 + 1);
        return BigDecimal.valueOf(cents, 2).toPlainString();
    }

    // ---------------------------------------------------------------- faults

    /** Kills a random busy ledger connection {@code faultsPerSecond} times a second, on average. */
    private void injectFaults(AtomicBoolean running) {
        if (options.faultsPerSecond() <= 0 || server == null) {
            return;
        }
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try (Backends backends = new Backends(sideConnection())) {
            // exponential pauses: kills arrive as a Poisson process of the given rate
            backends.killRepeatedly("ledger", 0.0,
                    () -> Math.min((long) (-Math.log(1 - random.nextDouble()) * 1000 / options.faultsPerSecond()), 2000),
                    running::get, state -> faults.incrementAndGet());
        } catch (SQLException | RuntimeException e) {
            progress.println("storm: the fault injector stopped: " + e);
        }
    }

    private Connection sideConnection() throws SQLException {
        Properties props = new Properties();
        if (server.dbUser() != null) {
            props.setProperty("user", server.dbUser());
        }
        if (server.dbPassword() != null) {
            props.setProperty("password", server.dbPassword());
        }
        props.setProperty("ApplicationName", "storm");
        return DriverManager.getConnection(server.dbUrl(), props);
    }

    /**
     * Kills the primary and promotes the standby {@code plan.failovers()} times, evenly spread over
     * the intents (when {@code done} reaches each share); copies a new standby from the promoted
     * primary before the next one.
     */
    private void injectFailovers(AtomicBoolean running, AtomicInteger done) {
        boolean promoting = false;
        try {
            for (int k = 1; k <= plan.failovers(); k++) {
                int due = (int) ((long) options.intents() * k / (plan.failovers() + 1));
                while (done.get() < due && running.get()) {
                    Thread.sleep(2);
                }
                if (!running.get()) {
                    return;
                }
                promoting = true;
                FailoverCluster.Failover f = cluster.failover();
                promoting = false;
                failovers.add(f);
                faults.incrementAndGet();
                progress.printf("storm: failover %d/%d after %d intents: the primary on port %d SIGKILLed, the standby on %d"
                        + " promoted in %d ms (%d bytes behind just before)%n", k, plan.failovers(), done.get(), f.killedPort(),
                        f.promotedPort(), f.promoteMillis(), f.standbyLagBytes());
                if (k < plan.failovers()) {
                    long t = System.nanoTime();
                    cluster.attachStandby();
                    progress.printf("storm: a new standby streams from it after %d ms%n", (System.nanoTime() - t) / 1_000_000);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            failoverError = e;
            aborted = promoting; // no primary may be left; a standby that would not attach leaves the primary serving
            progress.println("storm: a failover failed" + (promoting ? ", the clients stop: " : ": ") + e + "\n" + cluster.logTail(3000));
        }
    }

    /**
     * After the failovers: which final answers the promoted primary no longer holds (a 201 whose
     * transfer is gone, or any answer whose key has no recorded claim), then every key sent once
     * more, as by a client that never saw its answer, each compared with the first answer.
     */
    private FailoverSummary afterFailovers(List<Intent> intents) throws Exception {
        Set<String> transfers = transferIds();
        Set<String> recorded = new HashSet<>();
        try (Connection c = sideConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT idem_key FROM " + server.schema() + ".idempotency_claim WHERE state IN (1, 2)")) {
            while (rs.next()) {
                recorded.add(rs.getString(1));
            }
        }
        int lostExecuted = 0;
        int lostOther = 0;
        for (Intent intent : intents) {
            Answer first = finalAnswers.get(intent.index());
            if (first == null) {
                continue;
            }
            boolean created = first.status() == 201;
            if (!recorded.contains(intent.key().value())
                    || (created && !transfers.contains(MAPPER.readTree(first.body()).get("id").asText()))) {
                if (created) {
                    lostExecuted++;
                } else {
                    lostOther++;
                }
            }
        }
        Map<String, Integer> resent = new ConcurrentHashMap<>();
        try (ExecutorService clients = Executors.newFixedThreadPool(options.clients())) {
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            for (Intent intent : intents) {
                Answer first = finalAnswers.get(intent.index());
                if (first == null) {
                    continue;
                }
                futures.add(CompletableFuture.runAsync(() -> {
                    Answer again = null;
                    while (again == null && !aborted) {
                        again = send(intent.token(), intent.path(), intent.body(), intent.key()).join();
                        if (again == null) {
                            pause(ThreadLocalRandom.current());
                        }
                    }
                    String how = again == null ? "no answer" : again.sameAs(first) ? SAME_ANSWER
                            : again.status() == 201 && first.status() == 201 ? EXECUTED_AGAIN : ANOTHER_ANSWER;
                    resent.merge(how, 1, Integer::sum);
                    if (again != null && !again.sameAs(first)) {
                        mismatchedReplays.incrementAndGet();
                        progress.println("storm: intent " + intent.index() + " sent again after the failovers answered "
                                + again.status() + " " + new String(again.body()) + ", first " + first.status() + " " + new String(first.body()));
                    }
                }, clients));
            }
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
        }
        return new FailoverSummary(cluster.description().replaceAll(", primary .*", ""), plan.failovers(), List.copyOf(failovers),
                (int) intents.stream().filter(i -> finalAnswers.containsKey(i.index())).count(), lostExecuted, lostOther,
                new TreeMap<>(resent));
    }

    // ---------------------------------------------------------------- checks

    private Set<String> transferIds() throws SQLException {
        Set<String> ids = new HashSet<>();
        try (Connection c = sideConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT id FROM " + server.schema() + ".transfer")) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        }
        return ids;
    }

    private Map<String, Boolean> check(List<Intent> intents, Set<String> before) throws Exception {
        Map<String, Boolean> results = new LinkedHashMap<>();
        Set<String> after = transferIds();
        after.removeAll(before);
        Set<String> acknowledged = new HashSet<>();
        boolean everyIntentAnswered = finalAnswers.size() == intents.size();
        for (Answer a : finalAnswers.values()) {
            if (a.status() == 201) {
                acknowledged.add(MAPPER.readTree(a.body()).get("id").asText());
            }
        }
        results.put("every intent got a final answer", everyIntentAnswered);
        results.put("every acknowledged intent took effect exactly once (" + acknowledged.size() + " transfers)",
                after.equals(acknowledged));
        try (Connection c = sideConnection(); Statement s = c.createStatement()) {
            String schema = server.schema();
            results.put("each intent's key holds exactly one recorded answer",
                    count(s, "SELECT count(*) FROM " + schema + ".idempotency_claim WHERE state IN (1, 2)"
                            + " AND idem_key IN (" + keys(intents) + ")") == intents.size());
            results.put("balances sum to zero per tenant and currency",
                    count(s, "SELECT count(*) FROM (SELECT tenant, currency FROM " + schema + ".account"
                            + " GROUP BY tenant, currency HAVING sum(balance) <> 0) x") == 0);
            results.put("no customer balance is negative",
                    count(s, "SELECT count(*) FROM " + schema + ".account WHERE NOT is_funding AND balance < 0") == 0);
            results.put("every transfer has two postings summing to zero",
                    count(s, "SELECT count(*) FROM (SELECT t.id FROM " + schema + ".transfer t LEFT JOIN " + schema
                            + ".posting p ON p.transfer_id = t.id GROUP BY t.id, t.amount"
                            + " HAVING count(p.id) <> 2 OR coalesce(sum(p.amount), 1) <> 0 OR max(p.amount) <> t.amount) x") == 0);
            results.put("every balance equals the sum of its postings",
                    count(s, "SELECT count(*) FROM " + schema + ".account a WHERE a.balance <> (SELECT coalesce(sum(p.amount), 0)"
                            + " FROM " + schema + ".posting p WHERE p.account_id = a.id)") == 0);
        }
        results.put("every answer for a key was byte-identical to the first", mismatchedReplays.get() == 0);
        return results;
    }

    /**
     * The checks a client can make over HTTP against a ledger whose database it cannot see: every
     * acknowledged transfer is there, and each of the storm's accounts holds exactly what its
     * deposits and the acknowledged intents say (so nothing unacknowledged moved, nothing moved twice).
     */
    private Map<String, Boolean> checkOverHttp(List<Intent> intents) throws Exception {
        Map<String, Boolean> results = new LinkedHashMap<>();
        results.put("every intent got a final answer", finalAnswers.size() == intents.size());
        Map<String, BigDecimal> expected = new LinkedHashMap<>(setUpBalances);
        boolean transfersThere = true;
        String token = tokens.keySet().iterator().next();
        for (Intent intent : intents) {
            Answer a = finalAnswers.get(intent.index());
            if (a == null || a.status() != 201) {
                continue;
            }
            BigDecimal amount = new BigDecimal(intent.body().get("amount"));
            if (intent.path().endsWith("/deposits")) {
                String to = intent.path().split("/")[2];
                expected.merge(to, amount, BigDecimal::add);
            } else {
                expected.merge(intent.body().get("from"), amount.negate(), BigDecimal::add);
                expected.merge(intent.body().get("to"), amount, BigDecimal::add);
            }
            String id = MAPPER.readTree(a.body()).get("id").asText();
            transfersThere &= get(token, "/transfers/" + id).status() == 200;
        }
        results.put("every acknowledged transfer is there", transfersThere);
        boolean balances = true;
        boolean nonNegative = true;
        for (Map.Entry<String, BigDecimal> e : expected.entrySet()) {
            Answer account = get(token, "/accounts/" + e.getKey());
            BigDecimal balance = new BigDecimal(MAPPER.readTree(account.body()).get("balance").asText());
            if (balance.compareTo(e.getValue()) != 0) {
                balances = false;
                progress.println("storm: account " + e.getKey() + " holds " + balance + ", the acknowledged intents say " + e.getValue());
            }
            nonNegative &= balance.signum() >= 0;
        }
        results.put("every account holds what its deposits and the acknowledged intents say (" + expected.size() + " accounts)", balances);
        results.put("no customer balance is negative", nonNegative);
        results.put("every answer for a key was byte-identical to the first", mismatchedReplays.get() == 0);
        return results;
    }

    /**
     * The library's own count of what it did, from the ledger's {@code GET /metrics}: the calls of
     * {@code idemtx.call} by outcome (and exception), summed over their other tags. Empty when the
     * ledger has no metrics.
     */
    private Map<String, Long> libraryCounts() {
        Map<String, Long> counts = new java.util.TreeMap<>();
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(base.resolve("/metrics")).timeout(Duration.ofSeconds(10)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                return counts;
            }
            for (String line : r.body().split("\n")) {
                if (!line.startsWith("idemtx_call_seconds_count{") || !line.contains("operation=\"transaction\"")) {
                    continue;
                }
                String outcome = label(line, "outcome");
                String exception = label(line, "exception");
                String key = "failed".equals(outcome) ? "failed:" + exception : outcome;
                long value = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                counts.merge(key, value, Long::sum);
            }
        } catch (IOException | RuntimeException e) {
            progress.println("storm: could not read the ledger's /metrics: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return counts;
    }

    private static String label(String line, String name) {
        int at = line.indexOf(name + "=\"");
        if (at < 0) {
            return "";
        }
        int from = at + name.length() + 2;
        return line.substring(from, line.indexOf('"', from));
    }

    /**
     * Where the library's count and the clients' tally must agree: each intent that took effect was
     * executed once (or its commit's answer was lost: CommitOutcomeUnknownException), and clients
     * cannot have seen more replays than the library served.
     */
    private void checkMetrics(Map<String, Long> library, long clientReplays, Map<String, Boolean> invariants) {
        long executed = library.getOrDefault("executed", 0L);
        long commitUnknown = library.getOrDefault("failed:CommitOutcomeUnknownException", 0L);
        long tookEffect = finalAnswers.values().stream().filter(a -> a.status() == 201).count();
        invariants.put("the library's executed count (" + executed + ", + " + commitUnknown + " commit-unknown) matches the "
                + tookEffect + " intents that took effect", executed <= tookEffect && tookEffect <= executed + commitUnknown);
        long served = library.getOrDefault("replayed", 0L) + library.getOrDefault("rejected", 0L);
        invariants.put("replays seen by clients (" + clientReplays + ") <= answers the library served from a record"
                + " (replayed + rejected: " + served + ")",
                clientReplays <= served);
    }

    private Answer get(String token, String path) throws Exception {
        HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(10))
                .header("Authorization", "Bearer " + token).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
        return new Answer(r.statusCode(), null, r.body());
    }

    private static String keys(List<Intent> intents) {
        StringBuilder out = new StringBuilder();
        for (Intent i : intents) {
            if (!out.isEmpty()) {
                out.append(',');
            }
            out.append('\'').append(i.key().value()).append('\''); // UUIDs: no quoting issues
        }
        return out.toString();
    }

    private static long count(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private Map<String, Integer> answerCounts() {
        Map<String, Integer> counts = new java.util.TreeMap<>();
        for (Answer a : finalAnswers.values()) {
            String label = a.status() == 201 ? "201" : a.status() + " " + code(a.body());
            counts.merge(label, 1, Integer::sum);
        }
        return counts;
    }

    private static String code(byte[] body) {
        try {
            JsonNode json = MAPPER.readTree(body);
            return json.path("code").asText("?");
        } catch (IOException e) {
            return "?";
        }
    }
}
