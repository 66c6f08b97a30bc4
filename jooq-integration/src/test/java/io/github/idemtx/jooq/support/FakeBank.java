package io.github.idemtx.jooq.support;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.Remote.Lookup;
import io.github.idemtx.jooq.Remote.Reply;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;

/**
 * A payment provider in the test code: charges deduplicated by idempotency key (the downstream
 * key), a lookup by key, and faults at every point. Local writes go to the test schema: a hold
 * before the call, a posting with the result, the hold released on a refusal.
 */
public final class FakeBank implements Remote.Holding<Long, String> {
    /** The effects' requests here: an amount, as eight bytes. */
    public static final ResultCodec<Long> LONGS = new ResultCodec<>() {
        @Override
        public byte[] encode(Long value) {
            return ByteBuffer.allocate(8).putLong(value).array();
        }

        @Override
        public Long decode(byte[] bytes) {
            return ByteBuffer.wrap(bytes).getLong();
        }
    };

    /** Where a call goes wrong. */
    public enum Fault {
        NONE,
        /** Answers 5xx without applying: the caller cannot tell. */
        ERROR_BEFORE_APPLY,
        /** Applies, then the answer is lost (a timeout). */
        TIMEOUT_AFTER_APPLY,
        /** The caller's process dies after the claim, before the request leaves. */
        DIE_BEFORE_CALL,
        /** The caller's process dies after the bank applied it, before anything is recorded. */
        DIE_AFTER_APPLY,
        /** The caller's process dies in the transaction that records the result. */
        DIE_IN_RECORD
    }

    /** The abandonment of a call by a process that died: nothing after it runs, nothing is cleaned up. */
    public static final class Death extends Error {
        private static final long serialVersionUID = 1L;

        public Death(String where) {
            super("the process died " + where, null, false, false);
        }
    }

    public record Charge(String id, String downstreamKey, long amount, long appliedAtNanos) {}

    public final Map<String, Charge> charges = new ConcurrentHashMap<>();
    /** Charges created per downstream key (must never exceed 1). */
    public final Map<String, AtomicInteger> applications = new ConcurrentHashMap<>();

    public final AtomicInteger calls = new AtomicInteger();
    /** Calls for a downstream key the bank had already applied (absorbed by its deduplication). */
    public final AtomicInteger duplicateSends = new AtomicInteger();
    /** The local writes after a charge throw while this is set (a bug, a constraint). */
    public volatile boolean afterThrows;

    public final AtomicInteger lookups = new AtomicInteger();
    public final String schema;

    public volatile Fault fault = Fault.NONE;
    /** Chance of each fault per call in storms (0: only {@link #fault}). */
    public volatile double faultRate;
    /** Lookups miss a charge for this long after it was applied (a lagging index). */
    public volatile long lookupLagMillis;
    /** Lookups answer unknown (timeouts, 5xx) with this chance; 1: never answer. */
    public volatile double lookupUnknownRate;
    /** Keys (the caller's) whose lookups never answer. */
    public final java.util.Set<String> silentKeys = ConcurrentHashMap.newKeySet();
    /** Amounts above this are declined. */
    public volatile long limit = Long.MAX_VALUE;
    /** Calls wait for this latch before doing anything (to hold a caller past its lease). */
    public volatile CountDownLatch gate;
    /** Lookups wait for this latch (to hang like a remote that never answers). */
    public volatile CountDownLatch lookupGate;
    /** Runs at the end of {@link #before}, in the claim's transaction (to make it slow, or hold it there). */
    public volatile java.util.function.Consumer<DSLContext> inBefore;

    public FakeBank(String schema) {
        this.schema = schema;
    }

    public static void createTables(DSLContext dsl, String schema) {
        dsl.execute("create table if not exists " + schema + ".effect_hold (scope text, idem_key text, amount bigint,"
                + " primary key (scope, idem_key))");
        dsl.execute("create table if not exists " + schema + ".effect_posting (scope text, idem_key text, charge text,"
                + " amount bigint)");
    }

    @Override
    public void before(DSLContext tx, Intent<Long> intent) {
        if (intent.request() <= 0) {
            throw new Rejection("invalid-amount", "the amount must be positive");
        }
        tx.execute(
                "insert into " + schema + ".effect_hold values (?, ?, ?)",
                intent.scope().value(),
                intent.key().value(),
                intent.request());
        java.util.function.Consumer<DSLContext> hook = inBefore;
        if (hook != null) {
            hook.accept(tx);
        }
    }

    @Override
    public Reply<String> call(Intent<Long> intent, Instant deadline) throws Exception {
        CountDownLatch g = gate;
        if (g != null) {
            g.await(30, TimeUnit.SECONDS);
        }
        calls.incrementAndGet();
        Fault f = pick();
        if (f == Fault.DIE_BEFORE_CALL) {
            throw new Death("before the call");
        }
        if (f == Fault.ERROR_BEFORE_APPLY) {
            throw new java.io.IOException("503 Service Unavailable");
        }
        if (intent.request() > limit) {
            return Reply.refused(new Failure("declined", "insufficient funds at the bank"));
        }
        Charge charge = apply(intent);
        if (f == Fault.TIMEOUT_AFTER_APPLY) {
            throw new java.net.http.HttpTimeoutException("request timed out");
        }
        if (f == Fault.DIE_AFTER_APPLY) {
            throw new Death("after the bank applied it");
        }
        return Reply.applied(charge.id());
    }

    private Fault pick() {
        double rate = faultRate;
        if (rate > 0) {
            if (ThreadLocalRandom.current().nextDouble() >= rate) {
                return Fault.NONE;
            }
            Fault[] all = Fault.values();
            return all[1 + ThreadLocalRandom.current().nextInt(all.length - 1)];
        }
        return fault;
    }

    private Charge apply(Intent<Long> intent) {
        if (charges.containsKey(intent.downstreamKey())) {
            duplicateSends.incrementAndGet();
        }
        return charges.computeIfAbsent(intent.downstreamKey(), k -> {
            applications.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
            return new Charge(
                    "ch_" + Math.abs((long) k.hashCode()) + "_" + intent.request(),
                    k,
                    intent.request(),
                    System.nanoTime());
        });
    }

    @Override
    public Lookup<String> lookup(Intent<Long> intent) throws Exception {
        lookups.incrementAndGet();
        CountDownLatch hang = lookupGate;
        if (hang != null) {
            hang.await();
        }
        if (silentKeys.contains(intent.key().value())) {
            throw new java.io.IOException("this intent's lookups never answer");
        }
        if (lookupUnknownRate > 0 && ThreadLocalRandom.current().nextDouble() < lookupUnknownRate) {
            throw new java.io.IOException("lookup timed out");
        }
        Charge c = charges.get(intent.downstreamKey());
        if (c == null || System.nanoTime() - c.appliedAtNanos() < TimeUnit.MILLISECONDS.toNanos(lookupLagMillis)) {
            return Lookup.absent();
        }
        return Lookup.found(c.id());
    }

    @Override
    public void after(DSLContext tx, Intent<Long> intent, String chargeId) {
        post(tx, intent, chargeId, true);
    }

    /**
     * This bank without holds: a plain {@link Remote}, not a {@link Remote.Holding} (so the in-flight claim
     * has nothing to commit with it and its INSERT carries the COMMIT), the posting is all the local
     * writing; calls, lookups and faults are this bank's.
     */
    public Remote<Long, String> withoutHolds() {
        FakeBank bank = this;
        return new Remote<>() {
            @Override
            public Reply<String> call(Intent<Long> intent, Instant deadline) throws Exception {
                return bank.call(intent, deadline);
            }

            @Override
            public Lookup<String> lookup(Intent<Long> intent) throws Exception {
                return bank.lookup(intent);
            }

            @Override
            public void after(DSLContext tx, Intent<Long> intent, String chargeId) {
                bank.post(tx, intent, chargeId, false);
            }
        };
    }

    private void post(DSLContext tx, Intent<Long> intent, String chargeId, boolean releasesAHold) {
        if (afterThrows) {
            throw new IllegalStateException("the posting failed");
        }
        double rate = faultRate;
        boolean die = rate > 0 ? ThreadLocalRandom.current().nextDouble() < rate / 6 : fault == Fault.DIE_IN_RECORD;
        if (die) {
            throw new Death("while recording the result");
        }
        int held = tx.execute(
                "delete from " + schema + ".effect_hold where scope = ? and idem_key = ?",
                intent.scope().value(),
                intent.key().value());
        tx.execute(
                "insert into " + schema + ".effect_posting values (?, ?, ?, ?)",
                intent.scope().value(),
                intent.key().value(),
                chargeId,
                intent.request());
        if (held != (releasesAHold ? 1 : 0)) {
            throw new IllegalStateException(
                    (releasesAHold ? "no hold" : "a hold") + " for " + intent.key() + " at the posting");
        }
    }

    @Override
    public void refused(DSLContext tx, Intent<Long> intent, Failure failure) {
        tx.execute(
                "delete from " + schema + ".effect_hold where scope = ? and idem_key = ?",
                intent.scope().value(),
                intent.key().value());
    }
}
