package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The statements of the external-effect protocol (docs/claim-protocol.md, "External effects") for
 * one schema, written over {@link ClaimTable}'s names as {@link ClaimStatements} are: the claim
 * committed IN FLIGHT with a lease and a fencing token, the fenced record, the takeover of an
 * expired lease, the recoverer's batch and the reconciliation list. Plain JDBC on the connection the
 * unit holds; immutable and thread-safe.
 */
public final class EffectStatements {

    /** The outcome's state, result and TTL, then scope and key: how every settling statement begins ({@link #bindOutcome}). */
    private static final String SETTLE = "{state} = ?, {result} = ?, {completed_at} = clock_timestamp(),"
            + " {expires_at} = clock_timestamp() + ? * interval '1 millisecond',"
            + " {request} = null, {lease_until} = null, {next_lookup_at} = null";
    /** A claim is its fence and its start together ({@link #at}). */
    private static final String THIS_CLAIM =
            "{scope} = ? and {idem_key} = ? and {state} = {IN_FLIGHT} and {fence} = ?" + " and {created_at} = ?";

    private final String claimSql;
    private final String claimAndCommitSql;
    private final String readSql;
    private final String takeOverSql;
    private final String recordSql;
    private final String recordAndCommitSql;
    private final String recordLateSql;
    private final String failSql;
    private final String releaseSql;
    private final String scanSql;
    private final String unsettledSql;
    private final String resolveSql;
    private final String renewSql;
    private final String leaseFromCommitSql;

    private final String schema;

    /** The schema holding the claim table. */
    public String schema() {
        return schema;
    }

    public EffectStatements(ClaimTable t) {
        this.schema = t.schema();
        // The "bound" CTE saves lock_timeout and sets it (transaction-local) to what is left of the
        // call's wait before the row is inserted, so a wait on a holder whose claim is not committed
        // yet (its before() still running) ends at the policy's bound (55P03); the main query puts the
        // saved value back once the row is in, so before() waits as the caller set it. With no row
        // (a live one is there) nothing is restored, but then nothing else waits in this transaction
        // (a read, then COMMIT), and the transaction's end drops the setting anyway.
        this.claimSql = t.sql(StatementKind.EFFECT_CLAIM, """
                with bound as materialized (select current_setting('lock_timeout') as saved,
                    set_config('lock_timeout', ?, true) as waiting),
                  claimed as (insert into {claims} as c ({scope}, {idem_key}, {fingerprint}, {state}, {created_at},
                      {expires_at}, {effect}, {request}, {fence}, {lease_until}, {lookups})
                    select ?, ?, ?, {IN_FLIGHT}, now(), 'infinity', ?, ?, 1,
                      clock_timestamp() + ? * interval '1 millisecond', 0 from bound
                    on conflict ({scope}, {idem_key}) do update set {fingerprint} = excluded.{fingerprint},
                      {state} = {IN_FLIGHT}, {result} = null, {created_at} = excluded.{created_at}, {completed_at} = null,
                      {expires_at} = 'infinity', {effect} = excluded.{effect}, {request} = excluded.{request},
                      {fence} = coalesce(c.{fence}, 0) + 1, {lease_until} = excluded.{lease_until}, {lookups} = 0,
                      {next_lookup_at} = null
                    where c.{expires_at} <= clock_timestamp()
                    returning c.{fence}, c.{created_at})
                select claimed.{fence}, claimed.{created_at}, set_config('lock_timeout', bound.saved, true)
                from bound, claimed
                """);
        // when the caller has no local writes to commit with the claim, its COMMIT rides along
        this.claimAndCommitSql = claimSql + "; commit";
        this.readSql = t.sql(StatementKind.EFFECT_READ, """
                select {state}, {fingerprint}, {result}, {completed_at}, {fence},
                  coalesce({lease_until} <= clock_timestamp(), false), {request}, {lookups}, {effect}, {created_at}
                from {claims} where {scope} = ? and {idem_key} = ? and {expires_at} > clock_timestamp()
                """);
        this.takeOverSql = t.sql(StatementKind.EFFECT_TAKEOVER, """
                update {claims} set {fence} = {fence} + 1, {lease_until} = clock_timestamp() + ? * interval '1 millisecond'
                where %s and {lease_until} <= clock_timestamp()
                returning {fence}
                """.formatted(THIS_CLAIM));
        this.recordSql = t.sql(
                StatementKind.EFFECT_RECORD,
                "update {claims} set " + SETTLE + " where " + THIS_CLAIM + " returning {completed_at}");
        // the same sent after the local writes, with the COMMIT: when the fence is lost the
        // statement fails (a scalar subquery of two rows, 21000 with no context) so that nothing of
        // the transaction commits, the local writes included
        this.recordAndCommitSql = t.sql(StatementKind.EFFECT_RECORD, """
                with recorded as (update {claims} set %s where %s returning {completed_at})
                select (select {completed_at} from recorded
                  union all select null from (values (1), (2)) as fence_lost (n) where not exists (select from recorded));
                commit
                """.formatted(SETTLE, THIS_CLAIM));
        // a definite answer whose holder lost its fence: kept while this claim (its start) is not
        // settled, by whoever holds it now; the unsettled states under the row lock let one record win
        this.recordLateSql = t.sql(StatementKind.EFFECT_RECORD, """
                update {claims} set %s
                where {scope} = ? and {idem_key} = ? and {state} in ({IN_FLIGHT}, {NEEDS_RECONCILIATION})
                  and {created_at} = ?
                returning {completed_at}
                """.formatted(SETTLE));
        // a refusal before the remote call (a Rejection of the local writes), on a fresh or expired key
        this.failSql = t.sql(StatementKind.EFFECT_RECORD, """
                insert into {claims} as c ({scope}, {idem_key}, {fingerprint}, {state}, {result}, {created_at},
                  {completed_at}, {expires_at}, {effect})
                values (?, ?, ?, {FAILED}, ?, now(), clock_timestamp(), clock_timestamp() + ? * interval '1 millisecond', ?)
                on conflict ({scope}, {idem_key}) do update set {fingerprint} = excluded.{fingerprint}, {state} = {FAILED},
                  {result} = excluded.{result}, {created_at} = excluded.{created_at},
                  {completed_at} = excluded.{completed_at}, {expires_at} = excluded.{expires_at},
                  {effect} = excluded.{effect}, %s
                where c.{expires_at} <= clock_timestamp()
                returning c.{completed_at}
                """.formatted(ClaimTable.NO_EFFECT));
        // unknown: the lease ends now so that a retry or the recoverer can look it up; the
        // recoverer also counts the lookup and schedules the next, or hands it to reconciliation
        this.releaseSql = t.sql(StatementKind.EFFECT_RELEASE, """
                update {claims} set {state} = ?, {lease_until} = clock_timestamp(), {lookups} = {lookups} + ?,
                  {next_lookup_at} = case when ? is null then {next_lookup_at}
                    else clock_timestamp() + ? * interval '1 millisecond' end,
                  {completed_at} = case when ? = {NEEDS_RECONCILIATION} then clock_timestamp() else {completed_at} end
                where %s
                """.formatted(THIS_CLAIM));
        this.scanSql = t.sql(StatementKind.EFFECT_SCAN, """
                update {claims} as c set {fence} = c.{fence} + 1,
                  {lease_until} = clock_timestamp() + ? * interval '1 millisecond'
                from (select {scope}, {idem_key} from {claims} where {effect} = ? and {state} = {IN_FLIGHT}
                      and {lease_until} <= clock_timestamp()
                      and ({next_lookup_at} is null or {next_lookup_at} <= clock_timestamp())
                      order by {lease_until} limit ? for update skip locked) as stuck
                where c.{scope} = stuck.{scope} and c.{idem_key} = stuck.{idem_key}
                returning c.{scope}, c.{idem_key}, c.{request}, c.{fence}, c.{lookups}, c.{created_at}
                """);
        this.unsettledSql = t.sql(StatementKind.EFFECT_SCAN, """
                select {scope}, {idem_key}, {state}, {request}, {fence}, {lookups}, {completed_at}, {lease_until},
                  {next_lookup_at}, {created_at}
                from {claims} where {effect} = ? and {state} = ? order by {scope}, {idem_key} limit ?
                """);
        // the request is cleared as the holder's record clears it; RETURNING gives new values, so the
        // request the local writes need comes from the locked row as it was
        this.resolveSql = t.sql(StatementKind.EFFECT_RECORD, """
                update {claims} as c set %s
                from (select {scope}, {idem_key}, {request} from {claims}
                      where {scope} = ? and {idem_key} = ? and {effect} = ? and {state} = {NEEDS_RECONCILIATION}
                      for update) as old
                where c.{scope} = old.{scope} and c.{idem_key} = old.{idem_key} and c.{state} = {NEEDS_RECONCILIATION}
                returning old.{request}, c.{created_at}
                """.formatted(SETTLE));
        // the holder's lease, renewed just before a remote call or a recoverer's settling: what is
        // left of it in ms, or nothing when the fence was lost
        this.renewSql = t.sql(StatementKind.EFFECT_TAKEOVER, """
                update {claims} set {lease_until} = clock_timestamp() + ? * interval '1 millisecond'
                where %s
                returning (extract(epoch from {lease_until} - clock_timestamp()) * 1000)::bigint
                """.formatted(THIS_CLAIM));
        // phase 1 with local writes: the lease counted again from just before the COMMIT, sent with
        // it, so that however long before() ran, the holder has its whole lease for the call
        this.leaseFromCommitSql = renewSql + "; commit";
    }

    /** A resolved claim: the request it carried and when it began. */
    @SuppressWarnings("ArrayRecordComponent") // read and taken apart, never compared or hashed
    public record Resolved(byte @Nullable [] request, Instant createdAt) {}

    /** A fresh claim: its fence and when it began. */
    public record Claimed(long fence, Instant createdAt) {}

    /** A claim the recoverer took over, or one of the reconciliation list. */
    @SuppressWarnings("ArrayRecordComponent") // read and taken apart, never compared or hashed
    public record Stuck(
            Scope scope,
            IdempotencyKey key,
            ClaimState state,
            byte @Nullable [] request,
            long fence,
            int lookups,
            @Nullable Instant since,
            @Nullable Instant leaseUntil,
            @Nullable Instant nextLookupAt,
            Instant createdAt) {}

    /**
     * Claims a fresh or expired key in flight; its fence and start, or null when a live row is there.
     * Waits at most {@code waitMs} (at least 1 ms) on a concurrent claimer's uncommitted row: past
     * that, SQLSTATE 55P03 (lock not available), the transaction aborted.
     *
     * @param commit send the COMMIT with the insert (one round trip): the transaction ends either way
     *     (nothing is committed when a live row is there), so nothing else may be in it; a connection
     *     lost in flight is then marked by {@link SqlStates#inCommit}
     */
    public @Nullable Claimed claim(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            byte[] fingerprint,
            String effect,
            byte @Nullable [] request,
            long leaseMillis,
            long waitMs,
            boolean commit)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(commit ? claimAndCommitSql : claimSql)) {
            ps.setString(1, Math.max(1, waitMs) + "ms"); // 0 would mean no bound at all
            ps.setString(2, scope.value());
            ps.setString(3, key.value());
            ps.setBytes(4, fingerprint);
            ps.setString(5, effect);
            ps.setBytes(6, request);
            ps.setLong(7, leaseMillis);
            if (!ps.execute()) {
                throw new SQLException("the claim of the external effect returned no result");
            }
            if (commit) {
                // the in-flight row must survive a failover before the remote is called
                SqlStates.requireReplicated(ps.getWarnings());
            }
            try (ResultSet rs = ps.getResultSet()) { // the insert's; the COMMIT's update count follows it
                return rs.next() ? new Claimed(rs.getLong(1), rs.getTimestamp(2).toInstant()) : null;
            }
        } catch (SQLException e) {
            throw commit ? SqlStates.inCommit(e) : e;
        }
    }

    /** The live row of the key, or null. */
    public @Nullable ClaimRow read(Connection c, Scope scope, IdempotencyKey key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(readSql)) {
            ps.setString(1, scope.value());
            ps.setString(2, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                Timestamp completed = rs.getTimestamp(4);
                return new ClaimRow(
                        ClaimState.of(rs.getShort(1)),
                        rs.getBytes(2),
                        rs.getBytes(3),
                        completed == null ? null : completed.toInstant(),
                        rs.getTimestamp(10).toInstant(),
                        rs.getString(9),
                        rs.getLong(5),
                        rs.getBoolean(6),
                        rs.getBytes(7),
                        rs.getInt(8));
            }
        }
    }

    /** Takes over an in-flight claim whose lease has passed, if it still carries {@code fence}; the new fence or null. */
    public @Nullable Long takeOver(
            Connection c, Scope scope, IdempotencyKey key, long fence, Instant claimedAt, long leaseMillis)
            throws SQLException {
        return leased(c, takeOverSql, scope, key, fence, claimedAt, leaseMillis);
    }

    /**
     * Records the outcome if {@code fence} is still the claim's: when it was recorded, or null when
     * the fence was lost. With {@code commit} the COMMIT goes with it, after the local writes that go
     * with it ran in the transaction open on {@code c}; a lost fence then fails the statement, so
     * nothing committed and the transaction is aborted: roll it back.
     *
     * @throws SQLException as the driver reports it; with {@code commit}, a connection lost in flight
     *     marked by {@link SqlStates#inCommit}
     */
    public @Nullable Instant record(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            long fence,
            Instant claimedAt,
            ClaimState state,
            byte @Nullable [] result,
            long ttlMillis,
            boolean commit)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(commit ? recordAndCommitSql : recordSql)) {
            int next = bindOutcome(ps, state, result, ttlMillis, scope, key);
            ps.setLong(next++, fence);
            ps.setObject(next, at(claimedAt));
            ps.execute();
            if (commit) {
                SqlStates.requireReplicated(ps.getWarnings());
            }
            try (ResultSet rs = ps.getResultSet()) { // the update's; a COMMIT's update count follows it
                return rs != null && rs.next() ? rs.getTimestamp(1).toInstant() : null;
            }
        } catch (SQLException e) {
            if (!commit) {
                throw e;
            }
            if (SqlStates.isConnectionLoss(e) || !SqlStates.isRefusedByStatement(e)) {
                throw SqlStates.inCommit(e); // or e.g. a deferred constraint of the local writes, checked at the COMMIT
            }
            return null;
        }
    }

    /**
     * Records a definite answer whose holder's fence was lost, if the claim that began at
     * {@code claimedAt} is still unsettled (in flight or needing reconciliation); when, or null.
     */
    public @Nullable Instant recordLate(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            Instant claimedAt,
            ClaimState state,
            byte @Nullable [] result,
            long ttlMillis)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(recordLateSql)) {
            ps.setObject(bindOutcome(ps, state, result, ttlMillis, scope, key), at(claimedAt));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getTimestamp(1).toInstant() : null;
            }
        }
    }

    /** Binds the outcome's state, result and TTL, then scope and key, as every settling statement starts; the next index. */
    private static int bindOutcome(
            PreparedStatement ps,
            ClaimState state,
            byte @Nullable [] result,
            long ttlMillis,
            Scope scope,
            IdempotencyKey key)
            throws SQLException {
        ps.setShort(1, state.code());
        ps.setBytes(2, result);
        ps.setLong(3, ttlMillis);
        ps.setString(4, scope.value());
        ps.setString(5, key.value());
        return 6;
    }

    /** Records a refusal of the local writes on a fresh or expired key; when, or null if a live row is there. */
    public @Nullable Instant fail(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            byte[] fingerprint,
            byte[] failure,
            long ttlMillis,
            String effect)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(failSql)) {
            ps.setString(1, scope.value());
            ps.setString(2, key.value());
            ps.setBytes(3, fingerprint);
            ps.setBytes(4, failure);
            ps.setLong(5, ttlMillis);
            ps.setString(6, effect);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getTimestamp(1).toInstant() : null;
            }
        }
    }

    /**
     * Ends the holder's lease now, the claim staying in flight; {@code countLookup} adds one to the
     * lookups and schedules the next after {@code nextLookupMillis} (null: unchanged), and
     * {@code reconcile} hands the claim to reconciliation. False if the fence was lost.
     */
    public boolean release(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            long fence,
            Instant claimedAt,
            boolean countLookup,
            @Nullable Long nextLookupMillis,
            boolean reconcile)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
            short state = (reconcile ? ClaimState.NEEDS_RECONCILIATION : ClaimState.IN_FLIGHT).code();
            ps.setShort(1, state);
            ps.setInt(2, countLookup ? 1 : 0);
            if (nextLookupMillis == null) {
                ps.setNull(3, Types.BIGINT);
                ps.setNull(4, Types.BIGINT);
            } else {
                ps.setLong(3, nextLookupMillis);
                ps.setLong(4, nextLookupMillis);
            }
            ps.setShort(5, state);
            ps.setString(6, scope.value());
            ps.setString(7, key.value());
            ps.setLong(8, fence);
            ps.setObject(9, at(claimedAt));
            return ps.executeUpdate() == 1;
        }
    }

    /** Takes over up to {@code limit} in-flight claims of {@code effect} whose lease passed and whose next lookup is due. */
    public List<Stuck> scan(Connection c, String effect, int limit, long leaseMillis) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(scanSql)) {
            ps.setLong(1, leaseMillis);
            ps.setString(2, effect);
            ps.setInt(3, limit);
            List<Stuck> taken = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    taken.add(new Stuck(
                            Scope.of(rs.getString(1)),
                            IdempotencyKey.of(rs.getString(2)),
                            ClaimState.IN_FLIGHT,
                            rs.getBytes(3),
                            rs.getLong(4),
                            rs.getInt(5),
                            null,
                            null,
                            null,
                            rs.getTimestamp(6).toInstant()));
                }
            }
            return taken;
        }
    }

    /** Up to {@code limit} claims of {@code effect} in {@code state} (in flight, or needing reconciliation). */
    public List<Stuck> unsettled(Connection c, String effect, ClaimState state, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(unsettledSql)) {
            ps.setString(1, effect);
            ps.setShort(2, state.code());
            ps.setInt(3, limit);
            List<Stuck> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Stuck(
                            Scope.of(rs.getString(1)),
                            IdempotencyKey.of(rs.getString(2)),
                            ClaimState.of(rs.getShort(3)),
                            rs.getBytes(4),
                            rs.getLong(5),
                            rs.getInt(6),
                            instant(rs, 7),
                            instant(rs, 8),
                            instant(rs, 9),
                            rs.getTimestamp(10).toInstant())); // created_at is NOT NULL
                }
            }
            return rows;
        }
    }

    /** The holder's lease renewed: the ms left of it, or null if the fence was lost. */
    public @Nullable Long renew(
            Connection c, Scope scope, IdempotencyKey key, long fence, Instant claimedAt, long leaseMillis)
            throws SQLException {
        return leased(c, renewSql, scope, key, fence, claimedAt, leaseMillis);
    }

    /**
     * Phase 1 with local writes: starts the lease of the claim this transaction inserted again, from
     * now, and sends the COMMIT with it (one round trip). The row is this transaction's, so it matches.
     * A connection lost in flight is marked by {@link SqlStates#inCommit}.
     */
    public void leaseFromCommit(
            Connection c, Scope scope, IdempotencyKey key, long fence, Instant claimedAt, long leaseMillis)
            throws SQLException {
        Long started;
        try {
            started = leased(c, leaseFromCommitSql, scope, key, fence, claimedAt, leaseMillis);
        } catch (SQLException e) {
            throw SqlStates.inCommit(e);
        }
        if (started == null) {
            throw new SQLException("the claim this transaction inserted is not there to start its lease");
        }
    }

    /** A fenced statement that starts a lease of {@code leaseMillis} and returns one number, or null. */
    private static @Nullable Long leased(
            Connection c, String sql, Scope scope, IdempotencyKey key, long fence, Instant claimedAt, long leaseMillis)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, leaseMillis);
            ps.setString(2, scope.value());
            ps.setString(3, key.value());
            ps.setLong(4, fence);
            ps.setObject(5, at(claimedAt));
            if (!ps.execute()) {
                throw new SQLException("the lease statement of the external effect returned no result");
            }
            SqlStates.requireReplicated(ps.getWarnings()); // none unless a COMMIT was sent with it
            try (ResultSet rs = ps.getResultSet()) { // the update's; a COMMIT sent with it reports its count after
                return rs.next() ? rs.getLong(1) : null;
            }
        }
    }

    /** An operator's outcome for a claim needing reconciliation: its request and start, or null if it is not one. */
    public @Nullable Resolved resolve(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            String effect,
            ClaimState state,
            byte @Nullable [] result,
            long ttlMillis)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(resolveSql)) {
            ps.setString(bindOutcome(ps, state, result, ttlMillis, scope, key), effect);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next()
                        ? new Resolved(rs.getBytes(1), rs.getTimestamp(2).toInstant())
                        : null;
            }
        }
    }

    /**
     * A claim is its fence and its start together: fences start again at 1 for a new claim of the key
     * (after an expiry, a purge or a refusal), so a holder stalled past all of that must not match.
     */
    private static java.time.OffsetDateTime at(Instant claimedAt) {
        return java.time.OffsetDateTime.ofInstant(claimedAt, java.time.ZoneOffset.UTC);
    }

    /** A nullable timestamp column as an instant: the one reading of it in the store. */
    static @Nullable Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
