package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.internal.store.EffectTransition.Claim;
import io.github.idemtx.jooq.internal.store.EffectTransition.Commit;
import io.github.idemtx.jooq.internal.store.EffectTransition.FencedClaim;
import io.github.idemtx.jooq.internal.store.EffectTransition.Renew;
import io.github.idemtx.jooq.internal.store.EffectTransition.TakeOver;
import io.github.idemtx.jooq.internal.store.EffectTransition.TakeOverBatch;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The statements that take and hold an external effect's claim (docs/claim-protocol.md, "External
 * effects"), for one schema, written over {@link ClaimTable}'s names as {@link ClaimStatements} are:
 * the claim committed IN FLIGHT with a lease and a fencing token, the read of the key's row, the
 * takeover of a passed lease (one claim, or the recoverer's batch), the renewal, and the unsettled
 * lists. The statements that end a hold are {@link EffectSettlements} ({@link #settlements()}). Each
 * {@link EffectTransition} case is one statement, run by its {@code apply}. Plain JDBC on the
 * connection the unit holds; immutable and thread-safe.
 */
public final class EffectStatements {

    /** A claim is its fence and its start together ({@link #at}); the fenced statements' filter. */
    static final String THIS_CLAIM =
            "{scope} = ? and {idem_key} = ? and {state} = {IN_FLIGHT} and {fence} = ?" + " and {created_at} = ?";

    /**
     * {@link #THIS_CLAIM} in flight or sent: what the holder's record matches (a claim settled by
     * statement is sent before its call, and nothing but its record or a statement ends that).
     */
    static final String THIS_CLAIM_HELD =
            THIS_CLAIM.replace("{state} = {IN_FLIGHT}", "{state} in ({IN_FLIGHT}, {SENT})");

    private final String claimSql;
    private final String claimAndCommitSql;
    private final String readSql;
    private final String takeOverSql;
    private final String scanSql;
    private final String unsettledSql;
    private final String renewSql;
    private final String renewAndCommitSql;

    private final String schema;
    private final EffectSettlements settlements;
    private final StatementSettlements statements;

    /** The schema holding the claim table. */
    public String schema() {
        return schema;
    }

    /** The statements that end this schema's holds: records, releases, resolutions. */
    public EffectSettlements settlements() {
        return settlements;
    }

    /** The statements of effects settled by statement: mark sent, lines, absent decisions, views. */
    public StatementSettlements statements() {
        return statements;
    }

    public EffectStatements(ClaimTable t) {
        this.settlements = new EffectSettlements(t);
        this.statements = new StatementSettlements(t);
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
                      {next_lookup_at} = null, {reference} = null, {sent_at} = null, {sends} = null
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
        // the holder's lease, renewed just before a remote call or a recoverer's settling: what is
        // left of it in ms, or nothing when the fence was lost
        this.renewSql = t.sql(StatementKind.EFFECT_TAKEOVER, """
                update {claims} set {lease_until} = clock_timestamp() + ? * interval '1 millisecond'
                where %s
                returning (extract(epoch from {lease_until} - clock_timestamp()) * 1000)::bigint
                """.formatted(THIS_CLAIM));
        // ending phase 1 with local writes: the lease counted again from just before the COMMIT, sent with
        // it, so that however long before() ran, the holder has its whole lease for the call
        this.renewAndCommitSql = renewSql + "; commit";
    }

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
     *
     * /**
     * Claims a fresh or expired key in flight; its fence and start, or null when a live row is there.
     * Waits at most {@code lockWait} (at least 1 ms) on a concurrent claimer's uncommitted row: past
     * that, SQLSTATE 55P03 (lock not available), the transaction aborted. With {@link
     * Commit#WITH_STATEMENT} the transaction ends either way (nothing is committed when a live row is
     * there), so nothing else may be in it; a connection lost in flight is then marked by {@link
     * SqlStates#inCommit}.
     */
    public @Nullable Claimed apply(Connection c, Claim claim) throws SQLException {
        boolean commit = claim.commit() == Commit.WITH_STATEMENT;
        try (PreparedStatement ps = c.prepareStatement(commit ? claimAndCommitSql : claimSql)) {
            ps.setString(1, Math.max(1, claim.lockWait().toMillis()) + "ms"); // 0 would mean no bound at all
            ps.setString(2, claim.scope().value());
            ps.setString(3, claim.key().value());
            ps.setBytes(4, claim.fingerprint());
            ps.setString(5, claim.effect());
            ps.setBytes(6, claim.request());
            ps.setLong(7, claim.lease().toMillis());
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

    /** Takes over an in-flight claim whose lease has passed, if it is still {@code claim}; the new fence or null. */
    public @Nullable Long apply(Connection c, TakeOver takeOver) throws SQLException {
        return leased(c, takeOverSql, takeOver.claim(), takeOver.lease());
    }

    /** Takes over up to {@code limit} in-flight claims of {@code effect} whose lease passed and whose next lookup is due. */
    public List<Stuck> apply(Connection c, TakeOverBatch batch) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(scanSql)) {
            ps.setLong(1, batch.lease().toMillis());
            ps.setString(2, batch.effect());
            ps.setInt(3, batch.limit());
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

    /**
     * The holder's lease renewed: the ms left of it, or null if the fence was lost. With {@link
     * Commit#WITH_STATEMENT} it ends phase 1: the COMMIT goes with it, a connection lost in flight is
     * marked by {@link SqlStates#inCommit}, and the claim, this transaction's own, must match.
     */
    public @Nullable Long apply(Connection c, Renew renew) throws SQLException {
        if (renew.commit() == Commit.LATER) {
            return leased(c, renewSql, renew.claim(), renew.lease());
        }
        Long started;
        try {
            started = leased(c, renewAndCommitSql, renew.claim(), renew.lease());
        } catch (SQLException e) {
            throw SqlStates.inCommit(e);
        }
        if (started == null) {
            throw new SQLException("the claim this transaction inserted is not there to start its lease");
        }
        return started;
    }

    /** A fenced statement that starts a lease and returns one number, or null. */
    private static @Nullable Long leased(Connection c, String sql, FencedClaim claim, Duration lease)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, lease.toMillis());
            bindClaim(ps, 2, claim);
            if (!ps.execute()) {
                throw new SQLException("the lease statement of the external effect returned no result");
            }
            SqlStates.requireReplicated(ps.getWarnings()); // none unless a COMMIT was sent with it
            try (ResultSet rs = ps.getResultSet()) { // the update's; a COMMIT sent with it reports its count after
                return rs.next() ? rs.getLong(1) : null;
            }
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

    /** Binds {@link #THIS_CLAIM} from {@code index}: scope, key, fence, start; the next index. */
    static int bindClaim(PreparedStatement ps, int index, FencedClaim claim) throws SQLException {
        ps.setString(index, claim.scope().value());
        ps.setString(index + 1, claim.key().value());
        ps.setLong(index + 2, claim.fence());
        ps.setObject(index + 3, at(claim.claimedAt()));
        return index + 4;
    }

    /** A claim's start as bound: the timestamp column compared with the value read, to the microsecond. */
    static OffsetDateTime at(Instant claimedAt) {
        return OffsetDateTime.ofInstant(claimedAt, ZoneOffset.UTC);
    }

    /** A nullable timestamp column as an instant: the one reading of it in the store. */
    static @Nullable Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
