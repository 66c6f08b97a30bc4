package io.github.idemtx.jooq.readme;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.math.BigDecimal;
import javax.sql.DataSource;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/** Money transfers, each at most once per (tenant, Idempotency-Key), on a HikariCP pool. */
public class TransferService {

    public record Transfer(long id, String from, String to, BigDecimal amount) {}

    private final String schema;
    private final IdempotentTransaction<Transfer> transfers; // immutable, thread-safe: one per result type

    /** Once at start-up: the claim table (with a Flyway history table of its own) and the business table. */
    public static void migrate(DataSource dataSource, String schema) {
        IdempotencySchema.migrate(dataSource, schema); // creates the schema if it is missing
        DSL.using(dataSource, SQLDialect.POSTGRES).transaction(c -> c.dsl().execute( // committed, also on a pool with auto-commit off
                "CREATE TABLE IF NOT EXISTS " + schema + ".transfer (id bigserial PRIMARY KEY, from_account text NOT NULL,"
                        + " to_account text NOT NULL, amount numeric(12, 2) NOT NULL CHECK (amount > 0))"));
    }

    public TransferService(HikariDataSource pool, String schema) {
        this.schema = schema;
        this.transfers = IdempotentTransaction
                .builder(DSL.using(pool, SQLDialect.POSTGRES), ResultCodec.json(Transfer.class))
                .schema(schema) // where migrate put the claim table; without it "public", and calls fail
                .build();
    }

    public Outcome<Transfer> transfer(String tenant, String idempotencyKey, String from, String to, BigDecimal amount) {
        return transfers.run(
                Scope.of(tenant), // from authentication, never from a header the client controls
                IdempotencyKey.of(idempotencyKey), // the client's Idempotency-Key, the same on every retry
                Fingerprint.sha256(from + "|" + to + "|" + amount.toPlainString()), // what the request asks
                tx -> { // tx: the DSLContext of the one transaction; every write goes through it
                    if (from.equals(to)) {
                        throw new Rejection("same_account", "from and to must differ"); // recorded, replayed
                    }
                    long id = tx.resultQuery("INSERT INTO " + schema + ".transfer (from_account, to_account, amount)"
                            + " VALUES (?, ?, ?) RETURNING id", from, to, amount).fetchSingle().get(0, Long.class);
                    return new Transfer(id, from, to, amount);
                });
    }

    /** The HTTP answer for each outcome. */
    public static String respond(Outcome<Transfer> outcome) {
        return switch (outcome) {
            case Outcome.Executed<Transfer> e -> "201 transfer " + e.value().id();
            case Outcome.Replayed<Transfer> r -> "201 transfer " + r.value().id() + " (Idempotent-Replayed: true)";
            case Outcome.Rejected<Transfer> f -> "422 " + f.failure().code() + ": " + f.failure().message();
            case Outcome.FingerprintMismatch<Transfer> m -> "422 key reused with another request";
            case Outcome.InProgress<Transfer> p -> "409 still running (Retry-After: " + p.retryAfter().toSeconds() + ")";
        };
    }
}
