package io.github.idemtx.ledger;

import io.github.idemtx.core.Rejection;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Record;

/**
 * The ledger's business operations, each on the {@code DSLContext} of the caller's transaction.
 * Every movement writes two postings that sum to zero, in the same transaction as the balances.
 * Refusals that depend only on the request and the ledger's state are {@link Rejection}s, so the
 * idempotency layer records and replays them: 404 {@code account_not_found}, 422
 * {@code insufficient_funds} and {@code currency_mismatch}, 400 {@code invalid_request}.
 */
final class Ledger {

    record Account(UUID id, String currency, BigDecimal balance) {}

    record Transfer(UUID id, UUID from, UUID to, BigDecimal amount, String currency, OffsetDateTime createdAt) {}

    private final String schema;

    Ledger(String schema) {
        this.schema = schema;
    }

    Account openAccount(DSLContext tx, String tenant, String currency) {
        UUID id = UUID.randomUUID();
        tx.execute("INSERT INTO " + schema + ".account (id, tenant, currency) VALUES (?, ?, ?)", id, tenant, currency);
        return new Account(id, currency, new BigDecimal("0.00"));
    }

    Optional<Account> account(DSLContext dsl, String tenant, UUID id) {
        return dsl.resultQuery(
                        "SELECT id, currency, balance FROM " + schema + ".account"
                                + " WHERE id = ? AND tenant = ? AND NOT is_funding",
                        id,
                        tenant)
                .fetchOptional()
                .map(r -> new Account(r.get(0, UUID.class), r.get(1, String.class), r.get(2, BigDecimal.class)));
    }

    Optional<Transfer> transfer(DSLContext dsl, String tenant, UUID id) {
        return dsl.resultQuery(
                        "SELECT id, from_account, to_account, amount, currency, created_at FROM " + schema
                                + ".transfer WHERE id = ? AND tenant = ?",
                        id,
                        tenant)
                .fetchOptional()
                .map(Ledger::transferOf);
    }

    /** Moves {@code amount} from the tenant's funding account for the account's currency. */
    Transfer deposit(DSLContext tx, String tenant, UUID to, BigDecimal amount) {
        Record target = tx.resultQuery(
                        "SELECT currency FROM " + schema + ".account"
                                + " WHERE id = ? AND tenant = ? AND NOT is_funding",
                        to,
                        tenant)
                .fetchOne();
        if (target == null) {
            throw notFound(to);
        }
        String currency = target.get(0, String.class);
        tx.execute(
                "INSERT INTO " + schema + ".account (id, tenant, currency, is_funding) VALUES (?, ?, ?, true)"
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
                        "SELECT id, currency, balance, is_funding FROM " + schema
                                + ".account WHERE id IN (?, ?) AND tenant = ? ORDER BY id FOR UPDATE",
                        from,
                        to,
                        tenant)
                .fetch());
        Record source = find(rows, from);
        Record target = find(rows, to);
        if (source == null || (!kind.equals("deposit") && source.get(3, Boolean.class))) {
            throw notFound(from);
        }
        if (target == null || target.get(3, Boolean.class)) {
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
        if (!source.get(3, Boolean.class) && balance.compareTo(amount) < 0) {
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
        return transferOf(created);
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
