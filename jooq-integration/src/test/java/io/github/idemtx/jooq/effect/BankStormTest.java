package io.github.idemtx.jooq.effect;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Backends;
import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Bank;
import io.github.idemtx.jooq.support.BankSetChecker;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import io.github.idemtx.jooq.support.RandomSqlFaults;
import io.github.idemtx.jooq.support.SqlHook;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;

/**
 * The ledger's transfer driven through {@code run} from many threads, with concurrent duplicates,
 * clients that retry until they get an answer (and some that give up after one try), keys reused
 * for another request, connections killed at random moments and serialization failures and
 * deadlocks injected at random statements; then {@link BankSetChecker} judges the history against
 * the database. A second phase retries every key still without an answer, as clients eventually
 * would, and judges again: by then every intent has its final answer.
 */
@DatabaseTest
class BankStormTest {

    private static final int INTENTS = 1800;
    private static final int CLIENTS = 12;
    private static final int ACCOUNTS = 20;
    private static final long OPENING_BALANCE = 500;

    @Test
    void manyClientsWithDuplicatesKillsAndInjectedConflictsMoveMoneyExactlyOnce() throws Exception {
        Scope scope = Db.freshScope();
        Map<Integer, Long> initial = Bank.open(scope, ACCOUNTS, OPENING_BALANCE);
        String application = Faults.applicationName("bank-storm");
        RandomSqlFaults injected = new RandomSqlFaults(0.02);
        BankSetChecker checker = new BankSetChecker();
        Map<String, Integer> kills = new ConcurrentHashMap<>();
        AtomicInteger misuses = new AtomicInteger();

        try (HikariDataSource pool = Db.DATABASE.newPool(CLIENTS, config -> {
            config.setPoolName(application);
            config.addDataSourceProperty("ApplicationName", application);
        })) {
            DSLContext dsl = SqlHook.around(DSL.using(pool, SQLDialect.POSTGRES), injected);
            IdempotentTransaction<String> idem = Db.builder(dsl, ResultCodec.utf8())
                    .policy(IdempotencyPolicy.builder()
                            .maxAttempts(4)
                            .backoff(Duration.ofMillis(1), Duration.ofMillis(10))
                            .build())
                    .schema(Db.SCHEMA)
                    .build();

            List<BankSetChecker.Intent> intents = new ArrayList<>();
            List<Callable<Void>> clients = new ArrayList<>();
            for (int i = 0; i < INTENTS; i++) {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                int from = random.nextInt(ACCOUNTS);
                int to = (from + 1 + random.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
                BankSetChecker.Intent intent =
                        new BankSetChecker.Intent(Db.freshKey(), from, to, 1 + random.nextInt(100));
                intents.add(intent);
                boolean persistent = random.nextInt(10) != 0; // one client in ten tries once and walks away
                int copies = random.nextInt(4) == 0 ? 2 : 1; // a quarter are sent twice, concurrently
                for (int c = 0; c < copies; c++) {
                    clients.add(() -> {
                        send(idem, scope, intent, persistent, checker, misuses);
                        return null;
                    });
                }
            }
            Collections.shuffle(clients);

            AtomicBoolean storming = new AtomicBoolean(true);
            // every 40-120 ms, one session of the storm's pool: a busy one, an idle one now and then
            Backends backends = new Backends(Db.DATABASE.connect());
            Thread killer = new Thread(
                    () -> backends.killRepeatedly(
                            application,
                            0.1,
                            () -> 40 + ThreadLocalRandom.current().nextInt(80),
                            storming::get,
                            state -> kills.merge(state, 1, Integer::sum)),
                    "bank-storm-killer");
            killer.start();
            long started = System.nanoTime();
            try {
                Concurrently.onThreads(CLIENTS, clients);
            } finally {
                storming.set(false);
                killer.join(TimeUnit.SECONDS.toMillis(30));
                backends.close();
            }
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
            injected.enabled(false);

            Map<String, Object> faults = new TreeMap<>();
            faults.put("kills", new TreeMap<>(kills));
            faults.put("injected", injected.total());
            faults.put("keys reused for another request", misuses.get());
            BankSetChecker.Report report = checker.check(Bank.snapshot(scope, initial), faults);
            System.out.println("bank storm, " + CLIENTS + " clients, " + INTENTS + " intents, " + seconds + " s:\n"
                    + report.summary());
            assertThat(report.violations()).as(report.summary()).isEmpty();

            // the clients that walked away come back, as clients do: every intent gets its final answer
            Set<String> answered = ConcurrentHashMap.newKeySet();
            checker.history().stream()
                    .filter(BankStormTest::isFinal)
                    .forEach(c -> answered.add(c.intent().key().value()));
            List<Callable<Void>> laggards = new ArrayList<>();
            for (BankSetChecker.Intent intent : intents) {
                if (!answered.contains(intent.key().value())) {
                    laggards.add(() -> {
                        send(idem, scope, intent, true, checker, new AtomicInteger());
                        return null;
                    });
                }
            }
            Concurrently.onThreads(4, laggards);
            BankSetChecker.Report settled = checker.check(Bank.snapshot(scope, initial), faults);
            System.out.println("after " + laggards.size() + " unanswered intents were sent again, without faults:\n"
                    + settled.summary());
            assertThat(settled.violations()).as(settled.summary()).isEmpty();
            Set<BankSetChecker.Intent> finallyAnswered = new HashSet<>();
            checker.history().stream().filter(BankStormTest::isFinal).forEach(c -> finallyAnswered.add(c.intent()));
            assertThat(intents).as("every intent has its final answer").allMatch(finallyAnswered::contains);
        }
    }

    private static boolean isFinal(BankSetChecker.Call c) {
        return c.acknowledged() || c.kind() == BankSetChecker.Kind.REJECTED;
    }

    /** One client: sends the intent until it has an answer (or once), then now and then misuses the key. */
    private static void send(
            IdempotentTransaction<String> idem,
            Scope scope,
            BankSetChecker.Intent intent,
            boolean persistent,
            BankSetChecker checker,
            AtomicInteger misuses)
            throws InterruptedException {
        for (int attempt = 0; attempt < 20; attempt++) {
            BankSetChecker.Call call = call(idem, scope, intent, checker);
            if (isFinal(call)) {
                if (ThreadLocalRandom.current().nextInt(30) == 0) {
                    misuses.incrementAndGet();
                    BankSetChecker.Intent other =
                            new BankSetChecker.Intent(intent.key(), intent.from(), intent.to(), intent.amount() + 1);
                    call(idem, scope, other, checker);
                }
                return;
            }
            if (!persistent) {
                return;
            }
            Thread.sleep(ThreadLocalRandom.current().nextInt(5));
        }
    }

    private static BankSetChecker.Call call(
            IdempotentTransaction<String> idem, Scope scope, BankSetChecker.Intent intent, BankSetChecker checker) {
        Outcome<String> outcome;
        try {
            outcome = idem.run(
                    scope,
                    intent.key(),
                    intent.fingerprint(),
                    tx -> Bank.transfer(tx, scope, intent.key(), intent.from(), intent.to(), intent.amount()));
        } catch (RuntimeException e) {
            return checker.record(intent, e);
        }
        return checker.record(intent, outcome);
    }
}
