package io.github.idemtx.jooq.outbox;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.time.Instant;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/**
 * The outbox tests' database: the JVM's test database, migrated in this run's claim table layout
 * (plain, or partitioned by key day in the {@code partitioned} execution: the outbox table is the
 * same either way), and a small pool of its own.
 */
final class OutboxDb {

    static final TestDatabase DATABASE = TestDatabase.get();
    static final String SCHEMA = DATABASE.schema();
    static final HikariDataSource POOL = DATABASE.newPool(12);
    static final DSLContext DSL_CONTEXT = DSL.using(POOL, SQLDialect.POSTGRES);
    static final boolean PARTITIONED = "partitioned".equals(System.getProperty("idemtx.test.layout", ""));
    static final @Nullable ClaimPartitions PARTITIONS =
            PARTITIONED ? ClaimPartitions.byKeyDay(POOL).schema(SCHEMA).build() : null;

    static {
        try (HikariDataSource direct = DATABASE.newServerPool(2)) {
            if (PARTITIONED) {
                ClaimPartitions.byKeyDay(direct).schema(SCHEMA).build().migrate();
            } else {
                IdempotencySchema.migrate(direct, SCHEMA);
            }
        }
        DSL_CONTEXT.execute("CREATE TABLE IF NOT EXISTS " + SCHEMA + ".outbox_effect ("
                + " id bigserial PRIMARY KEY, scope text NOT NULL, idem_key text NOT NULL)");
    }

    private OutboxDb() {}

    static IdempotentTransaction<String> transactions() {
        String mode = System.getProperty("idemtx.test.claimMode", "");
        IdempotentTransaction.Builder<String> b = IdempotentTransaction.builder(DSL_CONTEXT, ResultCodec.utf8())
                .schema(SCHEMA)
                .claimMode(mode.isBlank() ? IdempotentTransaction.DEFAULT_CLAIM_MODE : ClaimMode.valueOf(mode));
        ClaimPartitions p = PARTITIONS;
        return p == null ? b.build() : b.partitions(p).build();
    }

    static Outbox outbox() {
        return Outbox.builder(DSL_CONTEXT).schema(SCHEMA).build();
    }

    static OutboxRelay.Builder relay(OutboxTransport transport) {
        return OutboxRelay.builder(DSL_CONTEXT, transport).schema(SCHEMA);
    }

    static Scope freshScope() {
        return Scope.of("outbox-" + UUID.randomUUID());
    }

    static IdempotencyKey freshKey() {
        return PARTITIONED
                ? ClaimPartitions.key(Instant.now(), UUID.randomUUID().toString())
                : IdempotencyKey.random();
    }

    static Fingerprint fingerprint(String request) {
        return Fingerprint.sha256(request);
    }

    static void writeEffect(DSLContext tx, Scope scope, IdempotencyKey key) {
        tx.execute(
                "INSERT INTO " + SCHEMA + ".outbox_effect (scope, idem_key) VALUES (?, ?)", scope.value(), key.value());
    }

    static int effects(Scope scope) {
        return count("SELECT count(*)::int FROM " + SCHEMA + ".outbox_effect WHERE scope = ?", scope.value());
    }

    static int messages(Scope scope) {
        return count("SELECT count(*)::int FROM " + SCHEMA + ".idempotency_outbox WHERE scope = ?", scope.value());
    }

    /**
     * Makes every message of the run's other tests undeliverable for this test: a relay polls the
     * whole table, so each test begins with nothing else due (its own messages are added after).
     */
    static void settleOthers() {
        DSL_CONTEXT.execute("UPDATE " + SCHEMA + ".idempotency_outbox SET status = 'discarded',"
                + " settled_at = clock_timestamp(), lease_owner = null, lease_until = null"
                + " WHERE status IN ('pending', 'failed')");
    }

    /** Moves a message's next attempt to now, skipping its backoff. */
    static void dueNow(UUID messageId) {
        DSL_CONTEXT.execute(
                "UPDATE " + SCHEMA + ".idempotency_outbox SET next_attempt_at = clock_timestamp() WHERE message_id = ?",
                messageId);
    }

    /** Moves a message's settlement {@code seconds} into the past. */
    static void settledAgo(UUID messageId, int seconds) {
        DSL_CONTEXT.execute(
                "UPDATE " + SCHEMA + ".idempotency_outbox SET settled_at = clock_timestamp() - make_interval(secs => ?)"
                        + " WHERE message_id = ?",
                seconds,
                messageId);
    }

    static int count(String sql, Object... bindings) {
        return DSL_CONTEXT.resultQuery(sql, bindings).fetchSingle().get(0, Integer.class);
    }
}
