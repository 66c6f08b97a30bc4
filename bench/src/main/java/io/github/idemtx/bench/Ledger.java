package io.github.idemtx.bench;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.ResultCodec;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.jooq.DSLContext;
import org.jooq.Record;

/**
 * The business operation every strategy runs: a ledger transfer (debit, credit, insert a transfer
 * row) on tables of the same shape as example-ledger's. Every strategy executes exactly these three
 * statements through jOOQ, so they differ only in how the idempotency is handled. Thread-safe.
 */
final class Ledger {

    /** What a client asks for. */
    record TransferRequest(String from, String to, BigDecimal amount) {

        /** The request as the client would send it; what the fingerprint is taken over. */
        String canonical() {
            return "POST /transfers {\"amount\":\"" + amount.toPlainString() + "\",\"from\":\"" + from + "\",\"to\":\""
                    + to + "\"}";
        }

        Fingerprint fingerprint() {
            return Fingerprint.sha256(canonical());
        }
    }

    /** What a transfer returns, and what the claim stores for replays. */
    record Receipt(long id, String from, String to, BigDecimal amount) {}

    /** A small, allocation-light codec ({@code id|from|to|amount} in UTF-8), ~30 bytes a result. */
    static final ResultCodec<Receipt> CODEC = new ResultCodec<>() {
        @Override
        public byte[] encode(Receipt r) {
            return (r.id() + "|" + r.from() + "|" + r.to() + "|" + r.amount().toPlainString())
                    .getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public Receipt decode(byte[] bytes) {
            String[] p = new String(bytes, StandardCharsets.UTF_8).split("\\|", 4);
            return new Receipt(Long.parseLong(p[0]), p[1], p[2], new BigDecimal(p[3]));
        }

        @Override
        public String toString() {
            return "ReceiptCodec";
        }
    };

    static final BigDecimal INITIAL_BALANCE = new BigDecimal("1000000000.00");

    private final String schema;
    private final int accounts;
    private final String debitSql;
    private final String creditSql;
    private final String recordSql;

    Ledger(String schema, int accounts) {
        this.schema = schema;
        this.accounts = accounts;
        this.debitSql = "UPDATE " + schema + ".account SET balance = balance - ? WHERE id = ? AND balance >= ?";
        this.creditSql = "UPDATE " + schema + ".account SET balance = balance + ? WHERE id = ?";
        this.recordSql = "INSERT INTO " + schema + ".transfer (from_id, to_id, amount) VALUES (?, ?, ?) RETURNING id";
    }

    String schema() {
        return schema;
    }

    int accounts() {
        return accounts;
    }

    /** Creates the ledger tables (the schema exists) and the accounts, each with a large balance. */
    void create(DSLContext dsl) {
        dsl.execute("CREATE TABLE " + schema + ".account (id text PRIMARY KEY,"
                + " balance numeric(18,2) NOT NULL CHECK (balance >= 0))");
        dsl.execute(
                "CREATE TABLE " + schema + ".transfer (id bigserial PRIMARY KEY, from_id text NOT NULL,"
                        + " to_id text NOT NULL, amount numeric(18,2) NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
        dsl.execute(
                "INSERT INTO " + schema + ".account (id, balance) SELECT 'acct-' || lpad(i::text, 6, '0'), ? "
                        + "FROM generate_series(1, ?) i",
                INITIAL_BALANCE,
                accounts);
        dsl.execute("ANALYZE " + schema + ".account");
    }

    /** A random transfer between two distinct accounts, 0.01 to 9.99. */
    TransferRequest randomRequest(SplittableRandom random) {
        int a = random.nextInt(accounts) + 1;
        int b = random.nextInt(accounts - 1) + 1;
        if (b >= a) {
            b++;
        }
        return new TransferRequest(accountId(a), accountId(b), BigDecimal.valueOf(random.nextInt(999) + 1, 2));
    }

    static String accountId(int n) {
        String digits = Integer.toString(n);
        return "acct-" + "000000".substring(digits.length()) + digits;
    }

    /**
     * Debits, credits and records the transfer through {@code tx}, in the transaction {@code tx}
     * belongs to. The two account rows are locked in id order so that concurrent transfers never
     * deadlock (no strategy needs a retry loop that the others lack).
     */
    Receipt transfer(DSLContext tx, TransferRequest t) {
        if (t.from().compareTo(t.to()) < 0) {
            debit(tx, t);
            tx.execute(creditSql, t.amount(), t.to());
        } else {
            tx.execute(creditSql, t.amount(), t.to());
            debit(tx, t);
        }
        Record row = tx.resultQuery(recordSql, t.from(), t.to(), t.amount()).fetchOne();
        if (row == null) {
            throw new IllegalStateException("INSERT ... RETURNING returned no row");
        }
        return new Receipt(row.get(0, Long.class), t.from(), t.to(), t.amount());
    }

    private void debit(DSLContext tx, TransferRequest t) {
        int debited = tx.execute(debitSql, t.amount(), t.from(), t.amount());
        if (debited != 1) {
            throw new IllegalStateException("debit of " + t.from() + " updated " + debited + " rows");
        }
    }
}
