package io.github.idemtx.jooq.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import org.jspecify.annotations.Nullable;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * The claim protocol's statements for one schema (the protocol: docs/claim-protocol.md in this
 * module), written over {@link ClaimTable}'s names, every value bound, and run as plain JDBC on the
 * connection the call holds (bench/README.md gives what jOOQ's plain-SQL path cost instead).
 * Immutable and thread-safe; not API.
 */
public final class ClaimStatements {

    private static final String PRIMARY_KEY = "idempotency_claim_pk";

    /** The completed row's columns and values, parameters in {@link #bind}'s order; the claim began with the transaction. */
    private static final String ROW_COLUMNS =
            "({scope}, {idem_key}, {fingerprint}, {state}, {result}, {created_at}," + " {completed_at}, {expires_at})";

    private static final String ROW_VALUES =
            "?, ?, ?, ?, ?, now(), clock_timestamp(), clock_timestamp() + ? * interval '1 millisecond'";
    /** Of a row the key's caller may see: an effect's row answers no call of this door (its fingerprint reads as absent). */
    private static final String ANSWER_COLUMNS =
            "c.{state}, case when c.{effect} is null then c.{fingerprint} end as fingerprint,"
                    + " case when c.{fingerprint} = ? and c.{effect} is null then c.{result} end as result, c.{completed_at}";

    private final String claimSql;
    private final String awaitSql;
    private final String insertAndCommitSql;
    private final String claimByRecordSql;
    private final String rereadSql;
    private final String upsertSql;
    private final String purgeSql;
    private final String claimsName;
    private final String schema;

    /** The schema holding the claim table. */
    public String schema() {
        return schema;
    }

    public ClaimStatements(ClaimTable t) {
        this.claimsName = t.claims();
        this.schema = t.schema();
        // Step 1, sent with BEGIN: the row if it is live (then nothing is locked), else the key's
        // lock without waiting. clock_timestamp() in the subquery's select list keeps it from being
        // flattened, so "live" is computed once.
        // An external effect's row (effect set) answers no call of this door: its fingerprint reads
        // as absent, so the call gets FingerprintMismatch, as the effect door answers a row of ours.
        this.claimSql = t.sql(StatementKind.CLAIM, """
                select r.live, r.state, r.fingerprint, r.result, r.completed_at,
                  case when r.live then null else pg_try_advisory_xact_lock(?) end
                from (select c.{expires_at} > clock_timestamp() as live, %s
                      from (select) as one left join {claims} as c on c.{scope} = ? and c.{idem_key} = ?) as r
                """.formatted(ANSWER_COLUMNS));
        // Step 2, only when someone holds the key's lock: wait for the holder, bounded
        this.awaitSql = t.sql(
                StatementKind.AWAIT,
                "select live, state, fingerprint, result, completed_at, true from {await}(?, ?, ?, ?, ?)");

        // Step 3: the completed row, written once. The hot path is a plain INSERT with COMMIT in one
        // round trip (pgjdbc sends "...; commit" together; the Connection.commit() that follows is a
        // no-op). An expired row, a failure and a savepoint's record go through the upsert instead
        // (its WHERE lets a live row win, and it reports the completion time); the COMMIT follows
        // on its own.
        this.insertAndCommitSql = t.sql(
                StatementKind.RECORD_AND_COMMIT,
                "insert into {claims} " + ROW_COLUMNS + " values (" + ROW_VALUES + "); commit");
        // After that insert met the key: ROLLBACK of the aborted transaction and the read of the live
        // row that took it, in one round trip (the SELECT runs on its own, outside any transaction:
        // pgjdbc sends no BEGIN while the transaction is aborted)
        this.rereadSql = t.sql(
                StatementKind.REREAD,
                "rollback; select " + ANSWER_COLUMNS
                        + " from {claims} as c where c.{scope} = ? and c.{idem_key} = ? and c.{expires_at} > clock_timestamp()");
        // ClaimMode.WORK_FIRST: the same row and COMMIT in one round trip, as the claim itself.
        //
        // Like every writer of this door's claim rows (V2's protocol), it takes the key's advisory
        // lock, here without waiting and in the same statement. Whoever holds the lock may hold an
        // uncommitted row of the key (a joined call's, inside its caller's transaction, for as long
        // as that transaction runs), so the row is only inserted with the lock: when it is held the
        // one-time filter evaluates a scalar subquery of two rows, the statement fails at once
        // (SQLSTATE 21000, before the insert touches the index, so it never waits on that row) and
        // nothing commits; the caller then reads the key and waits on the lock, bounded by the call's
        // duplicateWait. A plain SQL way to fail without a PL/pgSQL call on the hot path, and without
        // setting lock_timeout around the insert (saving and restoring it cost a third of the
        // statement's server time). With the lock taken, a row of the key can only be uncommitted in
        // a transaction that writes it without the lock: an external effect's claim or record of the
        // same key (which answers this door FingerprintMismatch), an operator's action, the purge, or
        // an instance of the first schema version during a rolling upgrade; the insert waits for that
        // transaction (within the session's own lock_timeout and statement_timeout), then meets its row.
        this.claimByRecordSql = t.sql(StatementKind.RECORD_AND_COMMIT, """
                insert into {claims} %s select %s
                where case when pg_try_advisory_xact_lock(?) then true else (select true union all select true) end;
                commit
                """.formatted(ROW_COLUMNS, ROW_VALUES));
        // an expired row (of either door) becomes this door's completed row: none of an effect's columns stay
        this.upsertSql = t.sql(StatementKind.RECORD, """
                insert into {claims} as c %s values (%s)
                on conflict ({scope}, {idem_key}) do update set {fingerprint} = excluded.{fingerprint},
                  {state} = excluded.{state}, {result} = excluded.{result}, {created_at} = excluded.{created_at},
                  {completed_at} = excluded.{completed_at}, {expires_at} = excluded.{expires_at}, {effect} = null, %s
                where c.{expires_at} <= clock_timestamp()
                returning c.{completed_at}
                """.formatted(ROW_COLUMNS, ROW_VALUES, ClaimTable.NO_EFFECT));

        // statement_timestamp() is stable within the statement, so the index bounds the scan by it;
        // rows that expire while the statement runs are left for the next call
        this.purgeSql = t.sql(StatementKind.PURGE, """
                delete from {claims} where ({scope}, {idem_key}) in (
                  select {scope}, {idem_key} from {claims} where {expires_at} <= statement_timestamp()
                  order by {expires_at} limit ? for update skip locked)
                and {expires_at} <= statement_timestamp()
                """);
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
         * @param row its state ({@code SUCCEEDED} or {@code FAILED}, or {@code RUNNING}, a V1 caller's),
         *     fingerprint, completion time and result (null unless the fingerprints match)
         */
        record Answered(ClaimRow row) implements Claim {}

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
     * Step 1: claims the key for the transaction open on {@code connection} if nobody holds it, or
     * reports the live row that answers it; null when another transaction holds the key: then
     * {@link #await} it.
     *
     * @throws SQLException as the driver reports it
     */
    public @Nullable Claim claim(Connection connection, String scope, String key, byte[] fingerprint)
            throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(claimSql)) {
            ps.setLong(1, Digests.lockId(scope, key));
            ps.setBytes(2, fingerprint);
            ps.setString(3, scope);
            ps.setString(4, key);
            try (ResultSet rs = ps.executeQuery()) {
                return read(rs, "the claim statement");
            }
        }
    }

    /**
     * Step 2: waits at most {@code waitMs} (0: not at all) for the key's holder, then claims the key
     * or reports the live row that answers it. After a {@link Claim.TimedOut} or a
     * {@link Claim.Superseded} the transaction (or savepoint) is aborted and must be rolled back.
     *
     * @throws SQLException as the driver reports it
     */
    public Claim await(Connection connection, String scope, String key, byte[] fingerprint, int waitMs)
            throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(awaitSql)) {
            ps.setString(1, scope);
            ps.setString(2, key);
            ps.setLong(3, Digests.lockId(scope, key));
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
        }
    }

    /** The claim in the row of {@code rs}; null when the key's lock is held by someone else. */
    private static @Nullable Claim read(ResultSet rs, String what) throws SQLException {
        if (!rs.next()) {
            throw new SQLException(what + " returned no row");
        }
        boolean live = rs.getBoolean(1);
        boolean absent = rs.wasNull();
        if (live) {
            return answered(rs, 2);
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
     * @throws SQLException as the driver reports it; with {@code commit}, a connection lost in flight marked by
     *     {@link SqlStates#inCommit}
     */
    public @Nullable Instant record(
            Connection connection,
            Claim.Held claim,
            String scope,
            String key,
            byte[] fingerprint,
            ClaimState outcome,
            byte @Nullable [] result,
            long ttlMs,
            boolean commit,
            boolean joined)
            throws SQLException {
        short state = joined ? outcome.joinedCode() : outcome.code();
        if (commit && claim.recordCarriesCommit()) {
            try (PreparedStatement ps = connection.prepareStatement(insertAndCommitSql)) {
                bind(ps, 1, scope, key, fingerprint, state, result, ttlMs);
                ps.executeUpdate();
                SqlStates.requireReplicated(ps.getWarnings());
                return null;
            } catch (SQLException e) {
                throw isDuplicateClaim(e) && !SqlStates.isConnectionLoss(e) ? committedFirst(e) : SqlStates.inCommit(e);
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
     * {@code connection}; the insert is the claim. {@code TAKEN} when a row with the key is there or
     * another transaction holds the key's lock; {@code TIMED_OUT} when the session's own
     * {@code lock_timeout} or {@code statement_timeout} ended a wait on a row written without the
     * lock (see the statement). After either the transaction is aborted and must be rolled back.
     *
     * @throws SQLException as the driver reports it; a connection lost in flight marked by {@link SqlStates#inCommit}
     */
    public RecordedFirst claimByRecord(
            Connection connection, String scope, String key, byte[] fingerprint, byte @Nullable [] result, long ttlMs)
            throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(claimByRecordSql)) {
            bind(ps, 1, scope, key, fingerprint, ClaimState.SUCCEEDED.code(), result, ttlMs);
            ps.setLong(7, Digests.lockId(scope, key));
            ps.executeUpdate(); // the insert, then the COMMIT
            SqlStates.requireReplicated(ps.getWarnings());
            return RecordedFirst.COMMITTED;
        } catch (SQLException e) {
            if (SqlStates.isConnectionLoss(e)) {
                // even after the insert's own error (its next exception): nothing more can run on it
                throw SqlStates.inCommit(e);
            }
            if (isDuplicateClaim(e) || SqlStates.isRefusedByStatement(e)) {
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
    public Claim.@Nullable Answered rollbackAndRead(Connection connection, String scope, String key, byte[] fingerprint)
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
                return answered(rs, 1);
            }
        }
    }

    /**
     * The live row whose {@link #ANSWER_COLUMNS} (state, fingerprint, result, completion time) start
     * at column {@code first} of {@code rs}. A negative state is a row this same transaction recorded
     * joined, before its commit: {@link ClaimState#of} reads it as its state.
     */
    private static Claim.Answered answered(ResultSet rs, int first) throws SQLException {
        OffsetDateTime completedAt = rs.getObject(first + 3, OffsetDateTime.class);
        return new Claim.Answered(ClaimRow.answer(
                ClaimState.of(rs.getShort(first)),
                rs.getBytes(first + 1),
                rs.getBytes(first + 2),
                completedAt == null ? null : completedAt.toInstant()));
    }

    /** Binds the row's values from parameter {@code first} on, in the claim table's column order. */
    private static void bind(
            PreparedStatement ps,
            int first,
            String scope,
            String key,
            byte[] fingerprint,
            short state,
            byte @Nullable [] result,
            long ttlMs)
            throws SQLException {
        ps.setString(first, scope);
        ps.setString(first + 1, key);
        ps.setBytes(first + 2, fingerprint);
        ps.setShort(first + 3, state);
        ps.setBytes(first + 4, result);
        ps.setLong(first + 5, ttlMs);
    }

    private static SQLException committedFirst(@Nullable SQLException cause) {
        return new SQLException(
                "another call with this idempotency key committed first; retry",
                SqlStates.SERIALIZATION_FAILURE,
                cause);
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
     * {@link #purge} aimed at one partition of the claim table, {@code table} (qualified): on a
     * partitioned table the statement on the parent can read every expired row of every partition
     * to find its batch (docs/scaling.md).
     *
     * @throws SQLException as the driver reports it
     */
    public int purgeIn(Connection connection, String table, int limit) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(purgeSql.replace(claimsName, table))) {
            ps.setInt(1, limit);
            return ps.executeUpdate();
        }
    }

    private static boolean isDuplicateClaim(SQLException e) {
        if (!SqlStates.UNIQUE_VIOLATION.equals(e.getSQLState())) {
            return false;
        }
        if (e instanceof PSQLException p && p.getServerErrorMessage() != null) {
            ServerErrorMessage m = p.getServerErrorMessage();
            String constraint = m.getConstraint();
            // on the table partitioned by key day each partition's key is named idempotency_claim_pk_<day>
            return constraint != null && (constraint.equals(PRIMARY_KEY) || constraint.startsWith(PRIMARY_KEY + "_"));
        }
        return String.valueOf(e.getMessage()).contains(PRIMARY_KEY);
    }
}
