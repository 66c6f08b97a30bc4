package io.github.idemtx.jooq.effect;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.FakeBank;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;

/**
 * Many clients charging at once through a bank with random faults at every point (deaths before the
 * call, after the bank applied it and while recording, 5xx, timeouts after applying, lagging
 * lookups, intents whose lookups never answer, declines), duplicates of each intent, and two recoverers running beside them
 * and beside each other. Afterwards: the bank applied each intent at most once; every intent a
 * client was told succeeded is charged exactly once, posted exactly once and recorded once; every
 * declined one has no posting; no hold is left without a claim in flight; and once the recoverers
 * are done nothing is in flight, the only unsettled claims being those handed to reconciliation,
 * exactly the intents whose lookups never answered.
 */
@DatabaseTest
class ExternalEffectStormTest {

    private static final int INTENTS = 150;
    private static final int CLIENTS = 8;

    @BeforeAll
    static void tables() {
        FakeBank.createTables(Db.DSL_CONTEXT, Db.SCHEMA);
    }

    /** @param withHolds the bank's hold, written before the call with the claim; without it the claim's INSERT carries its COMMIT */
    @org.junit.jupiter.params.ParameterizedTest(name = "holds {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void chargesUnderFaultsDuplicatesAndConcurrentRecoverersKeepEveryInvariant(boolean withHolds) throws Exception {
        Scope scope = Db.freshScope();
        FakeBank bank = new FakeBank(Db.SCHEMA);
        bank.faultRate = 0.3;
        // lookups see every charge at once: the bank keeps the read-after-write promise the effect relies on
        bank.lookupLagMillis = 0;
        // unanswered lookups come from the silent intents only, so which claims end in reconciliation is known
        bank.limit = 900; // amounts above are declined
        // a few intents whose lookups never answer: they must end in reconciliation, and only they
        Set<String> silent = bank.silentKeys;
        ExternalEffect<Long, String> charges = ExternalEffect.builder(
                        Db.dsl(),
                        "storm-charge",
                        FakeBank.LONGS,
                        ResultCodec.utf8(),
                        withHolds ? bank : bank.withoutHolds())
                .schema(Db.SCHEMA)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(50))
                        .build())
                .lease(Duration.ofMillis(150))
                .lookupSchedule(List.of(Duration.ofMillis(10), Duration.ofMillis(20), Duration.ofMillis(40)))
                .readAfterWrite(true)
                .build();

        List<IdempotencyKey> keys = new ArrayList<>();
        Map<String, Long> amounts = new ConcurrentHashMap<>();
        Map<String, String> toldCharged = new ConcurrentHashMap<>();
        Set<String> toldDeclined = ConcurrentHashMap.newKeySet();
        AtomicInteger deaths = new AtomicInteger();
        List<Callable<Void>> clients = new ArrayList<>();
        for (int i = 0; i < INTENTS; i++) {
            IdempotencyKey key = Db.freshKey();
            keys.add(key);
            long amount = 1 + ThreadLocalRandom.current().nextInt(1000);
            amounts.put(key.value(), amount);
            if (i % 25 == 0) {
                silent.add(key.value());
            }
            Fingerprint fingerprint = Db.fingerprint("charge " + amount);
            int copies = i % 4 == 0 ? 2 : 1;
            for (int c = 0; c < copies; c++) {
                clients.add(() -> {
                    for (int attempt = 0; attempt < 12; attempt++) {
                        RemoteOutcome<String> o;
                        try {
                            o = charges.run(scope, key, fingerprint, amount);
                        } catch (FakeBank.Death d) {
                            deaths.incrementAndGet();
                            continue; // a new process retries
                        }
                        switch (o) {
                            case Outcome.Executed<String> e ->
                                toldCharged.merge(key.value(), e.value(), ExternalEffectStormTest::same);
                            case Outcome.Replayed<String> r ->
                                toldCharged.merge(key.value(), r.value(), ExternalEffectStormTest::same);
                            case Outcome.Rejected<String> r -> toldDeclined.add(key.value());
                            case Outcome.FingerprintMismatch<String> m ->
                                throw new AssertionError("mismatch for " + key);
                            case Outcome.InProgress<String> p -> {}
                            case RemoteOutcome.Unknown<String> u -> {}
                            case RemoteOutcome.NeedsReconciliation<String> n -> {}
                        }
                        if (!(o instanceof Outcome.InProgress || o instanceof RemoteOutcome.Unknown)) {
                            return null;
                        }
                        Thread.sleep(ThreadLocalRandom.current().nextInt(5, 40));
                    }
                    return null;
                });
            }
        }
        java.util.Collections.shuffle(clients);

        AtomicBoolean storming = new AtomicBoolean(true);
        List<Thread> recoverers = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            Thread t = new Thread(
                    () -> {
                        while (storming.get()) {
                            try {
                                charges.recovery().recover(20);
                            } catch (FakeBank.Death d) {
                                deaths.incrementAndGet(); // the recoverer's process died mid-pass; it restarts
                            }
                            sleep(5);
                        }
                    },
                    "recoverer-" + r);
            t.start();
            recoverers.add(t);
        }
        try {
            Concurrently.onThreads(CLIENTS, clients);
        } finally {
            storming.set(false);
            for (Thread t : recoverers) {
                t.join(30_000);
            }
        }

        // the faults stop; the recoverer runs until nothing in flight is due
        bank.faultRate = 0;
        bank.lookupUnknownRate = 0;
        long until = System.nanoTime() + 30_000_000_000L;
        while (!charges.recovery().inFlight(1000).isEmpty() && System.nanoTime() < until) {
            try {
                charges.recovery().recover(100);
            } catch (FakeBank.Death d) {
                throw new AssertionError("no faults are left", d);
            }
            sleep(20);
        }
        assertThat(charges.recovery().inFlight(1000))
                .as("nothing stays in flight after the recoverer's last pass")
                .isEmpty();

        // what the database and the bank say
        Map<String, Integer> postings = new ConcurrentHashMap<>();
        Db.DSL_CONTEXT
                .resultQuery(
                        "select idem_key, count(*)::int from " + Db.SCHEMA + ".effect_posting where scope = ?"
                                + " group by idem_key",
                        scope.value())
                .forEach(r -> postings.put(r.get(0, String.class), r.get(1, Integer.class)));
        Map<String, Short> states = new ConcurrentHashMap<>();
        Db.DSL_CONTEXT
                .resultQuery(
                        "select idem_key, state from " + Db.SCHEMA + ".idempotency_claim where scope = ?",
                        scope.value())
                .forEach(r -> states.put(r.get(0, String.class), r.get(1, Short.class)));
        int holds = Db.DSL_CONTEXT
                .resultQuery(
                        "select count(*)::int from " + Db.SCHEMA + ".effect_hold h where scope = ?"
                                + " and not exists (select 1 from " + Db.SCHEMA
                                + ".idempotency_claim c where c.scope = h.scope"
                                + " and c.idem_key = h.idem_key and c.state in (3, 4))",
                        scope.value())
                .fetchOne(0, Integer.class);

        assertThat(bank.applications.values())
                .allSatisfy(n -> assertThat(n.get()).as("applied at most once").isLessThanOrEqualTo(1));
        assertThat(holds)
                .as("no hold without a claim in flight or awaiting reconciliation")
                .isZero();
        Set<String> reconciliation = ConcurrentHashMap.newKeySet();
        for (IdempotencyKey key : keys) {
            String k = key.value();
            Short state = states.get(k);
            if (toldCharged.containsKey(k)) {
                assertThat(state).as("told charged, recorded: " + k).isEqualTo((short) 1);
                assertThat(postings.getOrDefault(k, 0))
                        .as("told charged, posted once: " + k)
                        .isEqualTo(1);
                assertThat(bank.charges.values().stream()
                                .filter(c -> c.id().equals(toldCharged.get(k)))
                                .count())
                        .as("told charged, charged once: " + k)
                        .isEqualTo(1);
            }
            if (toldDeclined.contains(k)) {
                assertThat(postings.getOrDefault(k, 0))
                        .as("declined, never posted: " + k)
                        .isZero();
            }
            if (state != null && state == 1) {
                assertThat(postings.getOrDefault(k, 0))
                        .as("recorded as charged, posted once: " + k)
                        .isEqualTo(1);
            }
            if (state != null && state == 4) {
                reconciliation.add(k);
            }
            if (state == null || state == 2) {
                assertThat(postings.getOrDefault(k, 0))
                        .as("not charged, not posted: " + k)
                        .isZero();
            }
        }
        assertThat(reconciliation)
                .as("only intents whose lookups never answered wait for reconciliation")
                .isSubsetOf(silent);
        // a resend happens only after a lookup answered absent, and with read-after-write that means
        // the bank never had it: no request reaches the bank twice, deduplication or not
        assertThat(bank.duplicateSends)
                .as("requests the bank had already applied")
                .hasValue(0);
        System.out.printf(
                "external-effect storm (holds " + withHolds
                        + "): %d intents, %d told charged, %d declined, %d to reconcile (of %d silent),"
                        + " %d deaths, %d bank calls, %d lookups, %d charges, %d duplicate sends%n",
                INTENTS,
                toldCharged.size(),
                toldDeclined.size(),
                reconciliation.size(),
                silent.size(),
                deaths.get(),
                bank.calls.get(),
                bank.lookups.get(),
                bank.charges.size(),
                bank.duplicateSends.get());
    }

    private static String same(String a, String b) {
        if (!a.equals(b)) {
            throw new AssertionError("two different charges were reported for one intent: " + a + ", " + b);
        }
        return a;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
