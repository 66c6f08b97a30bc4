package io.github.idemtx.jooq.support;

import java.sql.SQLException;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Fails random statements with a serialization failure (40001) or a deadlock (40P01), as PostgreSQL
 * would: before the statement is sent, or after it ran (its writes then die with the transaction).
 * Never after the completion that carries the COMMIT: the server cannot fail a transaction it has
 * already committed. Counts what it injected, by site. Thread-safe.
 */
public final class RandomSqlFaults implements SqlHook {

    private final double probability;
    private volatile boolean enabled = true;
    private final Map<String, AtomicInteger> injected = new ConcurrentHashMap<>();

    /** @param probability of a failure at each start and each end of a statement */
    public RandomSqlFaults(double probability) {
        this.probability = probability;
    }

    public void enabled(boolean enabled) {
        this.enabled = enabled;
    }

    @Override
    public void before(Sql sql) throws SQLException {
        maybeFail(sql.sql(), "start");
    }

    @Override
    public void after(Sql sql) throws SQLException {
        if (!Faults.isCompletionAndCommit(sql.sql())) {
            maybeFail(sql.sql(), "end");
        }
    }

    private void maybeFail(String sql, String when) throws SQLException {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        if (!enabled || random.nextDouble() >= probability) {
            return;
        }
        String state = random.nextBoolean() ? "40001" : "40P01";
        injected.computeIfAbsent(site(sql) + "@" + when + ":" + state, k -> new AtomicInteger())
                .incrementAndGet();
        throw new SQLException(
                state.equals("40001") ? "injected: could not serialize access" : "injected: deadlock detected", state);
    }

    private static String site(String sql) {
        if (Faults.isClaim(sql)) {
            return "claim";
        }
        if (Faults.isAwait(sql)) {
            return "await";
        }
        if (Faults.isCompletionAndCommit(sql)) {
            return "completion";
        }
        if (Faults.isRecord(sql)) {
            return "record";
        }
        return "work";
    }

    /** How many failures were injected, by site, moment and SQLSTATE. */
    public Map<String, Integer> injected() {
        Map<String, Integer> copy = new TreeMap<>();
        injected.forEach((k, v) -> copy.put(k, v.get()));
        return copy;
    }

    public int total() {
        return injected.values().stream().mapToInt(AtomicInteger::get).sum();
    }
}
