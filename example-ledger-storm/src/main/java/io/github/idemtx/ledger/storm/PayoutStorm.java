package io.github.idemtx.ledger.storm;

import io.github.idemtx.db.testing.LocalPostgres;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.ledger.Flags;
import java.io.File;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
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
 *   <li>nothing left in flight, and every claim left needing reconciliation is one whose bank lookups
 *       went unanswered; the report lists them.
 * </ul>
 *
 * Flags: {@code --intents=300 --clients=8 --kills=8 --seed=N} and the ledger's {@code --db-url},
 * {@code --db-user}, {@code --db-password}. Exits 1 on any violation.
 */
public final class PayoutStorm {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final String TOKEN = "payout-storm-token";
    private static final String TENANT = "payout-storm-tenant";
    private static final int ACCOUNTS = 12;

    /**
     * The downstream key of claim {@code c}, as ExternalEffect derives it (base64url SHA-256 of scope,
     * 0, key, 0, created_at in epoch microseconds), without the {@code effect:} prefix.
     */
    static final String DOWNSTREAM_KEY_SQL = "rtrim(translate(encode(sha256(convert_to(c.scope, 'UTF8') || '\\x00'::bytea"
            + " || convert_to(c.idem_key, 'UTF8') || '\\x00'::bytea"
            + " || convert_to(((extract(epoch from c.created_at) * 1000000)::bigint)::text, 'UTF8')), 'base64'), '+/', '-_'), '=')";

    /** The storm's settings. */
    public record Options(int intents, int clients, int kills, long seed, String dbUrl, String dbUser, String dbPassword,
            String ledgerSchema, String bankSchema) {}

    /** What the storm found. */
    public record Report(int intents, Map<String, Integer> answers, int kills, int restarts, List<String> reconciliation,
            Map<String, Boolean> invariants, double seconds, Map<String, Long> bank) {

        public boolean passed() {
            return invariants.values().stream().allMatch(Boolean::booleanValue);
        }

        public String render() {
            StringBuilder out = new StringBuilder(String.format("%npayout storm report%n"));
            out.append(String.format("  intents            %d (final answers: %s)%n", intents, answers));
            out.append(String.format("  ledger kills       %d SIGKILLs, %d restarts, over %.1f s%n", kills, restarts, seconds));
            out.append(String.format("  bank               %s%n", bank));
            out.append(String.format("  reconciliation     %d claim(s)%s%n", reconciliation.size(),
                    reconciliation.isEmpty() ? "" : ": " + reconciliation));
            invariants.forEach((name, ok) -> out.append(String.format("  %-4s %s%n", ok ? "PASS" : "FAIL", name)));
            out.append(passed() ? "  all invariants hold\n" : "  SOME INVARIANTS FAILED\n");
            return out.toString();
        }
    }

    public static Options parse(String[] args) {
        Map<String, String> flags = Flags.parse("storm arguments",
                java.util.Arrays.stream(args).filter(a -> !a.equals("--payouts")).toArray(String[]::new));
        Set<String> known = Set.of("payouts", "intents", "clients", "kills", "seed", "db-url", "db-user", "db-password", "schema");
        for (String name : flags.keySet()) {
            if (!known.contains(name)) {
                throw new IllegalArgumentException("unknown flag --" + name + " for storm --payouts; known: " + known);
            }
        }
        String schema = flags.getOrDefault("schema", "ledger_payout_storm");
        if (!schema.matches("[a-z_][a-z0-9_]{0,50}")) {
            throw new IllegalArgumentException("--schema must be a plain lower-case identifier, was '" + schema + "'");
        }
        return new Options(Flags.intFlag(flags, "intents", 300, 1, 100_000), Flags.intFlag(flags, "clients", 8, 1, 128),
                Flags.intFlag(flags, "kills", 8, 0, 1000), Flags.longFlag(flags, "seed", System.nanoTime()),
                flags.getOrDefault("db-url", System.getenv("LEDGER_DB_URL")),
                flags.getOrDefault("db-user", System.getenv("LEDGER_DB_USER")),
                flags.getOrDefault("db-password", System.getenv("LEDGER_DB_PASSWORD")), schema, schema + "_bank");
    }

    public static void main(String[] args) throws Exception {
        Report report = run(parse(args), System.out);
        System.out.print(report.render());
        System.exit(report.passed() ? 0 : 1);
    }

    // ---------------------------------------------------------------- the run

    private final Options options;
    private final java.io.PrintStream progress;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final int ledgerPort;
    private final int bankPort;
    private volatile Process ledger;
    private Process bank;
    private final AtomicInteger kills = new AtomicInteger();
    private final AtomicInteger restarts = new AtomicInteger();
    /** Kills left of {@code --kills}; spent under this object's lock (the chaos thread's and the progress kills). */
    private int killsLeft;
    private final AtomicInteger finished = new AtomicInteger();

    private PayoutStorm(Options options, java.io.PrintStream progress) throws IOException {
        this.options = options;
        this.progress = progress;
        this.ledgerPort = freePort();
        this.bankPort = freePort();
    }

    /**
     * Runs the storm; the database is resolved as the ledger's ({@link LocalPostgres}: the URL, else
     * 127.0.0.1:5432, else an embedded server that lives as long as this run) and handed to the ledger
     * and bank processes by URL.
     */
    public static Report run(Options options, java.io.PrintStream progress) throws Exception {
        try (LocalPostgres db = LocalPostgres.resolve(options.dbUrl(), options.dbUser(), options.dbPassword(),
                LocalLedger.SETTINGS)) {
            progress.println("storm database: " + db.describe());
            Options resolved = new Options(options.intents(), options.clients(), options.kills(), options.seed(), db.url(),
                    db.user() == null ? System.getProperty("user.name") : db.user(), db.password(), options.ledgerSchema(),
                    options.bankSchema());
            return new PayoutStorm(resolved, progress).run();
        }
    }

    private record Intent(int index, String account, BigDecimal amount, String key) {}

    private Report run() throws Exception {
        long start = System.nanoTime();
        sql("DROP SCHEMA IF EXISTS " + options.ledgerSchema() + " CASCADE");
        bank = spawn("bank", "io.github.idemtx.ledger.bank.BankServer", "--port=" + bankPort, "--fresh=true",
                "--schema=" + options.bankSchema(), "--db-url=" + options.dbUrl(), "--db-user=" + options.dbUser(),
                "--hang-ms=6000");
        try {
            awaitHealth(bankPort, bank);
            startLedger();
            return storm(start);
        } finally {
            if (ledger != null) {
                ledger.destroyForcibly().waitFor();
            }
            bank.destroyForcibly().waitFor();
        }
    }

    private Report storm(long start) throws Exception {
        Random seeded = new Random(options.seed());
        List<String> accounts = new ArrayList<>();
        BigDecimal deposited = BigDecimal.ZERO;
        for (int i = 0; i < ACCOUNTS; i++) {
            JsonNode account = finalAnswer("/accounts", "{\"currency\":\"BRL\"}", UUID.randomUUID().toString()).json();
            String id = account.get("id").asText();
            BigDecimal amount = new BigDecimal(500 + seeded.nextInt(1500) + ".00");
            finalAnswer("/accounts/" + id + "/deposits", "{\"amount\":\"" + amount.toPlainString() + "\"}", UUID.randomUUID().toString());
            accounts.add(id);
            deposited = deposited.add(amount);
        }
        List<Intent> intents = new ArrayList<>();
        for (int i = 0; i < options.intents(); i++) {
            intents.add(new Intent(i, accounts.get(seeded.nextInt(ACCOUNTS)), new BigDecimal((1 + seeded.nextInt(150)) + ".00"),
                    UUID.randomUUID().toString()));
        }
        progress.println("payout storm: ledger :" + ledgerPort + ", bank :" + bankPort + ", " + options);

        Map<String, Answer> answers = new ConcurrentHashMap<>();
        killsLeft = options.kills();
        AtomicBoolean storming = new AtomicBoolean(true);
        Thread chaos = Thread.ofPlatform().name("payout-storm-chaos").start(() -> chaos(storming));
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService clients = Executors.newFixedThreadPool(options.clients())) {
            List<Future<?>> running = new ArrayList<>();
            for (int c = 0; c < options.clients(); c++) {
                running.add(clients.submit(() -> {
                    int i;
                    while ((i = next.getAndIncrement()) < intents.size()) {
                        Intent intent = intents.get(i);
                        answers.put(intent.key(), untilFinal(intent));
                        killOnProgress(finished.incrementAndGet(), intents.size());
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) {
                f.get();
            }
        } finally {
            storming.set(false);
            chaos.join();
        }
        // the faults stop; the ledger (alive) settles what is in flight with its recoverer
        bankFaults(Map.of("errorBeforeApplyRate", 0, "timeoutAfterApplyRate", 0, "declineRate", 0, "lookupLagMs", 0,
                "lookupErrorRate", 0));
        ensureLedger();
        long until = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (count("SELECT count(*) FROM " + options.ledgerSchema() + ".idempotency_claim WHERE effect = 'payout' AND state = 3") > 0
                && System.nanoTime() < until) {
            Thread.sleep(500);
        }
        // clients that stopped at "reconciliation" or ran out of patience ask once more
        for (Intent intent : intents) {
            Answer a = answers.get(intent.key());
            if (a == null || !a.isFinal()) {
                answers.put(intent.key(), untilFinal(intent));
            }
        }
        Report report = check(intents, answers, deposited, (System.nanoTime() - start) / 1e9);
        return report;
    }

    /** SIGKILLs the ledger every so often and restarts it; switches the bank's faults. */
    private void chaos(AtomicBoolean storming) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try {
            while (storming.get()) {
                bankFaults(Map.of(
                        "errorBeforeApplyRate", random.nextInt(3) == 0 ? 0.15 : 0,
                        "timeoutAfterApplyRate", random.nextInt(3) == 0 ? 0.15 : 0,
                        "declineRate", random.nextInt(3) == 0 ? 0.2 : 0,
                        "lookupLagMs", random.nextInt(2) == 0 ? 800 : 0,
                        "lookupErrorRate", random.nextInt(3) == 0 ? 0.3 : 0));
                Thread.sleep(300 + random.nextInt(700));
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
    private void killOnProgress(int done, int total) throws IOException, InterruptedException {
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
    private synchronized void kill(boolean onProgress, int marks) throws IOException, InterruptedException {
        if (killsLeft == 0 || (onProgress && kills.get() >= marks)) {
            return;
        }
        killsLeft--;
        ledger.destroyForcibly().waitFor();
        kills.incrementAndGet();
        Thread.sleep(200 + ThreadLocalRandom.current().nextInt(600));
        startLedger();
    }

    private record Answer(int status, JsonNode json, String replayed) {
        boolean isFinal() {
            return status == 201 || status == 422;
        }
    }

    /** Sends the payout again and again with its key until a final answer (201 paid or 422 refused). */
    private Answer untilFinal(Intent intent) {
        String body = "{\"from\":\"" + intent.account() + "\",\"amount\":\"" + intent.amount().toPlainString()
                + "\",\"destination\":\"DEST-" + intent.index() + "\"}";
        Answer last = null;
        for (int attempt = 0; attempt < 400; attempt++) {
            try {
                last = post("/payouts", body, intent.key());
                if (last.isFinal() || last.status() == 502) {
                    return last;
                }
            } catch (IOException e) {
                // the ledger is down (killed) or the answer was cut: retry with the same key
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return last;
            }
            sleep(50 + ThreadLocalRandom.current().nextInt(150));
        }
        return last;
    }

    private Answer finalAnswer(String path, String body, String key) throws Exception {
        for (int attempt = 0; attempt < 200; attempt++) {
            try {
                Answer a = post(path, body, key);
                if (a.status() == 201) {
                    return a;
                }
            } catch (IOException e) {
                // retry
            }
            sleep(100);
        }
        throw new IllegalStateException("no answer for " + path);
    }

    private Answer post(String path, String body, String key) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ledgerPort + path))
                .timeout(Duration.ofSeconds(15)).header("Authorization", "Bearer " + TOKEN)
                .header("Content-Type", "application/json").header("Idempotency-Key", "\"" + key + "\"")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        JsonNode json = r.body().isEmpty() ? MAPPER.nullNode() : MAPPER.readTree(r.body());
        return new Answer(r.statusCode(), json, r.headers().firstValue("Idempotent-Replayed").orElse(null));
    }

    // ---------------------------------------------------------------- the checks

    private Report check(List<Intent> intents, Map<String, Answer> answers, BigDecimal deposited, double seconds) throws Exception {
        Map<String, Boolean> invariants = new LinkedHashMap<>();
        String l = options.ledgerSchema();
        String b = options.bankSchema();
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (Intent intent : intents) {
            Answer a = answers.get(intent.key());
            String kind = a == null ? "none" : a.status() == 201 ? "paid" : a.status() == 422
                    ? "refused:" + a.json().path("code").asText() : a.status() == 502 ? "reconciliation" : "status " + a.status();
            counts.merge(kind, 1, Integer::sum);
        }
        // the bank's charges by the downstream key the ledger sent, the ledger's payouts by the client's key
        Map<String, String[]> bankCharges = new ConcurrentHashMap<>();
        query("SELECT idem_key, id, status, amount FROM " + b + ".charge", rs -> bankCharges.put(rs.getString(1),
                new String[] {rs.getString(2), rs.getString(3), rs.getBigDecimal(4).toPlainString()}));
        Map<String, String[]> payouts = new ConcurrentHashMap<>();
        query("SELECT idem_key, state, charge_id, amount FROM " + l + ".payout", rs -> payouts.put(rs.getString(1),
                new String[] {rs.getString(2), rs.getString(3), rs.getBigDecimal(4).toPlainString()}));
        Set<String> chargeIdsOfPaidPayouts = new LinkedHashSet<>();
        payouts.values().stream().filter(p -> "paid".equals(p[0])).forEach(p -> chargeIdsOfPaidPayouts.add(p[1]));
        long paidPayouts = payouts.values().stream().filter(p -> "paid".equals(p[0])).count();

        invariants.put("each payout intent charged at the bank at most once, and no charge that no payout asked for",
                count("SELECT count(*) FROM (SELECT idem_key FROM " + b + ".charge GROUP BY idem_key HAVING count(*) > 1) x") == 0
                        && bankCharges.size() <= payouts.size()
                        && bankCharges.values().stream().filter(c -> "succeeded".equals(c[1])).count() == paidPayouts
                        && bankCharges.values().stream().filter(c -> "succeeded".equals(c[1])).allMatch(c -> chargeIdsOfPaidPayouts.contains(c[0])));
        boolean paidOnce = true;
        for (Intent intent : intents) {
            Answer a = answers.get(intent.key());
            if (a != null && a.status() == 201) {
                String told = a.json().path("chargeId").asText();
                String[] payout = payouts.get(intent.key());
                long charges = bankCharges.values().stream().filter(c -> c[0].equals(told) && "succeeded".equals(c[1])).count();
                paidOnce &= payout != null && "paid".equals(payout[0]) && told.equals(payout[1]) && charges == 1;
            }
        }
        invariants.put("every intent a client saw as paid is charged exactly once (the charge it was told) and posted exactly once", paidOnce);
        invariants.put("no hold without a claim in flight or awaiting reconciliation",
                count("SELECT count(*) FROM " + l + ".payout p WHERE p.state = 'in_flight' AND NOT EXISTS (SELECT 1 FROM " + l
                        + ".idempotency_claim c WHERE c.scope = p.tenant AND c.idem_key = p.idem_key AND c.state IN (3, 4))") == 0);
        BigDecimal balances = decimal("SELECT coalesce(sum(balance), 0) FROM " + l + ".account WHERE NOT is_funding");
        BigDecimal charged = decimal("SELECT coalesce(sum(amount), 0) FROM " + b + ".charge WHERE status = 'succeeded'");
        BigDecimal held = decimal("SELECT coalesce(sum(amount), 0) FROM " + l + ".payout WHERE state = 'in_flight'");
        invariants.put("balances conserved: customer debits (" + deposited.subtract(balances).toPlainString()
                + ") = bank charges (" + charged.toPlainString() + ") + holds (" + held.toPlainString() + ")",
                deposited.subtract(balances).compareTo(charged.add(held)) == 0);
        List<String> reconciliation = new ArrayList<>();
        query("SELECT idem_key FROM " + l + ".idempotency_claim WHERE effect = 'payout' AND state = 4 ORDER BY idem_key",
                rs -> reconciliation.add(rs.getString(1)));
        invariants.put("nothing left in flight",
                count("SELECT count(*) FROM " + l + ".idempotency_claim WHERE effect = 'payout' AND state = 3") == 0);
        // a claim is handed to reconciliation only after lookups of its downstream key went unanswered
        long unexplained = count("SELECT count(*) FROM " + l + ".idempotency_claim c WHERE c.effect = 'payout' AND c.state = 4"
                + " AND NOT EXISTS (SELECT 1 FROM " + b + ".lookup k WHERE NOT k.answered AND k.idem_key = 'payout:'"
                + " || " + DOWNSTREAM_KEY_SQL + ")");
        invariants.put("every claim needing reconciliation is one whose bank lookups went unanswered", unexplained == 0);
        Map<String, Long> bankFigures = new LinkedHashMap<>();
        query("SELECT status, count(*) FROM " + b + ".charge GROUP BY status ORDER BY status", rs -> bankFigures.put(rs.getString(1) + " charges", rs.getLong(2)));
        query("SELECT answered, count(*) FROM " + b + ".lookup GROUP BY answered ORDER BY answered", rs ->
                bankFigures.put(rs.getBoolean(1) ? "lookups answered" : "lookups unanswered", rs.getLong(2)));
        return new Report(intents.size(), counts, kills.get(), restarts.get(), reconciliation, invariants, seconds, bankFigures);
    }

    // ---------------------------------------------------------------- processes

    private void startLedger() throws IOException {
        ledger = spawn("ledger", "io.github.idemtx.ledger.LedgerServer", "--port=" + ledgerPort, "--schema=" + options.ledgerSchema(),
                "--db-url=" + options.dbUrl(), "--db-user=" + options.dbUser(), "--tokens=" + TOKEN + "=" + TENANT,
                "--bank-url=http://127.0.0.1:" + bankPort, "--pool-size=16");
        awaitHealth(ledgerPort, ledger);
        restarts.incrementAndGet();
    }

    private void ensureLedger() throws IOException {
        if (ledger == null || !ledger.isAlive()) {
            startLedger();
        }
    }

    private Process spawn(String name, String mainClass, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.add("-cp");
        command.add(classPath());
        command.add(mainClass);
        command.addAll(List.of(args));
        if (options.dbPassword() != null) {
            command.add("--db-password=" + options.dbPassword());
        }
        File log = File.createTempFile("payout-storm-" + name + "-", ".log");
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
    }

    /** The class path this program runs with, also under exec:java, whose class loader is not the system one. */
    private static String classPath() {
        Set<String> entries = new LinkedHashSet<>();
        for (ClassLoader cl = PayoutStorm.class.getClassLoader(); cl != null; cl = cl.getParent()) {
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

    private void awaitHealth(int port, Process process) throws IOException {
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < until) {
            if (!process.isAlive()) {
                throw new IOException("the process for port " + port + " exited with " + process.exitValue());
            }
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                        .timeout(Duration.ofSeconds(1)).GET().build(), HttpResponse.BodyHandlers.ofString());
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

    private void bankFaults(Map<String, Object> faults) {
        try {
            http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + bankPort + "/faults"))
                    .POST(HttpRequest.BodyPublishers.ofString(MAPPER.writeValueAsString(faults))).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            progress.println("payout storm: could not switch the bank's faults: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    // ---------------------------------------------------------------- SQL

    @FunctionalInterface
    private interface Row {
        void accept(ResultSet rs) throws java.sql.SQLException;
    }

    private Connection connect() throws java.sql.SQLException {
        Properties p = new Properties();
        p.setProperty("user", options.dbUser());
        if (options.dbPassword() != null) {
            p.setProperty("password", options.dbPassword());
        }
        p.setProperty("ApplicationName", "payout-storm");
        return DriverManager.getConnection(options.dbUrl(), p);
    }

    private void sql(String statement) throws java.sql.SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            s.execute(statement);
        }
    }

    private void query(String sql, Row row) throws java.sql.SQLException {
        try (Connection c = connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                row.accept(rs);
            }
        }
    }

    private long count(String sql) throws java.sql.SQLException {
        long[] n = {0};
        query(sql, rs -> n[0] = rs.getLong(1));
        return n[0];
    }

    private BigDecimal decimal(String sql) throws java.sql.SQLException {
        BigDecimal[] v = {BigDecimal.ZERO};
        query(sql, rs -> v[0] = rs.getBigDecimal(1));
        return v[0];
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
