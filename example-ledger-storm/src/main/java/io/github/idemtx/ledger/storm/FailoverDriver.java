package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.db.testing.FailoverCluster;
import io.github.idemtx.db.testing.FailoverCluster.Replication;
import io.github.idemtx.ledger.storm.StormClients.Intent;
import io.github.idemtx.ledger.storm.StormTally.Answer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The storm's fault with {@code --failover}: the ledger's database is a primary and a standby of
 * the storm's own ({@link FailoverCluster}); under load the primary is SIGKILLed and the standby
 * promoted, {@code plan.failovers()} times. Afterwards it measures what the promoted primary lost
 * and sends every key once more.
 */
final class FailoverDriver {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /**
     * The checks that hold only if every acknowledged commit survives a failover: with asynchronous
     * replication they are measured ({@link StormReport#measured}), not required.
     */
    private static final List<String> DURABILITY_CHECKS = List.of(
            "no final answer lost",
            "every key sent again",
            "every acknowledged intent took effect exactly once",
            "every answer for a key was byte-identical",
            "the library's executed count");

    private final FailoverCluster cluster;
    private final Storm.FailoverPlan plan;
    private final Storm.Options options;
    private final StormClients clients;
    private final StormTally tally;
    private final SideDatabase db;
    private final String schema;
    private final java.io.PrintStream progress;
    private final List<FailoverCluster.Failover> failovers = Collections.synchronizedList(new ArrayList<>());
    private volatile RuntimeException failoverError;

    FailoverDriver(
            FailoverCluster cluster,
            Storm.FailoverPlan plan,
            Storm.Options options,
            StormClients clients,
            StormTally tally,
            SideDatabase db,
            String schema,
            java.io.PrintStream progress) {
        this.cluster = cluster;
        this.plan = plan;
        this.options = options;
        this.clients = clients;
        this.tally = tally;
        this.db = db;
        this.schema = schema;
        this.progress = progress;
    }

    /**
     * Kills the primary and promotes the standby {@code plan.failovers()} times, evenly spread over
     * the intents (when {@code done} reaches each share); copies a new standby from the promoted
     * primary before the next one.
     */
    void inject(AtomicBoolean running, AtomicInteger done) {
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
                tally.faults.incrementAndGet();
                progress.printf(
                        "storm: failover %d/%d after %d intents: the primary on port %d SIGKILLed, the standby on %d"
                                + " promoted in %d ms (%d bytes behind just before)%n",
                        k,
                        plan.failovers(),
                        done.get(),
                        f.killedPort(),
                        f.promotedPort(),
                        f.promoteMillis(),
                        f.standbyLagBytes());
                if (k < plan.failovers()) {
                    long t = System.nanoTime();
                    cluster.attachStandby();
                    progress.printf(
                            "storm: a new standby streams from it after %d ms%n", (System.nanoTime() - t) / 1_000_000);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            failoverError = e;
            tally.aborted =
                    promoting; // no primary may be left; a standby that would not attach leaves the primary serving
            progress.println("storm: a failover failed" + (promoting ? ", the clients stop: " : ": ") + e + "\n"
                    + cluster.logTail(3000));
        }
    }

    /**
     * After the failovers: which final answers the promoted primary no longer holds (a 201 whose
     * transfer is gone, or any answer whose key has no recorded claim), then every key sent once
     * more, as by a client that never saw its answer, each compared with the first answer.
     */
    StormReport.FailoverSummary afterFailovers(List<Intent> intents) throws Exception {
        Set<String> transfers = db.strings("SELECT id FROM " + schema + ".transfer");
        Set<String> recorded =
                db.strings("SELECT idem_key FROM " + schema + ".idempotency_claim WHERE state IN (1, 2)");
        int lostExecuted = 0;
        int lostOther = 0;
        for (Intent intent : intents) {
            Answer first = tally.finalAnswers.get(intent.index());
            if (first == null) {
                continue;
            }
            boolean created = first.status() == 201;
            if (!recorded.contains(intent.key().value())
                    || (created
                            && !transfers.contains(
                                    MAPPER.readTree(first.body()).get("id").asText()))) {
                if (created) {
                    lostExecuted++;
                } else {
                    lostOther++;
                }
            }
        }
        Map<String, Integer> resent = new ConcurrentHashMap<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(options.clients())) {
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            for (Intent intent : intents) {
                Answer first = tally.finalAnswers.get(intent.index());
                if (first == null) {
                    continue;
                }
                futures.add(CompletableFuture.runAsync(
                        () -> {
                            Answer again = clients.sendUntilAnswered(intent);
                            String how = again == null
                                    ? "no answer"
                                    : again.sameAs(first)
                                            ? StormReport.SAME_ANSWER
                                            : again.status() == 201 && first.status() == 201
                                                    ? StormReport.EXECUTED_AGAIN
                                                    : StormReport.ANOTHER_ANSWER;
                            resent.merge(how, 1, Integer::sum);
                            if (again != null && !again.sameAs(first)) {
                                tally.mismatchedReplays.incrementAndGet();
                                progress.println(
                                        "storm: intent " + intent.index() + " sent again after the failovers answered "
                                                + again.status() + " " + new String(again.body()) + ", first "
                                                + first.status() + " " + new String(first.body()));
                            }
                        },
                        pool));
            }
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
        }
        return new StormReport.FailoverSummary(
                cluster.description().replaceAll(", primary .*", ""),
                plan.failovers(),
                List.copyOf(failovers),
                (int) intents.stream()
                        .filter(i -> tally.finalAnswers.containsKey(i.index()))
                        .count(),
                lostExecuted,
                lostOther,
                new TreeMap<>(resent));
    }

    /**
     * The failovers' own invariants added to {@code invariants}; with asynchronous replication the
     * durability checks move to {@code measured}.
     */
    void judge(
            StormReport.FailoverSummary failover,
            List<Intent> intents,
            Map<String, Boolean> invariants,
            Map<String, Boolean> measured) {
        invariants.put(
                "every failover worked (" + failovers.size() + " of " + plan.failovers() + " planned"
                        + (failovers.size() < plan.failovers()
                                ? ", the load ended before the rest: more --intents for more"
                                : "")
                        + (failoverError == null ? "" : "; failed: " + failoverError) + ")",
                failoverError == null && !failovers.isEmpty());
        invariants.put(
                "no final answer lost in the failovers (" + failover.lost() + " of " + failover.finalAnswers() + ")",
                failover.lost() == 0);
        invariants.put(
                "every key sent again after the failovers got its first answer back ("
                        + failover.resent().getOrDefault(StormReport.SAME_ANSWER, 0) + " of " + intents.size() + ")",
                failover.resent().getOrDefault(StormReport.SAME_ANSWER, 0) == intents.size());
        if (plan.replication() == Replication.ASYNC) {
            for (String name : List.copyOf(invariants.keySet())) {
                if (DURABILITY_CHECKS.stream().anyMatch(name::startsWith)) {
                    measured.put(name, invariants.remove(name));
                }
            }
        }
    }
}
