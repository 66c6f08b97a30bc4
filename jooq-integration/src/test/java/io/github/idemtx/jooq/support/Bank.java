package io.github.idemtx.jooq.support;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.Scope;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jooq.DSLContext;
import org.jooq.Record;

/**
 * A small double-entry ledger in the tests' schema, in the style of example-ledger's: accounts,
 * transfers and their postings, one scope (tenant) per test. The transfer is the business write the
 * fault tests drive through {@code run}.
 */
public final class Bank {

    public static final String ACCOUNT = Db.SCHEMA + ".bank_account";
    public static final String TRANSFER = Db.SCHEMA + ".bank_transfer";
    public static final String POSTING = Db.SCHEMA + ".bank_posting";

    static {
        Db.dsl()
                .execute("CREATE TABLE IF NOT EXISTS " + ACCOUNT + " ("
                        + " scope text NOT NULL, id int NOT NULL, balance bigint NOT NULL, PRIMARY KEY (scope, id))");
        Db.dsl()
                .execute("CREATE TABLE IF NOT EXISTS " + TRANSFER + " ("
                        + " id bigserial PRIMARY KEY, scope text NOT NULL, idem_key text NOT NULL,"
                        + " from_account int NOT NULL, to_account int NOT NULL, amount bigint NOT NULL)");
        Db.dsl()
                .execute("CREATE TABLE IF NOT EXISTS " + POSTING + " ("
                        + " transfer_id bigint NOT NULL, account int NOT NULL, amount bigint NOT NULL)");
    }

    private Bank() {}

    /** Opens accounts 0 to {@code n - 1} in {@code scope}, each with {@code balance}; returns the balances. */
    public static Map<Integer, Long> open(Scope scope, int n, long balance) {
        Map<Integer, Long> initial = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            Db.dsl()
                    .execute(
                            "INSERT INTO " + ACCOUNT + " (scope, id, balance) VALUES (?, ?, ?)",
                            scope.value(),
                            i,
                            balance);
            initial.put(i, balance);
        }
        return initial;
    }

    /**
     * The ledger's transfer: locks both accounts in id order (no deadlocks among transfers), refuses
     * an overdraft with a {@link Rejection}, moves the money and records the transfer and its two
     * postings. Returns {@code "transfer-<id>"}.
     */
    public static String transfer(DSLContext tx, Scope scope, IdempotencyKey key, int from, int to, long amount) {
        Map<Integer, Long> balances = new HashMap<>();
        for (Record r : tx.resultQuery(
                        "SELECT id, balance FROM " + ACCOUNT + " WHERE scope = ? AND id IN (?, ?)"
                                + " ORDER BY id FOR UPDATE",
                        scope.value(),
                        from,
                        to)
                .fetch()) {
            balances.put(r.get(0, Integer.class), r.get(1, Long.class));
        }
        if (balances.get(from) < amount) {
            throw new Rejection(
                    "insufficient_funds", "account " + from + " holds " + balances.get(from) + ", needs " + amount);
        }
        tx.execute(
                "UPDATE " + ACCOUNT + " SET balance = balance + CASE WHEN id = ? THEN -?::bigint ELSE ?::bigint END"
                        + " WHERE scope = ? AND id IN (?, ?)",
                from,
                amount,
                amount,
                scope.value(),
                from,
                to);
        return record(tx, scope, key, from, to, amount);
    }

    /**
     * A transfer written the careless way: reads both balances, then writes back what it computed,
     * in the order given. Under READ COMMITTED this loses updates; under REPEATABLE READ and
     * SERIALIZABLE concurrent transfers fail with 40001 instead, and opposite transfers deadlock
     * (40P01). The isolation level is what keeps the money right.
     */
    public static String readModifyWrite(
            DSLContext tx, Scope scope, IdempotencyKey key, int from, int to, long amount) {
        long fromBalance = balance(tx, scope, from);
        long toBalance = balance(tx, scope, to);
        if (fromBalance < amount) {
            throw new Rejection(
                    "insufficient_funds", "account " + from + " holds " + fromBalance + ", needs " + amount);
        }
        tx.execute(
                "UPDATE " + ACCOUNT + " SET balance = ? WHERE scope = ? AND id = ?",
                fromBalance - amount,
                scope.value(),
                from);
        tx.execute(
                "UPDATE " + ACCOUNT + " SET balance = ? WHERE scope = ? AND id = ?",
                toBalance + amount,
                scope.value(),
                to);
        return record(tx, scope, key, from, to, amount);
    }

    private static long balance(DSLContext tx, Scope scope, int account) {
        return tx.resultQuery("SELECT balance FROM " + ACCOUNT + " WHERE scope = ? AND id = ?", scope.value(), account)
                .fetchSingle()
                .get(0, Long.class);
    }

    private static String record(DSLContext tx, Scope scope, IdempotencyKey key, int from, int to, long amount) {
        long id = tx.resultQuery(
                        "INSERT INTO " + TRANSFER + " (scope, idem_key, from_account, to_account, amount)"
                                + " VALUES (?, ?, ?, ?, ?) RETURNING id",
                        scope.value(),
                        key.value(),
                        from,
                        to,
                        amount)
                .fetchSingle()
                .get(0, Long.class);
        tx.execute(
                "INSERT INTO " + POSTING + " (transfer_id, account, amount) VALUES (?, ?, ?), (?, ?, ?)",
                id,
                from,
                -amount,
                id,
                to,
                amount);
        return "transfer-" + id;
    }

    public record TransferRow(long id, String key, int from, int to, long amount) {}

    public record PostingRow(long transferId, int account, long amount) {}

    public record ClaimRow(String key, short state, byte[] fingerprint) {}

    /** What the database holds for one scope, read in one transaction. */
    public record Snapshot(
            Map<Integer, Long> initial,
            Map<Integer, Long> balances,
            List<TransferRow> transfers,
            List<PostingRow> postings,
            Map<String, ClaimRow> claims) {}

    public static Snapshot snapshot(Scope scope, Map<Integer, Long> initial) {
        // the checker's own read must survive the faults the storm injected: a connection the chaos
        // killed can still sit in the pool, or behind PgBouncer ("invalid server parameter")
        for (int attempt = 1; ; attempt++) {
            try {
                return snapshotOnce(scope, initial);
            } catch (RuntimeException e) {
                if (attempt >= 10 || !io.github.idemtx.jooq.internal.store.SqlStates.isConnectionLoss(e)) {
                    throw e;
                }
                System.out.println("snapshot attempt " + attempt + " lost its connection, reading again: " + e);
            }
        }
    }

    private static Snapshot snapshotOnce(Scope scope, Map<Integer, Long> initial) {
        return Db.dsl().transactionResult(cfg -> {
            DSLContext tx = cfg.dsl();
            tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
            Map<Integer, Long> balances = new TreeMap<>();
            tx.resultQuery("SELECT id, balance FROM " + ACCOUNT + " WHERE scope = ?", scope.value())
                    .forEach(r -> balances.put(r.get(0, Integer.class), r.get(1, Long.class)));
            List<TransferRow> transfers = new ArrayList<>();
            tx.resultQuery(
                            "SELECT id, idem_key, from_account, to_account, amount FROM " + TRANSFER
                                    + " WHERE scope = ?",
                            scope.value())
                    .forEach(r -> transfers.add(new TransferRow(
                            r.get(0, Long.class),
                            r.get(1, String.class),
                            r.get(2, Integer.class),
                            r.get(3, Integer.class),
                            r.get(4, Long.class))));
            List<PostingRow> postings = new ArrayList<>();
            tx.resultQuery(
                            "SELECT p.transfer_id, p.account, p.amount FROM " + POSTING + " p JOIN " + TRANSFER
                                    + " t ON t.id = p.transfer_id WHERE t.scope = ?",
                            scope.value())
                    .forEach(r -> postings.add(
                            new PostingRow(r.get(0, Long.class), r.get(1, Integer.class), r.get(2, Long.class))));
            Map<String, ClaimRow> claims = new HashMap<>();
            tx.resultQuery(
                            "SELECT idem_key, state, fingerprint FROM " + Db.SCHEMA
                                    + ".idempotency_claim WHERE scope = ?",
                            scope.value())
                    .forEach(r -> claims.put(
                            r.get(0, String.class),
                            new ClaimRow(r.get(0, String.class), r.get(1, Short.class), r.get(2, byte[].class))));
            return new Snapshot(Map.copyOf(initial), balances, transfers, postings, claims);
        });
    }
}
