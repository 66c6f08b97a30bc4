package io.github.idemtx.ledger;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * A console walk-through of the library on a tiny ledger: transfers that are retried, reused with
 * another body, rejected for lack of funds, and sent by 32 threads at once. It checks what it
 * claims and exits non-zero if a check fails.
 *
 * <p>Database: {@code LEDGER_DB_URL} (with {@code LEDGER_DB_USER}, {@code LEDGER_DB_PASSWORD}), else
 * PostgreSQL at 127.0.0.1:5432 as user {@code postgres}. Works in the schema {@code ledger_demo},
 * which it recreates on every run.
 */
public final class LedgerDemo {

    static final String DEFAULT_SCHEMA = "ledger_demo";
    static final String LOCAL_URL = "jdbc:postgresql://127.0.0.1:5432/postgres";

    /** The result every transfer call records and replays. */
    public record Transfer(long id, String from, String to, BigDecimal amount, Instant createdAt) {}

    private final DSLContext dsl;
    private final String schema;
    private final IdempotentTransaction<Transfer> transfers;
    private final Scope tenant = Scope.of("tenant-acme");
    private int failures;

    private LedgerDemo(DSLContext dsl, String schema) {
        this.dsl = dsl;
        this.schema = schema;
        this.transfers = IdempotentTransaction.builder(dsl, ResultCodec.json(Transfer.class))
                .policy(IdempotencyPolicy.defaults())
                .schema(schema)
                .build();
    }

    public static void main(String[] args) throws Exception {
        String url = env("LEDGER_DB_URL", LOCAL_URL);
        String user = env("LEDGER_DB_USER", url.equals(LOCAL_URL) ? "postgres" : null);
        String password = env("LEDGER_DB_PASSWORD", null);
        if (!answers(url, user, password)) {
            System.err.println("""
                    No PostgreSQL answered at %s.
                    Start one there (user 'postgres', trust auth), or point the demo at yours:
                      LEDGER_DB_URL=jdbc:postgresql://host:5432/db LEDGER_DB_USER=... LEDGER_DB_PASSWORD=...""".formatted(url));
            System.exit(2);
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(40);
        config.setPoolName("ledger-demo");
        try (HikariDataSource pool = new HikariDataSource(config)) {
            System.exit(run(pool, DEFAULT_SCHEMA) == 0 ? 0 : 1);
        }
    }

    /**
     * Recreates {@code schema} (claim table and ledger tables) and walks through the contract.
     *
     * @return how many checks failed
     */
    static int run(DataSource pool, String schema) throws Exception {
        DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES);
        dsl.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        IdempotencySchema.migrate(pool, schema);
        dsl.execute("CREATE TABLE " + schema + ".account (id text PRIMARY KEY,"
                + " balance numeric(18,2) NOT NULL CHECK (balance >= 0))");
        dsl.execute("CREATE TABLE " + schema + ".transfer (id bigserial PRIMARY KEY, from_id text NOT NULL,"
                + " to_id text NOT NULL, amount numeric(18,2) NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
        return new LedgerDemo(dsl, schema).walkThrough();
    }

    int walkThrough() throws Exception {
        dsl.execute("INSERT INTO " + schema + ".account VALUES ('alice', 100.00), ('bob', 0.00)");
        System.out.println("accounts: " + balances());

        section("1. A transfer, then the same request again (the response was lost, the client retries)");
        IdempotencyKey k1 = IdempotencyKey.random();
        Outcome<Transfer> first = transfer(k1, "alice", "bob", "30.00");
        Outcome<Transfer> retry = transfer(k1, "alice", "bob", "30.00");
        show("first", first);
        show("retry", retry);
        check("the retry replays the first transfer", retry instanceof Outcome.Replayed<Transfer> r
                && first instanceof Outcome.Executed<Transfer> e && r.value().equals(e.value()));

        section("2. The same key reused for a different request");
        Outcome<Transfer> reused = transfer(k1, "alice", "bob", "50.00");
        show("reused", reused);
        check("a reused key is refused, nothing moves", reused instanceof Outcome.FingerprintMismatch<Transfer>);

        section("3. Insufficient funds is a recorded answer, even after a deposit");
        IdempotencyKey k2 = IdempotencyKey.random();
        Outcome<Transfer> tooMuch = transfer(k2, "alice", "bob", "500.00");
        dsl.execute("UPDATE " + schema + ".account SET balance = balance + 1000 WHERE id = 'alice'");
        Outcome<Transfer> tooMuchAgain = transfer(k2, "alice", "bob", "500.00");
        show("first", tooMuch);
        show("after a deposit", tooMuchAgain);
        check("the rejection is replayed as it was", tooMuch instanceof Outcome.Rejected<Transfer> a
                && tooMuchAgain instanceof Outcome.Rejected<Transfer> b && b.replayed() && a.failure().equals(b.failure()));

        section("4. 32 threads send one transfer at the same instant");
        IdempotencyKey k3 = IdempotencyKey.random();
        Map<String, Integer> kinds = new TreeMap<>();
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(32);
        List<Future<Outcome<Transfer>>> futures = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            futures.add(threads.submit(() -> {
                go.await();
                return transfer(k3, "bob", "alice", "10.00");
            }));
        }
        go.countDown();
        for (Future<Outcome<Transfer>> f : futures) {
            kinds.merge(f.get().getClass().getSimpleName(), 1, Integer::sum);
        }
        threads.shutdown();
        int rows = dsl.fetchCount(DSL.table(DSL.name(schema, "transfer")), DSL.field("amount").eq(new BigDecimal("10.00")));
        System.out.println("  outcomes: " + kinds + ", transfer rows: " + rows);
        check("exactly one transfer happened", rows == 1 && kinds.getOrDefault("Executed", 0) == 1);

        section("Balances");
        Map<String, BigDecimal> balances = balances();
        System.out.println("  " + balances);
        check("alice 1080.00 and bob 20.00 (100 - 30 + 1000 + 10, and 30 - 10)",
                balances.equals(Map.of("alice", new BigDecimal("1080.00"), "bob", new BigDecimal("20.00"))));
        System.out.println(failures == 0 ? "\nOK: every check passed" : "\nFAILED: " + failures + " check(s)");
        return failures;
    }

    private Outcome<Transfer> transfer(IdempotencyKey key, String from, String to, String amount) {
        Fingerprint fingerprint = Fingerprint.sha256("POST /transfers {\"amount\":\"" + amount + "\",\"from\":\""
                + from + "\",\"to\":\"" + to + "\"}");
        BigDecimal value = new BigDecimal(amount);
        return transfers.run(tenant, key, fingerprint, tx -> {
            int debited = tx.execute("UPDATE " + schema + ".account SET balance = balance - ? WHERE id = ? AND balance >= ?",
                    value, from, value);
            if (debited == 0) {
                throw new Rejection("insufficient_funds", from + " cannot pay " + amount);
            }
            tx.execute("UPDATE " + schema + ".account SET balance = balance + ? WHERE id = ?", value, to);
            var row = tx.resultQuery("INSERT INTO " + schema + ".transfer (from_id, to_id, amount) VALUES (?, ?, ?)"
                    + " RETURNING id, created_at", from, to, value).fetchSingle();
            return new Transfer(row.get(0, Long.class), from, to, value,
                    row.get(1, java.time.OffsetDateTime.class).toInstant());
        });
    }

    private Map<String, BigDecimal> balances() {
        Map<String, BigDecimal> result = new TreeMap<>();
        for (var r : dsl.resultQuery("SELECT id, balance FROM " + schema + ".account ORDER BY id").fetch()) {
            result.put(r.get(0, String.class), r.get(1, BigDecimal.class));
        }
        return result;
    }

    private static void section(String title) {
        System.out.println("\n" + title);
    }

    private static void show(String label, Outcome<Transfer> outcome) {
        System.out.println("  " + label + ": " + outcome);
    }

    private void check(String claim, boolean holds) {
        System.out.println((holds ? "  ok   " : "  FAIL ") + claim);
        if (!holds) {
            failures++;
        }
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    private static boolean answers(String url, String user, String password) {
        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null) {
            props.setProperty("password", password);
        }
        props.setProperty("connectTimeout", "5");
        try (Connection c = DriverManager.getConnection(url, props)) {
            return c.isValid(5);
        } catch (SQLException e) {
            return false;
        }
    }
}
