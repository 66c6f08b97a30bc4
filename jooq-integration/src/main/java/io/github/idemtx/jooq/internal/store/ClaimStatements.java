package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.jooq.internal.flow.Timings;

import static io.github.idemtx.jooq.internal.schema.tables.IdempotencyClaim.IDEMPOTENCY_CLAIM;

import io.github.idemtx.jooq.internal.schema.tables.IdempotencyClaim;
import io.github.idemtx.jooq.internal.schema.tables.records.IdempotencyClaimRecord;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.InsertValuesStep8;
import org.jooq.SQLDialect;
import org.jooq.conf.MappedSchema;
import org.jooq.conf.RenderMapping;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * The claim protocol's statements for one schema (the protocol: docs/claim-protocol.md in this
 * module), rendered once from the generated classes, every value bound, and run as plain JDBC on the
 * connection the call holds (bench/README.md gives what jOOQ's plain-SQL path cost instead).
 * Immutable and thread-safe; not API.
 */
public final class ClaimStatements {

    /** A claim whose work is still running; written only by V1's function (rolling upgrades). */
    public static final short RUNNING = 0;
    /** Completed; the result column holds the encoded value, or null for a null value. */
    public static final short SUCCEEDED = 1;
    /** Failed deterministically; the result column holds the encoded failure. */
    public static final short FAILED = 2;

    private static final String PRIMARY_KEY = "idempotency_claim_pk";

    private static final Field<OffsetDateTime> CLOCK =
            DSL.field("clock_timestamp()", SQLDataType.TIMESTAMPWITHTIMEZONE);
    private static final Field<OffsetDateTime> STATEMENT_TIME =
            DSL.field("statement_timestamp()", SQLDataType.TIMESTAMPWITHTIMEZONE);

    private final String claimSql;
    private final String awaitSql;
    private final String insertAndCommitSql;
    private final String claimByRecordSql;
    private final String rereadSql;
    private final String upsertSql;
    private final String purgeSql;
    private final String schema;

    /** The schema holding the claim table. */
    public String schema() {
        return schema;
    }

    public ClaimStatements(String schema) {
        this.schema = schema;
        DSLContext render = DSL.using(SQLDialect.POSTGRES, new Settings()
                .withRenderMapping(new RenderMapping()
                        .withSchemata(new MappedSchema().withInput("").withOutput(schema))));
        IdempotencyClaim c = IDEMPOTENCY_CLAIM;
        String table = render.render(c);

        // Step 1, sent with BEGIN: the row if it is live (then nothing is locked), else the key's
        // lock without waiting. clock_timestamp() in the subquery's select list keeps it from being
        // flattened, so "live" is computed once.
        // An external effect's row (effect set) answers no call of this door: its fingerprint reads
        // as absent, so the call gets FingerprintMismatch, as the effect door answers a row of ours.
        this.claimSql = Kind.CLAIM.tag + "select r.live, r.state, r.fingerprint, r.result, r.completed_at,"
                + " case when r.live then null else pg_try_advisory_xact_lock(?) end"
                + " from (select c.expires_at > clock_timestamp() as live, c.state,"
                + " case when c.effect is null then c.fingerprint end as fingerprint,"
                + " case when c.fingerprint = ? and c.effect is null then c.result end as result, c.completed_at"
                + " from (select) as one left join " + table + " as c"
                + " on c.scope = ? and c.idem_key = ?) as r";
        // Step 2, only when someone holds the key's lock: wait for the holder, bounded
        this.awaitSql = Kind.AWAIT.tag + "select live, state, fingerprint, result, completed_at, true from "
                + render.render(DSL.name(schema, "idempotency_await")) + "(?, ?, ?, ?, ?)";

        // Step 3: the completed row, written once. The hot path is a plain INSERT with COMMIT in one
        // round trip (pgjdbc sends "...; commit" together; the Connection.commit() that follows is a
        // no-op). An expired row, a failure and a savepoint's record go through the upsert instead
        // (its WHERE lets a live row win, and it reports the completion time); the COMMIT follows
        // on its own.
        InsertValuesStep8<IdempotencyClaimRecord, String, String, byte[], Short, byte[], OffsetDateTime, OffsetDateTime, OffsetDateTime> insert =
                render.insertInto(c)
                .columns(c.SCOPE, c.IDEM_KEY, c.FINGERPRINT, c.STATE, c.RESULT, c.CREATED_AT, c.COMPLETED_AT, c.EXPIRES_AT)
                .values(DSL.val((String) null), DSL.val((String) null), DSL.val((byte[]) null),
                        DSL.val((Short) null), DSL.val((byte[]) null),
                        // created_at: when the claiming transaction began
                        DSL.field("now()", SQLDataType.TIMESTAMPWITHTIMEZONE), CLOCK,
                        DSL.field("clock_timestamp() + ? * interval '1 millisecond'", SQLDataType.TIMESTAMPWITHTIMEZONE,
                                DSL.val((Long) null)));
        this.insertAndCommitSql = Kind.RECORD_AND_COMMIT.tag + render.render(insert) + "; commit";
        // After that insert met the key: ROLLBACK of the aborted transaction and the read of the live
        // row that took it, in one round trip (the SELECT runs on its own, outside any transaction:
        // pgjdbc sends no BEGIN while the transaction is aborted)
        this.rereadSql = Kind.REREAD.tag + "rollback; " + render.render(render
                .select(c.STATE, DSL.when(c.EFFECT.isNull(), c.FINGERPRINT).as("fingerprint"),
                        DSL.when(c.FINGERPRINT.eq(DSL.val((byte[]) null)).and(c.EFFECT.isNull()), c.RESULT).as("result"),
                        c.COMPLETED_AT)
                .from(c)
                .where(c.SCOPE.eq(DSL.val((String) null)))
                .and(c.IDEM_KEY.eq(DSL.val((String) null)))
                .and(c.EXPIRES_AT.gt(CLOCK)));
        // ClaimMode.WORK_FIRST: the same row and COMMIT in one round trip, as the claim itself. The
        // "bound" CTE saves lock_timeout and sets it (transaction-local) to what is left of the call's
        // wait before the row is inserted, so a wait on a concurrent holder's uncommitted row is
        // bounded (55P03 past it); the main query puts the saved value back once the row is in, so
        // the COMMIT's own work (the work's deferred constraints) waits as the caller set it. A failed
        // insert aborts the transaction, whose rollback undoes the setting too. Written out rather
        // than rendered by jOOQ: jOOQ 3.19 (Spring Boot's) and 3.21 render CTEs differently.
        //
        // Like every writer of a claim row (V2's protocol), it takes the key's advisory lock, here
        // without waiting and in the same statement: a READ_FIRST caller working on the key holds it,
        // and its own record must not wait, unbounded, on this row. When the lock is held the row is
        // inserted twice, so the statement fails as a taken key does (unique violation of the primary
        // key, at once: the second row meets the first, which is this statement's own) and nothing
        // commits; the caller then reads the key and waits, bounded, on the lock. A plain SQL way to
        // fail without a PL/pgSQL call on the hot path.
        this.claimByRecordSql = Kind.RECORD_AND_COMMIT.tag
                + "with bound as materialized (select current_setting('lock_timeout') as saved,"
                + " set_config('lock_timeout', ?, true) as waiting, pg_try_advisory_xact_lock(?) as locked),"
                + " claimed as (insert into " + table
                + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                + " select ?, ?, ?, ?, ?, now(), clock_timestamp(), clock_timestamp() + ? * interval '1 millisecond'"
                + " from bound, generate_series(1, case when bound.locked then 1 else 2 end) returning 1)"
                + " select set_config('lock_timeout', bound.saved, true) from bound, claimed; commit";
        IdempotencyClaim excluded = c.as("excluded");
        this.upsertSql = Kind.RECORD.tag + render.render(insert
                .onConflict(c.SCOPE, c.IDEM_KEY)
                .doUpdate()
                .set(c.FINGERPRINT, excluded.FINGERPRINT)
                .set(c.STATE, excluded.STATE)
                .set(c.RESULT, excluded.RESULT)
                .set(c.CREATED_AT, excluded.CREATED_AT)
                .set(c.COMPLETED_AT, excluded.COMPLETED_AT)
                .set(c.EXPIRES_AT, excluded.EXPIRES_AT)
                // an expired row of an external effect becomes this door's: none of its columns stay
                // (inline nulls: the statement's parameters are bound by position, the row's alone)
                .set(c.EFFECT, DSL.inline(null, c.EFFECT))
                .set(c.REQUEST, DSL.inline(null, c.REQUEST))
                .set(c.FENCE, DSL.inline(null, c.FENCE))
                .set(c.LEASE_UNTIL, DSL.inline(null, c.LEASE_UNTIL))
                .set(c.LOOKUPS, DSL.inline(null, c.LOOKUPS))
                .set(c.NEXT_LOOKUP_AT, DSL.inline(null, c.NEXT_LOOKUP_AT))
                .where(c.EXPIRES_AT.le(CLOCK))
                .returning(c.COMPLETED_AT));

        // statement_timestamp() is stable within the statement, so the index bounds the scan by it;
        // rows that expire while the statement runs are left for the next call
        this.purgeSql = Kind.PURGE.tag + render.render(render.deleteFrom(c)
                .where(DSL.row(c.SCOPE, c.IDEM_KEY).in(
                        DSL.select(c.SCOPE, c.IDEM_KEY).from(c)
                                .where(c.EXPIRES_AT.le(STATEMENT_TIME))
                                .orderBy(c.EXPIRES_AT)
                                .limit(DSL.val(0, SQLDataType.INTEGER))
                                .forUpdate().skipLocked()))
                .and(c.EXPIRES_AT.le(STATEMENT_TIME)));
    }

    /**
     * Which protocol statement a SQL text is. Every statement this class sends starts with its kind's
     * tag, a comment such as {@code /* idemtx:claim *}{@code /}, which PostgreSQL ignores and which shows
     * in {@code pg_stat_activity}, {@code pg_stat_statements} and the server log, so an operator can tell
     * the library's statements apart; {@link #of} reads it back (the tests' fault hooks use it).
     */
    public enum Kind {
        /** Step 1, sent with BEGIN: reads the key, tries its lock. */
        CLAIM("claim"),
        /** Step 2: waits, bounded, for the key's holder. */
        AWAIT("await"),
        /**
         * Step 3 for a fresh key: the plain INSERT, sent together with COMMIT; in
         * {@link io.github.idemtx.jooq.ClaimMode#WORK_FIRST} the same insert (with its wait bound) is the claim.
         */
        RECORD_AND_COMMIT("record+commit"),
        /** Step 3 otherwise: the upsert (expired row, failure, savepoint, a caller's transaction). */
        RECORD("record"),
        /** {@code purgeExpired}: deletes a batch of expired rows. */
        PURGE("purge"),
        /** External effect: the claim committed in flight (insert, or takeover of an expired row). */
        EFFECT_CLAIM("effect-claim"),
        /** External effect: reads the key's row. */
        EFFECT_READ("effect-read"),
        /** External effect: takes over an in-flight claim whose lease has passed. */
        EFFECT_TAKEOVER("effect-takeover"),
        /** External effect: the fenced record of the outcome (or an operator's resolution). */
        EFFECT_RECORD("effect-record"),
        /** External effect: ends the lease of a claim whose outcome is unknown. */
        EFFECT_RELEASE("effect-release"),
        /** External effect: the recoverer's batch, and the lists of unsettled claims. */
        EFFECT_SCAN("effect-scan"),
        /**
         * {@link io.github.idemtx.jooq.ClaimMode#WORK_FIRST} after its insert met the key: the
         * rollback and the read of the live row, sent together.
         */
        REREAD("reread");

        private static final String PREFIX = "/* idemtx:";

        private final String tag;

        Kind(String name) {
            this.tag = PREFIX + name + " */ ";
        }

        /** The comment every statement of this kind starts with, e.g. {@code "/* idemtx:claim *}{@code / "}. */
        public String tag() {
            return tag;
        }

        /** The kind of {@code sql}, or null when it is not one of the library's statements. */
        public static Kind of(String sql) {
            if (sql == null || !sql.startsWith(PREFIX)) {
                return null;
            }
            for (Kind kind : values()) {
                if (sql.startsWith(kind.tag)) {
                    return kind;
                }
            }
            return null;
        }
    }

    /** What the claim found: the key is held by this transaction, answered by a live row, or neither. */
    public sealed interface Claim {

        /**
         * This transaction holds the key: run the work, then {@link #record} the outcome.
         *
         * @param expired an expired row is there, which {@link #record} takes over
         */
        record Held(boolean expired) implements Claim {

            /**
             * Whether {@link #record} can send the COMMIT with the row: for a fresh key (a plain
             * INSERT), not for an expired row (an upsert, whose outcome must be read before committing).
             */
            public boolean recordCarriesCommit() {
                return !expired;
            }
        }

        /**
         * A live row answers the key.
         *
         * @param state {@link #SUCCEEDED} or {@link #FAILED} (or {@link #RUNNING}, a V1 caller's row)
         * @param result the stored result; null unless the fingerprints match
         */
        record Answered(short state, byte[] fingerprint, byte[] result, Instant completedAt) implements Claim {}

        /** Another call held the key for the whole wait this call had left (SQLSTATE 55P03). */
        record TimedOut() implements Claim {}

        /**
         * The holder this call waited on ended after this transaction's snapshot was taken
         * (REPEATABLE READ, SERIALIZABLE): nothing is known; start a new transaction and claim again.
         * Not a conflict of the work's: it consumes no attempt.
         *
         * @param cause the server's serialization failure (SQLSTATE 40001)
         */
        record Superseded(SQLException cause) implements Claim {}
    }

    /**
     * Claims the key for the transaction open on {@code connection}, or reports the live row that
     * answers it, waiting at most {@code waitMs} (0: not at all) for a concurrent holder. After a
     * {@link Claim.TimedOut} or a {@link Claim.Superseded} the transaction (or savepoint) is aborted
     * and must be rolled back.
     *
     * @throws SQLException as the driver reports it
     */
    /** @param timings told how long the wait for a holder took, or null */
    public Claim claim(Connection connection, String scope, String key, byte[] fingerprint, int waitMs, Timings timings)
            throws SQLException {
        long lockId = lockId(scope, key);
        try (PreparedStatement ps = connection.prepareStatement(claimSql)) {
            ps.setLong(1, lockId);
            ps.setBytes(2, fingerprint);
            ps.setString(3, scope);
            ps.setString(4, key);
            try (ResultSet rs = ps.executeQuery()) {
                Claim claim = read(rs, "the claim statement");
                if (claim != null) {
                    return claim;
                }
            }
        }
        long waitStart = timings == null ? 0 : System.nanoTime();
        try (PreparedStatement ps = connection.prepareStatement(awaitSql)) {
            ps.setString(1, scope);
            ps.setString(2, key);
            ps.setLong(3, lockId);
            ps.setBytes(4, fingerprint);
            ps.setInt(5, Math.max(0, waitMs));
            try (ResultSet rs = ps.executeQuery()) {
                Claim claim = read(rs, "idempotency_await");
                if (claim == null) {
                    throw new SQLException("idempotency_await returned without the key's lock or a live row");
                }
                return claim;
            }
        } catch (SQLException e) {
            if (SqlStates.isConnectionLoss(e)) {
                throw e; // e.g. 55P03 followed by the backend's termination: nothing more can run on it
            }
            if (SqlStates.LOCK_NOT_AVAILABLE.equals(e.getSQLState()) || SqlStates.isStatementTimeout(e)) {
                // the statement does nothing but wait for the holder: the call's bound, or the pool's
                // statement_timeout if that is shorter, ran out while the holder still held the key
                return new Claim.TimedOut();
            }
            if (SqlStates.SERIALIZATION_FAILURE.equals(e.getSQLState())) {
                return new Claim.Superseded(e);
            }
            throw e;
        } finally {
            if (timings != null) {
                long waited = System.nanoTime() - waitStart;
                timings.waiting(waited);
                timings.claiming(-waited); // the caller counts the whole claim step; the wait is not claiming
            }
        }
    }

    /** The claim in the row of {@code rs}; null when the key's lock is held by someone else. */
    private static Claim read(ResultSet rs, String what) throws SQLException {
        if (!rs.next()) {
            throw new SQLException(what + " returned no row");
        }
        boolean live = rs.getBoolean(1);
        boolean absent = rs.wasNull();
        if (live) {
            OffsetDateTime completedAt = rs.getObject(5, OffsetDateTime.class);
            // a negative state is a row this same transaction recorded joined, before its commit
            return new Claim.Answered((short) Math.abs(rs.getShort(2)), rs.getBytes(3), rs.getBytes(4),
                    completedAt == null ? null : completedAt.toInstant());
        }
        if (!rs.getBoolean(6)) {
            return null;
        }
        return new Claim.Held(!absent);
    }

    /**
     * Writes the completed claim that {@code claim} holds. With {@code commit} and no expired row to
     * replace, commits the transaction in the same round trip and returns null; otherwise returns
     * the recorded completion time and leaves the transaction open. {@code joined}: the row is
     * written in a caller's transaction, with its state negated, so that the V3 trigger counts its
     * expiry from the caller's commit. If another call committed the
     * key after this one read it (possible in a narrow race, or under REPEATABLE READ), it fails
     * with SQLSTATE 40001 and nothing commits: the unit is retried, and replays.
     *
     * @throws SQLException as the driver reports it
     */
    public Instant record(Connection connection, Claim.Held claim, String scope, String key, byte[] fingerprint,
            short state, byte[] result, long ttlMs, boolean commit, boolean joined) throws SQLException {
        if (joined) {
            state = (short) -state;
        }
        if (commit && claim.recordCarriesCommit()) {
            try (PreparedStatement ps = connection.prepareStatement(insertAndCommitSql)) {
                bind(ps, 1, scope, key, fingerprint, state, result, ttlMs);
                ps.executeUpdate();
                return null;
            } catch (SQLException e) {
                throw isDuplicateClaim(e) && !SqlStates.isConnectionLoss(e) ? committedFirst(e) : e;
            }
        }
        try (PreparedStatement ps = connection.prepareStatement(upsertSql)) {
            bind(ps, 1, scope, key, fingerprint, state, result, ttlMs);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw committedFirst(null);
                }
                return rs.getObject(1, OffsetDateTime.class).toInstant();
            }
        }
    }

    /** What {@link #claimByRecord} found. */
    public enum RecordedFirst {
        /** The row is in and the transaction committed, in the one round trip. */
        COMMITTED,
        /** A row with the key is there (committed, live or expired): nothing committed, roll back and read it. */
        TAKEN,
        /** A concurrent holder's row stayed uncommitted for the whole wait left (SQLSTATE 55P03): roll back. */
        TIMED_OUT
    }

    /**
     * {@link io.github.idemtx.jooq.ClaimMode#WORK_FIRST}: inserts the completed row of a key nobody
     * was seen to hold, together with COMMIT, after the work ran in the transaction open on
     * {@code connection}; the insert is the claim. Waits at most {@code waitMs} (at least 1 ms) on a
     * concurrent holder's uncommitted row. After {@code TAKEN} or {@code TIMED_OUT} the transaction
     * is aborted and must be rolled back.
     *
     * @throws SQLException as the driver reports it (a lost connection: the commit's outcome is unknown)
     */
    public RecordedFirst claimByRecord(Connection connection, String scope, String key, byte[] fingerprint, byte[] result,
            long ttlMs, int waitMs) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(claimByRecordSql)) {
            ps.setString(1, Math.max(1, waitMs) + "ms"); // 0 would mean no bound at all
            ps.setLong(2, lockId(scope, key));
            bind(ps, 3, scope, key, fingerprint, SUCCEEDED, result, ttlMs);
            ps.execute(); // the restore's row, then the COMMIT
            return RecordedFirst.COMMITTED;
        } catch (SQLException e) {
            if (SqlStates.isConnectionLoss(e)) {
                throw e; // even after the insert's own error (its next exception): nothing more can run on it
            }
            if (isDuplicateClaim(e)) {
                return RecordedFirst.TAKEN;
            }
            if (SqlStates.isWaitOnClaimRow(e)) {
                return RecordedFirst.TIMED_OUT;
            }
            throw e; // e.g. 55P03 of the COMMIT's deferred constraint checks: the caller's own wait, not a holder's
        }
    }

    /**
     * After {@link #claimByRecord} answered {@code TAKEN}: rolls the aborted transaction back and
     * reads the live row with the key, in one round trip, leaving no transaction open. Null when no
     * live row is there (it expired, or a purge or a rollback removed it): claim the key then.
     *
     * @throws SQLException as the driver reports it
     */
    public Claim.Answered rollbackAndRead(Connection connection, String scope, String key, byte[] fingerprint)
            throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(rereadSql)) {
            ps.setBytes(1, fingerprint);
            ps.setString(2, scope);
            ps.setString(3, key);
            boolean isResult = ps.execute();
            while (!isResult && ps.getUpdateCount() != -1) {
                isResult = ps.getMoreResults(); // past the ROLLBACK's update count
            }
            if (!isResult) {
                throw new SQLException("the read after the rollback returned no result");
            }
            try (ResultSet rs = ps.getResultSet()) {
                if (!rs.next()) {
                    return null;
                }
                OffsetDateTime completedAt = rs.getObject(4, OffsetDateTime.class);
                return new Claim.Answered((short) Math.abs(rs.getShort(1)), rs.getBytes(2), rs.getBytes(3),
                        completedAt == null ? null : completedAt.toInstant());
            }
        }
    }

    /** Binds the row's values from parameter {@code first} on, in the claim table's column order. */
    private static void bind(PreparedStatement ps, int first, String scope, String key, byte[] fingerprint, short state,
            byte[] result, long ttlMs) throws SQLException {
        ps.setString(first, scope);
        ps.setString(first + 1, key);
        ps.setBytes(first + 2, fingerprint);
        ps.setShort(first + 3, state);
        ps.setBytes(first + 4, result);
        ps.setLong(first + 5, ttlMs);
    }

    private static SQLException committedFirst(SQLException cause) {
        return new SQLException("another call with this idempotency key committed first; retry",
                SqlStates.SERIALIZATION_FAILURE, cause);
    }

    /**
     * Deletes up to {@code limit} expired claims in the transaction open on {@code connection},
     * skipping rows another transaction has locked; returns how many.
     *
     * @throws SQLException as the driver reports it
     */
    public int purge(Connection connection, int limit) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(purgeSql)) {
            ps.setInt(1, limit);
            return ps.executeUpdate();
        }
    }

    /**
     * The id of the transaction-level advisory lock that stands for (scope, key): the first 8 bytes
     * (big-endian) of SHA-256 over the UTF-8 scope, a 0 byte and the UTF-8 key. A collision only
     * costs a needless wait; a cryptographic hash keeps clients from aiming at others' keys.
     */
    public static long lockId(String scope, String key) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
        sha.update(scope.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
        byte[] digest = sha.digest(key.getBytes(StandardCharsets.UTF_8));
        long id = 0;
        for (int i = 0; i < 8; i++) {
            id = (id << 8) | (digest[i] & 0xff);
        }
        return id;
    }

    private static boolean isDuplicateClaim(SQLException e) {
        if (!SqlStates.UNIQUE_VIOLATION.equals(e.getSQLState())) {
            return false;
        }
        if (e instanceof PSQLException p && p.getServerErrorMessage() != null) {
            ServerErrorMessage m = p.getServerErrorMessage();
            return PRIMARY_KEY.equals(m.getConstraint());
        }
        return String.valueOf(e.getMessage()).contains(PRIMARY_KEY);
    }
}
