package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
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
 * The storm's faults with {@code --failover}: the ledger's database is a cluster of the storm's
 * own ({@link FailoverTarget}: a primary and a standby, or Patroni's three members); under load it
 * fails over (and with Patroni switches over) as often as the plan says. Afterwards it measures
 * what the new primary lost and sends every key once more.
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

    private final FailoverTarget cluster;
    private final Storm.Options options;
    private final StormClients clients;
    private final StormTally tally;
    private final SideDatabase db;
    private final String schema;
    private final java.io.PrintStream progress;
    private final List<StormReport.Fault> failovers = Collections.synchronizedList(new ArrayList<>());
    private volatile RuntimeException failoverError;

    FailoverDriver(
            FailoverTarget cluster,
            Storm.Options options,
            StormClients clients,
            StormTally tally,
            SideDatabase db,
            String schema,
            java.io.PrintStream progress) {
        this.cluster = cluster;
        this.options = options;
        this.clients = clients;
        this.tally = tally;
        this.db = db;
        this.schema = schema;
        this.progress = progress;
        // the last share of the intents waits for the last fault, so that it always finds load
        clients.holdFrom(due(cluster.planned()));
    }

    /** When fault {@code k} is due: once that share of the intents is done. */
    private int due(int k) {
        return (int) ((long) options.intents() * k / (cluster.planned() + 1));
    }

    /**
     * Does the plan's faults, evenly spread over the intents (when {@code done} reaches each share),
     * each once the cluster is ready for it; the last share of the intents is held back until the
     * last fault begins, so that every fault finds load however long the ones before took.
     */
    void inject(AtomicBoolean running, AtomicInteger done) {
        boolean promoting = false;
        try {
            int planned = cluster.planned();
            for (int k = 1; k <= planned; k++) {
                while (done.get() < due(k) && running.get()) {
                    Thread.sleep(2);
                }
                if (!running.get()) {
                    return;
                }
                if (k == planned) {
                    clients.release();
                }
                promoting = true;
                int at = done.get();
                java.time.LocalTime when = java.time.LocalTime.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
                StormReport.Fault f = cluster.inject(k);
                promoting = false;
                failovers.add(f);
                tally.faults.incrementAndGet();
                progress.printf(
                        "storm: %s fault %d/%d after %d intents: %s; a new primary out of recovery after %d ms, the"
                                + " cluster ready after %d ms (replicas %d bytes behind just before)%n",
                        when, k, planned, at, f.what(), f.primaryMillis(), f.readyMillis(), f.lagBytes());
                if (k < planned) {
                    long t = System.nanoTime();
                    if (cluster.prepareNext()) {
                        progress.printf(
                                "storm: ready for the next fault after %d ms more%n",
                                (System.nanoTime() - t) / 1_000_000);
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            failoverError = e;
            // no primary may be left mid-fault; a standby that would not attach leaves the primary serving
            tally.aborted = promoting;
            progress.println("storm: a failover failed" + (promoting ? ", the clients stop: " : ": ") + e);
        } finally {
            clients.release(); // the load goes on to its end whatever happened here
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
                cluster.setUp(),
                cluster.planned(),
                List.copyOf(failovers),
                (int) intents.stream()
                        .filter(i -> tally.finalAnswers.containsKey(i.index()))
                        .count(),
                lostExecuted,
                lostOther,
                new TreeMap<>(resent));
    }

    /**
     * The failovers' own invariants added to {@code invariants}; where the set-up does not promise
     * that acknowledged commits survive (asynchronous replication) the durability checks move to
     * {@code measured}.
     */
    void judge(
            StormReport.FailoverSummary failover,
            List<Intent> intents,
            Map<String, Boolean> invariants,
            Map<String, Boolean> measured) {
        invariants.put(
                "every failover worked (" + failovers.size() + " of " + cluster.planned() + " planned"
                        + (failovers.size() < cluster.planned()
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
        if (!cluster.keepsAcknowledgedCommits()) {
            for (String name : List.copyOf(invariants.keySet())) {
                if (DURABILITY_CHECKS.stream().anyMatch(name::startsWith)) {
                    measured.put(name, invariants.remove(name));
                }
            }
        }
    }
}
