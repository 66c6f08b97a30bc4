package io.github.idemtx.ledger;

import io.github.idemtx.core.Rejection;
import io.github.idemtx.jooq.outbox.Outbox;
import io.github.idemtx.jooq.outbox.OutboxMessage;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Record;

/**
 * The ledger's business operations, each on the {@code DSLContext} of the caller's transaction.
 * Every movement writes two postings that sum to zero, in the same transaction as the balances;
 * the payouts' movements ({@link Payouts}) go through {@link #payoutMovement} the same way. Only
 * {@code customer} accounts are shown to clients and can be named in a request; {@code funding},
 * {@code clearing} and {@code paid_out} accounts are the ledger's own.
 * Refusals that depend only on the request and the ledger's state are {@link Rejection}s, so the
 * idempotency layer records and replays them: 404 {@code account_not_found}, 422
 * {@code insufficient_funds} and {@code currency_mismatch}, 400 {@code invalid_request}.
 */
final class Ledger {

    record Account(UUID id, String currency, BigDecimal balance) {}

    record Transfer(UUID id, UUID from, UUID to, BigDecimal amount, String currency, OffsetDateTime createdAt) {}

    private final String schema;
    private final Outbox outbox;
    private final String eventsExchange;

    Ledger(String schema) {
        this(schema, null, null);
    }

    /**
     * A ledger that announces each applied transfer and deposit on {@code eventsExchange} through
     * {@code outbox}: the event is a row written in the transfer's own transaction, so it exists
     * exactly when the transfer and its claim commit; null for none.
     */
    Ledger(String schema, Outbox outbox, String eventsExchange) {
        this.schema = schema;
        this.outbox = outbox;
        this.eventsExchange = eventsExchange;
    }

    Account openAccount(DSLContext tx, String tenant, String currency) {
        UUID id = UUID.randomUUID();
        tx.execute("INSERT INTO " + schema + ".account (id, tenant, currency) VALUES (?, ?, ?)", id, tenant, currency);
        return new Account(id, currency, new BigDecimal("0.00"));
    }

    Optional<Account> account(DSLContext dsl, String tenant, UUID id) {
        return dsl.resultQuery(
                        "SELECT id, currency, balance FROM " + schema + ".account"
                                + " WHERE id = ? AND tenant = ? AND kind = 'customer'",
                        id,
                        tenant)
                .fetchOptional()
                .map(r -> new Account(r.get(0, UUID.class), r.get(1, String.class), r.get(2, BigDecimal.class)));
    }

    Optional<Transfer> transfer(DSLContext dsl, String tenant, UUID id) {
        return dsl.resultQuery(
                        "SELECT id, from_account, to_account, amount, currency, created_at FROM " + schema
                                + ".transfer WHERE id = ? AND tenant = ? AND kind IN ('deposit', 'transfer')",
                        id,
                        tenant)
                .fetchOptional()
                .map(Ledger::transferOf);
    }

    /** Moves {@code amount} from the tenant's funding account for the account's currency. */
    Transfer deposit(DSLContext tx, String tenant, UUID to, BigDecimal amount) {
        Record target = tx.resultQuery(
                        "SELECT currency FROM " + schema + ".account"
                                + " WHERE id = ? AND tenant = ? AND kind = 'customer'",
                        to,
                        tenant)
                .fetchOne();
        if (target == null) {
            throw notFound(to);
        }
        String currency = target.get(0, String.class);
        tx.execute(
                "INSERT INTO " + schema
                        + ".account (id, tenant, currency, is_funding, kind) VALUES (?, ?, ?, true, 'funding')"
                        + " ON CONFLICT (tenant, currency) WHERE is_funding DO NOTHING",
                UUID.randomUUID(),
                tenant,
                currency);
        UUID funding = tx.resultQuery(
                        "SELECT id FROM " + schema + ".account WHERE tenant = ? AND currency = ? AND is_funding",
                        tenant,
                        currency)
                .fetchSingle()
                .get(0, UUID.class);
        return move(tx, tenant, "deposit", funding, to, amount);
    }

    /** Moves {@code amount} between two customer accounts of the tenant. */
    Transfer transfer(DSLContext tx, String tenant, UUID from, UUID to, BigDecimal amount) {
        if (from.equals(to)) {
            throw new Rejection("invalid_request", "from and to must be different accounts");
        }
        return move(tx, tenant, "transfer", from, to, amount);
    }

    private Transfer move(DSLContext tx, String tenant, String kind, UUID from, UUID to, BigDecimal amount) {
        // lock both rows in id order, so concurrent opposite transfers cannot deadlock
        List<Record> rows = new ArrayList<>(tx.resultQuery(
                        "SELECT id, currency, balance, kind FROM " + schema
                                + ".account WHERE id IN (?, ?) AND tenant = ? ORDER BY id FOR UPDATE",
                        from,
                        to,
                        tenant)
                .fetch());
        Record source = find(rows, from);
        Record target = find(rows, to);
        String sourceKind = source == null ? null : source.get(3, String.class);
        if (source == null
                || !(sourceKind.equals("customer") || (kind.equals("deposit") && sourceKind.equals("funding")))) {
            throw notFound(from);
        }
        if (target == null || !target.get(3, String.class).equals("customer")) {
            throw notFound(to);
        }
        String currency = source.get(1, String.class);
        if (!currency.equals(target.get(1, String.class))) {
            throw new Rejection(
                    "currency_mismatch",
                    "account " + from + " holds " + currency + " but account " + to + " holds "
                            + target.get(1, String.class));
        }
        BigDecimal balance = source.get(2, BigDecimal.class);
        if (sourceKind.equals("customer") && balance.compareTo(amount) < 0) {
            throw new Rejection(
                    "insufficient_funds",
                    "account " + from + " has " + balance.toPlainString() + " " + currency + ", the transfer needs "
                            + amount.toPlainString());
        }
        tx.execute(
                "UPDATE " + schema
                        + ".account SET balance = balance + CASE WHEN id = ? THEN -?::numeric ELSE ?::numeric END"
                        + " WHERE id IN (?, ?)",
                from,
                amount,
                amount,
                from,
                to);
        UUID id = UUID.randomUUID();
        Record created = tx.resultQuery(
                        "INSERT INTO " + schema + ".transfer (id, tenant, kind, from_account, to_account,"
                                + " amount, currency, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, date_trunc('milliseconds', now()))"
                                + " RETURNING id, from_account, to_account, amount, currency, created_at",
                        id,
                        tenant,
                        kind,
                        from,
                        to,
                        amount,
                        currency)
                .fetchSingle();
        tx.execute(
                "INSERT INTO " + schema
                        + ".posting (transfer_id, account_id, amount) VALUES (?, ?, -?::numeric), (?, ?, ?)",
                id,
                from,
                amount,
                id,
                to,
                amount);
        Transfer transfer = transferOf(created);
        if (outbox != null) {
            announce(tx, kind, transfer);
        }
        return transfer;
    }

    /** The event of an applied transfer or deposit, added to the outbox in the transfer's transaction. */
    private void announce(DSLContext tx, String kind, Transfer t) {
        String json = "{\"event\":\"" + kind + ".applied\",\"id\":\"" + t.id() + "\",\"from\":\"" + t.from()
                + "\",\"to\":\"" + t.to() + "\",\"amount\":\"" + t.amount().toPlainString() + "\",\"currency\":\""
                + t.currency() + "\",\"createdAt\":\"" + t.createdAt() + "\"}";
        outbox.add(
                tx,
                OutboxMessage.builder(kind + "-applied", eventsExchange, json.getBytes(StandardCharsets.UTF_8))
                        .orderingKey(t.from().toString()) // one account's outgoing transfers in commit order
                        .header("content-type", "application/json")
                        .header("event-type", kind + ".applied")
                        .build());
    }

    /**
     * The event of a paid payout ({@code payout.paid}), added to the outbox in the transaction that
     * records the bank's answer, when the ledger has events: named after the payout (the claim's
     * downstream key), so a key claimed again after an operator forgot its claim announces its new
     * payout under another id.
     */
    void announcePayout(DSLContext tx, UUID payout, UUID account, BigDecimal amount, String currency, String charge) {
        if (outbox == null) {
            return;
        }
        String json = "{\"event\":\"payout.paid\",\"id\":\"" + payout + "\",\"from\":\"" + account
                + "\",\"amount\":\"" + amount.toPlainString() + "\",\"currency\":\"" + currency
                + "\",\"chargeId\":\"" + charge + "\"}";
        outbox.add(
                tx,
                OutboxMessage.builder("payout-paid-" + payout, eventsExchange, json.getBytes(StandardCharsets.UTF_8))
                        .orderingKey(account.toString()) // with the account's transfers, in commit order
                        .header("content-type", "application/json")
                        .header("event-type", "payout.paid")
                        .build());
    }

    /**
     * The tenant's {@code clearing} or {@code paid_out} account for a currency at a bank, opened on
     * first use (concurrent first uses open one: the loser of the unique index reads the winner's).
     */
    UUID bankAccount(DSLContext tx, String tenant, String currency, String bank, String kind) {
        String select =
                "SELECT id FROM " + schema + ".account WHERE tenant = ? AND currency = ? AND bank = ? AND kind = ?";
        Record found = tx.resultQuery(select, tenant, currency, bank, kind).fetchOne();
        if (found != null) {
            return found.get(0, UUID.class);
        }
        tx.execute(
                "INSERT INTO " + schema + ".account (id, tenant, currency, kind, bank) VALUES (?, ?, ?, ?, ?)"
                        + " ON CONFLICT (tenant, currency, bank, kind) WHERE bank IS NOT NULL DO NOTHING",
                UUID.randomUUID(),
                tenant,
                currency,
                kind,
                bank);
        return tx.resultQuery(select, tenant, currency, bank, kind)
                .fetchSingle()
                .get(0, UUID.class);
    }

    /**
     * Adds {@code delta} to an account's balance. The payouts call it for both sides of a movement,
     * always in the order customer, clearing, paid_out, so that concurrent payouts (and transfers,
     * which lock only customer accounts) take the row locks in one order and cannot deadlock. A
     * clearing or paid_out account going negative breaks {@code account_not_overdrawn}: a settlement or
     * release without its hold fails instead of committing.
     */
    void adjust(DSLContext tx, UUID account, BigDecimal delta) {
        int updated = tx.execute(
                "UPDATE " + schema + ".account SET balance = balance + ?::numeric WHERE id = ?", delta, account);
        if (updated != 1) {
            throw new IllegalStateException("account " + account + " does not exist");
        }
    }

    /**
     * Records one of a payout's movements ({@code hold}, {@code settle} or {@code release}): the
     * transfer row, with the payout's id (at most one of each kind per payout: a unique index), and
     * its two postings summing to zero. The caller has moved the balances with {@link #adjust}.
     */
    void payoutMovement(
            DSLContext tx,
            String tenant,
            String kind,
            UUID payout,
            UUID from,
            UUID to,
            BigDecimal amount,
            String currency) {
        UUID id = UUID.randomUUID();
        tx.execute(
                "INSERT INTO " + schema + ".transfer (id, tenant, kind, from_account, to_account, amount, currency,"
                        + " created_at, payout_id) VALUES (?, ?, ?, ?, ?, ?, ?, date_trunc('milliseconds', now()), ?)",
                id,
                tenant,
                kind,
                from,
                to,
                amount,
                currency,
                payout);
        tx.execute(
                "INSERT INTO " + schema
                        + ".posting (transfer_id, account_id, amount) VALUES (?, ?, -?::numeric), (?, ?, ?)",
                id,
                from,
                amount,
                id,
                to,
                amount);
    }

    private static Record find(List<Record> rows, UUID id) {
        for (Record r : rows) {
            if (r.get(0, UUID.class).equals(id)) {
                return r;
            }
        }
        return null;
    }

    private static Rejection notFound(UUID id) {
        return new Rejection("account_not_found", "account " + id + " does not exist");
    }

    private static Transfer transferOf(Record r) {
        return new Transfer(
                r.get(0, UUID.class),
                r.get(1, UUID.class),
                r.get(2, UUID.class),
                r.get(3, BigDecimal.class),
                r.get(4, String.class),
                r.get(5, OffsetDateTime.class));
    }
}
