package io.github.idemtx.jooq.outbox;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import java.util.UUID;
import org.jooq.DSLContext;

/**
 * The outbox tests' database: the shared test database of {@link Db} (the JVM's own, migrated in this
 * run's claim table layout, plain or partitioned by key day: the outbox table is the same either way,
 * and its pool), with the outbox's own helpers.
 */
final class OutboxDb {

    static final TestDatabase DATABASE = Db.DATABASE;
    static final String SCHEMA = Db.SCHEMA;
    static final DSLContext DSL_CONTEXT = Db.DSL_CONTEXT;

    static {
        DSL_CONTEXT.execute("CREATE TABLE IF NOT EXISTS " + SCHEMA + ".outbox_effect ("
                + " id bigserial PRIMARY KEY, scope text NOT NULL, idem_key text NOT NULL)");
    }

    private OutboxDb() {}

    /** The run's claim order and layout, as {@link Db#builder} gives them. */
    static IdempotentTransaction<String> transactions() {
        return Db.builder(DSL_CONTEXT, ResultCodec.utf8()).schema(SCHEMA).build();
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
        return Db.freshKey();
    }

    static Fingerprint fingerprint(String request) {
        return Db.fingerprint(request);
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
