package io.github.idemtx.jooq.outbox;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.OutboxBacklog;
import io.github.idemtx.core.OutboxEvent;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.ClaimContext;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.internal.store.ClaimTable;
import io.github.idemtx.jooq.internal.store.OutboxRow;
import io.github.idemtx.jooq.internal.store.OutboxStatements;
import io.github.idemtx.jooq.internal.store.SqlStates;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * The transactional outbox: {@link #add} writes a message in the transaction of an {@link
 * IdempotentTransaction}'s work, so that the message exists exactly when the claim and the business
 * write commit; an {@link OutboxRelay} delivers it afterwards, at least once.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.create(dsl);
 * transfers.run(scope, key, fingerprint, tx -> {
 *     Transfer t = ledger.transfer(tx, from, to, amount);
 *     outbox.add(tx, OutboxMessage.builder("transfer-applied", "ledger.events", json(t))
 *             .orderingKey(from.id())
 *             .build());
 *     return t;
 * });
 * }</pre>
 *
 * <h2>What {@link #add} promises</h2>
 * <ul>
 *   <li>The message is a row written through the work's {@code tx}: it commits with the claim and the
 *       business write, or vanishes with them (a rollback, a recorded rejection, a replay whose work
 *       ran first and was rolled back). A replay runs no work and adds nothing: one message per claim
 *       and name, ever.
 *   <li>Its id is derived from the claim's scope and key and the message's name ({@link #messageId}):
 *       the same whichever attempt of the unit added it and however often a relay sends it, so
 *       consumers deduplicate by it.
 *   <li>A message with an ordering key takes that key's transaction-level advisory lock when added:
 *       transactions adding to one key commit their messages in the order they got their ids, and
 *       the relay delivers them in that order.
 * </ul>
 *
 * <p>The operator's side: {@link #find}, {@link #failed}, {@link #retry}, {@link #discard} and
 * {@link #backlog}, each in a transaction of its own. Apply the migrations first ({@link
 * IdempotencySchema#migrate}; the outbox table comes with them, whichever claim table layout). Immutable
 * and thread-safe.
 */
public final class Outbox {

    private final DSLContext dsl;
    private final String schema;
    private final OutboxStatements sql;
    private final Listeners listeners;

    private Outbox(Builder b) {
        this.dsl = b.dsl;
        this.schema = b.schema;
        this.sql = new OutboxStatements(new ClaimTable(b.schema));
        this.listeners = new Listeners(b.listeners);
    }

    /**
     * {@return an outbox in the {@value IdempotencySchema#DEFAULT_SCHEMA} schema}
     *
     * @param dsl where the operator's reads and actions get their connections
     * @throws NullPointerException if {@code dsl} is null
     */
    public static Outbox create(DSLContext dsl) {
        return builder(dsl).build();
    }

    /**
     * {@return a builder, for another schema or listeners of the operator's actions}
     *
     * @param dsl where the operator's reads and actions get their connections
     * @throws NullPointerException if {@code dsl} is null
     */
    public static Builder builder(DSLContext dsl) {
        return new Builder(dsl);
    }

    /** {@return the schema holding the outbox table} */
    public String schema() {
        return schema;
    }

    /**
     * Adds a message inside an {@link IdempotentTransaction}'s work, or an {@link
     * io.github.idemtx.jooq.ExternalEffect}'s local writes (its hold before the call, its record after:
     * the message commits with them); see the class documentation. An effect's key may be claimed again
     * after an operator forgot its claim: name such a message after the claim (its downstream key),
     * not only the key, or the second claim's message meets the first's id.
     *
     * @param tx the {@code tx} the work was handed
     * @param message the message
     * @return the message's id, {@link #messageId} of the claim and its name
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if {@code tx} is not the {@code tx} of a work ({@link ClaimContext}):
     *     nothing was written
     * @throws DataAccessException jOOQ's, if the insert failed, e.g. the work added a message of this name
     *     already (the unique id; the transaction is then doomed and the work should let it fail)
     */
    public UUID add(DSLContext tx, OutboxMessage message) {
        Objects.requireNonNull(tx, "tx must not be null");
        Objects.requireNonNull(message, "message must not be null");
        ClaimContext claim = ClaimContext.of(tx)
                .orElseThrow(
                        () -> new IllegalStateException("Outbox.add needs the tx an IdempotentTransaction's work, or an"
                                + " ExternalEffect's local writes, were handed (it names the message after the claim);"
                                + " this DSLContext belongs to no claim"));
        UUID id = messageId(claim.scope(), claim.key(), message.name());
        String orderingKey = message.orderingKey();
        tx.connection(c -> {
            try {
                sql.add(
                        c,
                        id,
                        claim.scope().value(),
                        claim.key().value(),
                        message.name(),
                        message.destination(),
                        orderingKey,
                        orderingKey == null ? null : "idemtx.outbox\n" + message.destination() + "\n" + orderingKey,
                        message.payload(),
                        Headers.encode(message.headers()));
            } catch (SQLException e) {
                if ("23505".equals(e.getSQLState())) {
                    throw new DataAccessException(
                            "this claim's work added a message named '" + message.name() + "' already (its id " + id
                                    + " is taken); names are unique within a claim",
                            e);
                }
                throw SqlStates.storeFailure("the outbox insert failed", e, schema);
            }
        });
        return id;
    }

    /**
     * {@link #add(DSLContext, OutboxMessage)} of a message without ordering key or headers.
     *
     * @param tx the {@code tx} the work was handed
     * @param name unique within the claim
     * @param destination where the transport delivers it
     * @param payload the body
     * @return the message's id
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if {@code tx} is not a work's
     */
    public UUID add(DSLContext tx, String name, String destination, byte[] payload) {
        return add(tx, OutboxMessage.of(name, destination, payload));
    }

    /**
     * {@return the id of the message named {@code name} of the claim ({@code scope}, {@code key})}: a
     * UUID of version 8 (RFC 9562) from the first 16 bytes of SHA-256 over the three, each
     * length-prefixed. The same in every version of the library and on every machine.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param name the message's name within the claim
     * @throws NullPointerException if an argument is null
     */
    public static UUID messageId(Scope scope, IdempotencyKey key, String name) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(name, "name must not be null");
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
        for (String part : new String[] {"idemtx-outbox", scope.value(), key.value(), name}) {
            byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
            sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
            sha.update(bytes);
        }
        ByteBuffer digest = ByteBuffer.wrap(sha.digest());
        long high = (digest.getLong() & ~0xF000L) | 0x8000L; // version 8
        long low = (digest.getLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L; // variant 10
        return new UUID(high, low);
    }

    /**
     * {@return the message with this id, if the table holds it (delivered ones go after the retention)}
     *
     * @param messageId the id
     * @throws NullPointerException if {@code messageId} is null
     */
    public Optional<OutboxEntry> find(UUID messageId) {
        Objects.requireNonNull(messageId, "messageId must not be null");
        OutboxRow row = OwnStatement.run(dsl, schema, "the outbox read failed", c -> sql.find(c, messageId));
        return Optional.ofNullable(row).map(Outbox::entry);
    }

    /**
     * {@return up to {@code limit} failed messages, oldest first: what waits for an operator}
     *
     * @param limit from 1 to 1,000
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public List<OutboxEntry> failed(int limit) {
        if (limit < 1 || limit > 1000) {
            throw new IllegalArgumentException("limit must be between 1 and 1000, was " + limit);
        }
        List<OutboxRow> rows = OwnStatement.run(
                dsl, schema, "the outbox read failed", c -> sql.page(c, OutboxStatements.FAILED, 0, limit));
        List<OutboxEntry> entries = new ArrayList<>(rows.size());
        rows.forEach(r -> entries.add(entry(r)));
        return entries;
    }

    /**
     * Puts a failed message back to be delivered now, its attempts counted afresh.
     *
     * @param messageId the message's id
     * @return whether it was failed (and is pending now); false if there is no such message or it is not failed
     * @throws NullPointerException if {@code messageId} is null
     */
    public boolean retry(UUID messageId) {
        Objects.requireNonNull(messageId, "messageId must not be null");
        return acted(
                OutboxEvent.Kind.RETRIED,
                messageId,
                OwnStatement.run(dsl, schema, "the outbox retry failed", c -> sql.retry(c, messageId)));
    }

    /**
     * Discards a pending or failed message: it is never delivered, and stops holding back later
     * messages of its ordering key. A relay sending it at this moment may still deliver it.
     *
     * @param messageId the message's id
     * @return whether it was pending or failed (and is discarded now)
     * @throws NullPointerException if {@code messageId} is null
     */
    public boolean discard(UUID messageId) {
        Objects.requireNonNull(messageId, "messageId must not be null");
        return acted(
                OutboxEvent.Kind.DISCARDED,
                messageId,
                OwnStatement.run(dsl, schema, "the outbox discard failed", c -> sql.discard(c, messageId)));
    }

    private boolean acted(OutboxEvent.Kind kind, UUID messageId, OutboxStatements.@Nullable Acted acted) {
        if (acted == null) {
            return false;
        }
        listeners.outboxChanged(OutboxEvent.byOperator(kind, messageId, acted.destination(), acted.attempts()));
        return true;
    }

    /** {@return pending and failed messages now, and how long the oldest pending one has waited} */
    public OutboxBacklog backlog() {
        OutboxStatements.Backlog b = OwnStatement.run(dsl, schema, "the outbox backlog read failed", sql::backlog);
        return OutboxBacklog.of(b.pending(), b.failed(), b.oldestPendingAge());
    }

    static OutboxEntry entry(OutboxRow r) {
        return new OutboxEntry(
                r.messageId(),
                Scope.of(r.scope()),
                IdempotencyKey.of(r.key()),
                r.name(),
                r.destination(),
                r.orderingKey(),
                r.payload(),
                Headers.decode(r.headers()),
                OutboxStatus.valueOf(r.status().toUpperCase(Locale.ROOT)),
                r.attempts(),
                Objects.requireNonNull(r.createdAt()),
                Objects.requireNonNull(r.nextAttemptAt()),
                r.lastAttemptAt(),
                r.lastError(),
                r.settledAt());
    }

    /** Builds an {@link Outbox}; not thread-safe. */
    public static final class Builder {
        private final DSLContext dsl;
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;
        private final List<IdempotencyListener<?>> listeners = new ArrayList<>();

        private Builder(DSLContext dsl) {
            this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
        }

        /**
         * The schema the migrations were applied to; default {@value IdempotencySchema#DEFAULT_SCHEMA}.
         *
         * @param schema a plain PostgreSQL identifier
         * @return this builder
         * @throws NullPointerException if {@code schema} is null
         * @throws IllegalArgumentException if it is not a plain identifier
         */
        public Builder schema(String schema) {
            this.schema = IdempotencySchema.requireSchemaName(schema);
            return this;
        }

        /**
         * Adds a listener, told of the operator's retries and discards ({@link
         * IdempotencyListener#outboxChanged}).
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder listener(IdempotencyListener<?> listener) {
            listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
            return this;
        }

        /** {@return the outbox} */
        public Outbox build() {
            return new Outbox(this);
        }
    }
}
