package io.github.idemtx.ledger.storm;

import io.github.idemtx.db.testing.FailoverCluster;
import io.github.idemtx.db.testing.FailoverCluster.Replication;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.db.testing.LocalPostgres;
import io.github.idemtx.db.testing.PatroniCluster;
import io.github.idemtx.ledger.LedgerConfig;
import io.github.idemtx.ledger.LedgerServer;
import io.github.idemtx.ledger.storm.StormClients.Intent;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

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
 *
 * <p>This class runs a storm from start to end; each job is a class of its own: the flags
 * ({@link StormFlags}), the clients ({@link StormClients}, counting into a {@link StormTally}),
 * the faults ({@link ConnectionKiller}, or {@link FailoverDriver} with {@code --failover}), the
 * invariants ({@link StormChecks}) and the report ({@link StormReport}); with a broker, the
 * ledger's events, a read model applying them and the broker's closes ({@link StormEvents},
 * {@link EventReadModel}), and further relays of the events in processes of their own, SIGKILLed
 * mid-batch {@code --relay-kills} times during the load ({@link RelayChaos}, {@link StormRelay}).
 *
 * <p>With the events on, the storm also checks that every committed transfer's event was delivered
 * at least once under one message id, none exists for an intent that did not commit, every event
 * reached the queue and the read model applied it once, no event is pending or leased after the
 * drain, and, when relay kills were asked for, that some of them landed mid-batch (the killed
 * relay's owner still held leased, undelivered rows) and that everything a killed relay held was
 * delivered afterwards. {@code storm --payouts} is
 * {@link PayoutStorm}; {@code storm --queue}, intents through RabbitMQ, is {@link QueueStorm}.
 */
public final class Storm {

    /**
     * The storm's settings; see {@link StormFlags#parse}. {@code relayKills}: how many times a second
     * relay of the ledger's events, a process of its own, is SIGKILLed mid-batch during the load
     * ({@link RelayChaos}; with the events on only).
     */
    public record Options(
            int clients,
            int intents,
            double faultsPerSecond,
            int accountsPerTenant,
            double duplicateRate,
            Duration clientTimeout,
            long seed,
            int relayKills) {

        /** Settings without relay kills. */
        public Options(
                int clients,
                int intents,
                double faultsPerSecond,
                int accountsPerTenant,
                double duplicateRate,
                Duration clientTimeout,
                long seed) {
            this(clients, intents, faultsPerSecond, accountsPerTenant, duplicateRate, clientTimeout, seed, 0);
        }
    }

    /**
     * {@code --failover}: the ledger's database is a primary and a standby of the storm's own
     * ({@link FailoverCluster}), the ledger on pgjdbc's multi-host URL; {@code failovers} times during
     * the load the primary is SIGKILLed and the standby promoted (a new standby is copied from it
     * before the next one). {@code --failover=patroni}: three members under Patroni over etcd
     * ({@link io.github.idemtx.db.testing.PatroniCluster}, {@code synchronousMode}), and
     * {@code failovers} leader kills (SIGKILL of its PostgreSQL and of its Patroni, alternately)
     * interleaved with {@code switchovers} operator switchovers. No connection kills then: the
     * faults of the cluster are the faults.
     */
    public record FailoverPlan(
            boolean patroni,
            Replication replication,
            String synchronousCommit,
            PatroniCluster.SynchronousMode synchronousMode,
            int failovers,
            int switchovers) {

        /** The home-made pair. */
        public FailoverPlan(Replication replication, String synchronousCommit, int failovers) {
            this(false, replication, synchronousCommit, null, failovers, 0);
        }

        /** A Patroni cluster. */
        public static FailoverPlan patroni(PatroniCluster.SynchronousMode mode, int failovers, int switchovers) {
            return new FailoverPlan(true, null, null, mode, failovers, switchovers);
        }
    }

    /**
     * Starts a ledger (database as {@code LEDGER_*} and {@code --db-*} say, schema
     * {@code ledger_storm} unless {@code --schema} names another, recreated), runs the storm against
     * it, prints the report and exits 1 if an invariant failed.
     */
    public static void main(String[] args) throws Exception {
        try {
            launch(args);
        } catch (LocalPostgres.NoDatabaseException e) {
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
        if (Arrays.asList(args).contains("--queue") || Arrays.asList(args).contains("--queue=true")) {
            QueueStorm.main(args);
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
        FailoverPlan failover = StormFlags.parseFailover(args);
        if (baseUrl != null || token != null) {
            if (failover != null) {
                throw new IllegalArgumentException(
                        "--failover runs a ledger of its own: --base-url and --token cannot be given with it");
            }
            if (baseUrl == null || token == null || !baseUrl.matches("https?://\\S+")) {
                throw new IllegalArgumentException(
                        "a running ledger needs both --base-url=http://host:port and --token=<a tenant's token>");
            }
            StormReport report = runAgainstRunningLedger(
                    URI.create(baseUrl), token, StormFlags.parse(rest.toArray(String[]::new)), System.out);
            System.out.print(report.render());
            System.exit(report.passed() ? 0 : 1);
            return;
        }
        Options options = StormFlags.parse(args);
        List<String> ledgerArgs = new ArrayList<>();
        for (String arg : args) {
            if (arg.startsWith("--db-")
                    || arg.startsWith("--schema=")
                    || arg.startsWith("--pool-size=")
                    || arg.startsWith("--claim-mode=")) {
                ledgerArgs.add(arg);
            }
        }
        if (ledgerArgs.stream().noneMatch(a -> a.startsWith("--schema="))) {
            ledgerArgs.add("--schema=ledger_storm");
        }
        StormReport report = failover == null
                ? runAgainstNewLedger(ledgerArgs.toArray(String[]::new), options, System.out)
                : runWithFailover(ledgerArgs.toArray(String[]::new), options, failover, System.out);
        System.out.print(report.render());
        System.exit(report.passed() ? 0 : 1);
    }

    /** Starts a fresh ledger from {@code ledgerArgs} (its schema recreated), storms it, stops it. */
    public static StormReport runAgainstNewLedger(String[] ledgerArgs, Options options, java.io.PrintStream progress)
            throws Exception {
        return runAgainstNewLedger(ledgerArgs, options, null, null, progress);
    }

    /**
     * Starts the servers {@code plan} names (a primary and a standby of its own, {@link
     * FailoverCluster}, or a Patroni cluster) and a fresh ledger on them (pgjdbc's multi-host URL,
     * {@code ledgerArgs} for the rest: schema, pool size), storms it while the faults the plan names
     * happen, sends every key once more, checks, and removes the servers.
     */
    public static StormReport runWithFailover(
            String[] ledgerArgs, Options options, FailoverPlan plan, java.io.PrintStream progress) throws Exception {
        try (FailoverTarget cluster = FailoverTarget.start(plan)) {
            progress.println("storm: " + cluster.description());
            List<String> args = new ArrayList<>(Arrays.asList(ledgerArgs));
            args.add("--db-url=" + cluster.url());
            args.add("--db-user=" + cluster.user());
            Options noConnectionKills = new Options(
                    options.clients(),
                    options.intents(),
                    0,
                    options.accountsPerTenant(),
                    options.duplicateRate(),
                    options.clientTimeout(),
                    options.seed(),
                    0);
            return runAgainstNewLedger(args.toArray(String[]::new), noConnectionKills, cluster, plan, progress);
        }
    }

    private static StormReport runAgainstNewLedger(
            String[] ledgerArgs,
            Options options,
            FailoverTarget cluster,
            FailoverPlan plan,
            java.io.PrintStream progress)
            throws Exception {
        String tokenA = "storm-token-a-" + Long.toHexString(options.seed());
        String tokenB = "storm-token-b-" + Long.toHexString(options.seed());
        List<String> args = new ArrayList<>(Arrays.asList(ledgerArgs));
        args.add("--port=0");
        args.add("--tokens=" + tokenA + "=storm-tenant-a," + tokenB + "=storm-tenant-b");
        // the ledger's events through the outbox, on an exchange and a queue of the storm's own: without a
        // failover only (a promoted standby may lack a transfer whose event was already published)
        java.util.Optional<String> noBroker =
                cluster == null ? LocalBroker.unavailable() : java.util.Optional.of("a failover storm");
        try (StormEvents events = noBroker.isPresent()
                ? null
                : StormEvents.declare(
                        LocalBroker.url(), "ledger-storm-events-" + Long.toHexString(System.nanoTime()))) {
            if (events == null) {
                progress.println("storm: the ledger's events are off, not checked: " + noBroker.get());
            } else {
                args.addAll(events.ledgerArgs());
                args.addAll(events.transferQueueArgs());
            }
            return runAgainstNewLedger(args, options, cluster, plan, events, tokenA, tokenB, progress);
        }
    }

    private static StormReport runAgainstNewLedger(
            List<String> args,
            Options options,
            FailoverTarget cluster,
            FailoverPlan plan,
            StormEvents events,
            String tokenA,
            String tokenB,
            java.io.PrintStream progress)
            throws Exception {
        try (LocalLedger ledger =
                LocalLedger.start(LedgerConfig.from(args.toArray(String[]::new), System.getenv()), true)) {
            LedgerServer server = ledger.server();
            progress.println("storm: ledger on port " + server.port() + ", " + options);
            if (cluster != null) {
                progress.println(
                        "storm: lines \"ledger: ... answered 503\" below are requests that met the dead primary or"
                                + " found no primary yet: the client retries with the same key; the report counts them as 5xx");
            } else if (options.faultsPerSecond() > 0) {
                progress.println(
                        "storm: lines \"ledger: ... answered 503\" below are the injected connection kills doing their"
                                + " job: the client retries with the same key; the report counts them as 5xx");
            }
            SideDatabase db = new SideDatabase(server.dbUrl(), server.dbUser(), server.dbPassword(), "storm");
            if (events != null) {
                events.startReadModel(db, server.schema());
                events.startRelay(
                        new StormDatabase(server.dbUrl(), server.dbUser(), server.dbPassword()),
                        db,
                        server.schema(),
                        options.relayKills());
            }
            return new Storm(
                            URI.create("http://127.0.0.1:" + server.port()),
                            db,
                            server.schema(),
                            cluster,
                            plan,
                            events,
                            Map.of(tokenA, "storm-tenant-a", tokenB, "storm-tenant-b"),
                            options,
                            progress)
                    .run();
        }
    }

    /**
     * Storms a ledger it did not start, at {@code baseUrl} with one tenant's {@code token}: no
     * connection kills (it has no access to the database); the checks are those HTTP can make.
     */
    public static StormReport runAgainstRunningLedger(
            URI baseUrl, String token, Options options, java.io.PrintStream progress) throws Exception {
        progress.println("storm: ledger at " + baseUrl + ", " + options);
        return new Storm(baseUrl, null, null, null, null, null, Map.of(token, "the token's tenant"), options, progress)
                .run();
    }

    private final Options options;
    private final java.io.PrintStream progress;
    private final StormTally tally = new StormTally();
    private final StormClients clients;
    private final SideDatabase db; // null for a ledger the storm did not start
    private final String schema; // the ledger's: its sessions are named after it
    private final StormChecks checks;
    private final FailoverDriver failovers; // null without --failover
    private final StormEvents events; // null when the ledger's events are off

    private Storm(
            URI base,
            SideDatabase db,
            String schema,
            FailoverTarget cluster,
            FailoverPlan plan,
            StormEvents events,
            Map<String, String> tokens,
            Options options,
            java.io.PrintStream progress) {
        this.options = options;
        this.progress = progress;
        this.db = db;
        this.schema = schema;
        this.events = events;
        this.clients = new StormClients(base, tokens, options, tally, progress);
        this.checks = new StormChecks(clients, tally, db, schema, progress);
        this.failovers =
                cluster == null ? null : new FailoverDriver(cluster, options, clients, tally, db, schema, progress);
    }

    private StormReport run() throws Exception {
        clients.setUp();
        List<Intent> intents = clients.intents();
        Set<String> transfersBefore = db == null ? Set.of() : checks.transferIds();
        Map<String, Long> metricsBefore = checks.libraryCounts();
        long replaysBefore = tally.replays.get();

        AtomicBoolean running = new AtomicBoolean(true);
        AtomicInteger done = new AtomicInteger();
        Thread faultInjector = Thread.ofPlatform().name("storm-faults").start(() -> {
            if (failovers != null) {
                failovers.inject(running, done);
            } else if (db != null) {
                ConnectionKiller.run(db, schema, options.faultsPerSecond(), running, tally.faults, progress);
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
                progress.printf(
                        "storm: %d/%d intents, %d requests, %d faults, %d replays, %d 409s%n",
                        done.get(),
                        options.intents(),
                        tally.requests.get(),
                        tally.faults.get(),
                        tally.replays.get(),
                        tally.conflicts.get());
            }
        });
        Thread brokerFault = events == null
                ? null
                : Thread.ofPlatform()
                        .name("storm-broker-fault")
                        .start(() -> events.closeConnectionsMidway(running, done, intents.size(), progress));
        Thread relayKills = events == null
                ? null
                : Thread.ofPlatform()
                        .name("storm-relay-kills")
                        .start(() -> events.killRelayDuringLoad(running, done, intents.size(), progress));
        try {
            clients.perform(intents, done);
        } finally {
            running.set(false);
            faultInjector.join();
            if (brokerFault != null) {
                brokerFault.join();
                relayKills.join();
            }
            reporter.interrupt();
        }
        double seconds = (System.nanoTime() - start) / 1e9;

        StormReport.FailoverSummary failover = failovers == null ? null : failovers.afterFailovers(intents);
        Map<String, Boolean> invariants =
                db == null ? checks.overHttp(intents) : checks.inDatabase(intents, transfersBefore);
        if (events != null) {
            events.check(db, schema, invariants, progress);
        }
        Map<String, Long> library = new TreeMap<>(checks.libraryCounts());
        metricsBefore.forEach((k, v) -> library.merge(k, -v, Long::sum));
        if (!library.isEmpty()) {
            checks.againstMetrics(library, tally.replays.get() - replaysBefore, invariants);
        }
        Map<String, Boolean> measured = new LinkedHashMap<>();
        if (failover != null) {
            failovers.judge(failover, intents, invariants, measured);
        }
        return new StormReport(
                intents.size(),
                tally.requests.get(),
                tally.replays.get(),
                tally.conflicts.get(),
                tally.serverErrors.get(),
                tally.timeouts.get(),
                tally.faults.get(),
                seconds,
                tally.latency.getValueAtPercentile(50),
                tally.latency.getValueAtPercentile(99),
                invariants,
                checks.answerCounts(),
                library,
                failover,
                measured);
    }
}
