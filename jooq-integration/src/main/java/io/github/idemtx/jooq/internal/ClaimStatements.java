package io.github.idemtx.jooq.internal;

import static io.github.idemtx.jooq.internal.schema.tables.IdempotencyClaim.IDEMPOTENCY_CLAIM;

import io.github.idemtx.jooq.internal.schema.tables.IdempotencyClaim;
import java.time.Instant;
import java.time.OffsetDateTime;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.conf.MappedSchema;
import org.jooq.conf.RenderMapping;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The claim table's statements for one schema, rendered once from the generated classes and
 * executed through the caller's jOOQ configuration (so its listeners see them) with every value
 * bound. Immutable and thread-safe.
 */
public final class ClaimStatements {

    /** Claimed in this transaction, the work not yet finished; never committed in this mode. */
    public static final short RUNNING = 0;
    /** Completed; the result column holds the encoded value, or null for a null value. */
    public static final short SUCCEEDED = 1;
    /** Failed deterministically; the result column holds the encoded failure. */
    public static final short FAILED = 2;

    private static final Field<OffsetDateTime> CLOCK =
            DSL.field("clock_timestamp()", SQLDataType.TIMESTAMPWITHTIMEZONE);
    private static final Field<OffsetDateTime> STATEMENT_TIME =
            DSL.field("statement_timestamp()", SQLDataType.TIMESTAMPWITHTIMEZONE);

    private final String acquireSql;
    private final String completeSql;
    private final String completeAndCommitSql;
    private final String purgeSql;

    public ClaimStatements(String schema) {
        DSLContext render = DSL.using(SQLDialect.POSTGRES, new Settings()
                .withRenderMapping(new RenderMapping()
                        .withSchemata(new MappedSchema().withInput("").withOutput(schema))));
        IdempotencyClaim c = IDEMPOTENCY_CLAIM;

        // the function is PL/pgSQL, fenced from the code generator; its name is all we need
        this.acquireSql = "select claimed, state, fingerprint, result, completed_at from "
                + render.render(DSL.name(schema, "idempotency_acquire")) + "(?, ?, ?, ?, ?, ?, ?)";

        this.completeSql = render.render(render.update(c)
                .set(c.STATE, (Short) null)
                .set(c.RESULT, (byte[]) null)
                .set(c.COMPLETED_AT, CLOCK)
                .where(c.SCOPE.eq((String) null))
                .and(c.IDEM_KEY.eq((String) null)));
        // pgjdbc sends both in one round trip; the Connection.commit() that follows is a no-op
        this.completeAndCommitSql = completeSql + "; commit";

        // expires_at is when a claim made at created_at would expire; the work's duration
        // (completed_at - created_at) is added on top, so the TTL counts from completion
        // statement_timestamp() is stable within the statement, so the index bounds the scan by it;
        // clock_timestamp() is volatile and would make PostgreSQL walk the whole index
        Condition expired = c.EXPIRES_AT.le(STATEMENT_TIME).and(DSL.condition(
                "{0} + (coalesce({1}, {2}) - {2}) <= clock_timestamp()", c.EXPIRES_AT, c.COMPLETED_AT, c.CREATED_AT));
        this.purgeSql = render.render(render.deleteFrom(c)
                .where(DSL.row(c.SCOPE, c.IDEM_KEY).in(
                        DSL.select(c.SCOPE, c.IDEM_KEY).from(c)
                                .where(expired)
                                .orderBy(c.EXPIRES_AT)
                                .limit(DSL.val(0, SQLDataType.INTEGER))
                                .forUpdate().skipLocked()))
                .and(expired));
    }

    /** What {@code idempotency_acquire} reported. */
    public record Claim(boolean claimed, short state, byte[] fingerprint, byte[] result, Instant completedAt) {}

    /**
     * Claims the key for the transaction of {@code tx}, waiting at most {@code waitMs} for a
     * concurrent holder (SQLSTATE 55P03 past that), or reports who holds it.
     */
    public Claim acquire(DSLContext tx, String scope, String key, byte[] fingerprint, long ttlMs, int waitMs,
            short state, byte[] result) {
        Record r = tx.resultQuery(acquireSql,
                        DSL.val(scope, SQLDataType.VARCHAR),
                        DSL.val(key, SQLDataType.VARCHAR),
                        DSL.val(fingerprint, SQLDataType.BLOB),
                        DSL.val(ttlMs, SQLDataType.BIGINT),
                        DSL.val(waitMs, SQLDataType.INTEGER),
                        DSL.val(state, SQLDataType.SMALLINT),
                        bytes(result))
                .fetchOne();
        if (r == null) {
            throw new IllegalStateException("idempotency_acquire returned no row");
        }
        OffsetDateTime completedAt = r.get(4, OffsetDateTime.class);
        return new Claim(
                r.get(0, Boolean.class),
                r.get(1, Short.class),
                r.get(2, byte[].class),
                r.get(3, byte[].class),
                completedAt == null ? null : completedAt.toInstant());
    }

    /**
     * Records the outcome on the claim this transaction holds; with {@code commit}, commits the
     * transaction in the same round trip.
     */
    public void complete(DSLContext tx, String scope, String key, short state, byte[] result, boolean commit) {
        int updated = tx.execute(commit ? completeAndCommitSql : completeSql,
                DSL.val(state, SQLDataType.SMALLINT),
                bytes(result),
                DSL.val(scope, SQLDataType.VARCHAR),
                DSL.val(key, SQLDataType.VARCHAR));
        if (updated != 1) {
            // cannot happen while this transaction holds the row; say so loudly if it ever does
            throw new IllegalStateException("the completion updated " + updated + " claim rows instead of 1");
        }
    }

    /** Deletes up to {@code limit} expired claims that nobody holds; returns how many. */
    public int purge(DSLContext dsl, int limit) {
        return dsl.execute(purgeSql, DSL.val(limit, SQLDataType.INTEGER));
    }

    private static Param<byte[]> bytes(byte[] value) {
        return DSL.val(value, SQLDataType.BLOB);
    }
}
