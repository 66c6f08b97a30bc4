package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.internal.store.EffectTransition.Answer;
import io.github.idemtx.jooq.internal.store.EffectTransition.Commit;
import io.github.idemtx.jooq.internal.store.EffectTransition.FencedClaim;
import io.github.idemtx.jooq.internal.store.EffectTransition.RecordFenced;
import io.github.idemtx.jooq.internal.store.EffectTransition.RecordLate;
import io.github.idemtx.jooq.internal.store.EffectTransition.RefuseBeforeCall;
import io.github.idemtx.jooq.internal.store.EffectTransition.ReleaseToOperator;
import io.github.idemtx.jooq.internal.store.EffectTransition.ReleaseUnknown;
import io.github.idemtx.jooq.internal.store.EffectTransition.Resolve;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * The statements that end an external effect's hold (docs/claim-protocol.md, "External effects"):
 * the fenced record, the late record of a definite answer, the refusal before the call, the
 * release as unknown or to an operator, and an operator's resolution; one per {@link
 * EffectTransition} case, run by its {@code apply}. Made by {@link EffectStatements} for its
 * schema; plain JDBC on the connection the unit holds; immutable and thread-safe.
 */
public final class EffectSettlements {

    /**
     * The outcome's state, result and TTL, then scope and key: how every settling statement begins
     * ({@link #bindAnswer}). The request is cleared, except on a claim that was sent with a statement
     * reference: a later statement line is compared with its amount.
     */
    static final String SETTLE = "{state} = ?, {result} = ?, {completed_at} = clock_timestamp(),"
            + " {expires_at} = clock_timestamp() + ? * interval '1 millisecond',"
            + " {request} = case when c.{reference} is null then null else c.{request} end, {lease_until} = null,"
            + " {next_lookup_at} = null";

    private final String recordSql;
    private final String recordAndCommitSql;
    private final String recordLateSql;
    private final String failSql;
    private final String releaseSql;
    private final String resolveSql;

    EffectSettlements(ClaimTable t) {
        this.recordSql = t.sql(
                StatementKind.EFFECT_RECORD,
                "update {claims} as c set " + SETTLE + " where " + EffectStatements.THIS_CLAIM_HELD
                        + " returning {completed_at}");
        // the same sent after the local writes, with the COMMIT: when the fence is lost the
        // statement fails (a scalar subquery of two rows, 21000 with no context) so that nothing of
        // the transaction commits, the local writes included
        this.recordAndCommitSql =
                t.sql(StatementKind.EFFECT_RECORD, """
                with recorded as (update {claims} as c set %s where %s returning {completed_at})
                select (select {completed_at} from recorded
                  union all select null from (values (1), (2)) as fence_lost (n) where not exists (select from recorded));
                commit
                """.formatted(SETTLE, EffectStatements.THIS_CLAIM_HELD));
        // a definite answer whose holder lost its fence: kept while this claim (its start) is not
        // settled, by whoever holds it now; the unsettled states under the row lock let one record win
        this.recordLateSql = t.sql(StatementKind.EFFECT_RECORD, """
                update {claims} as c set %s
                where {scope} = ? and {idem_key} = ? and {state} in ({IN_FLIGHT}, {NEEDS_RECONCILIATION}, {SENT})
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
                """.formatted(EffectStatements.THIS_CLAIM));
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
    }

    /** A resolved claim: the request it carried and when it began. */
    @SuppressWarnings("ArrayRecordComponent") // read and taken apart, never compared or hashed
    public record Resolved(byte @Nullable [] request, Instant createdAt) {}

    /**
     * Records the answer if the fence is still the claim's: when it was recorded, or null when the
     * fence was lost. With {@link Commit#WITH_STATEMENT} the COMMIT goes with it, after the local
     * writes that go with it ran in the transaction open on {@code c}; a lost fence then fails the
     * statement, so nothing committed and the transaction is aborted: roll it back.
     *
     * @throws SQLException as the driver reports it; with the COMMIT, a connection lost in flight
     *     marked by {@link SqlStates#inCommit}
     */
    public @Nullable Instant apply(Connection c, RecordFenced record) throws SQLException {
        boolean commit = record.commit() == Commit.WITH_STATEMENT;
        FencedClaim claim = record.claim();
        try (PreparedStatement ps = c.prepareStatement(commit ? recordAndCommitSql : recordSql)) {
            bindAnswer(ps, record.answer(), record.ttl(), claim.scope(), claim.key());
            ps.setLong(6, claim.fence());
            ps.setObject(7, EffectStatements.at(claim.claimedAt()));
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

    /** Records a definite answer whose holder lost the fence, if its claim is still unsettled; when, or null. */
    public @Nullable Instant apply(Connection c, RecordLate late) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(recordLateSql)) {
            bindAnswer(ps, late.answer(), late.ttl(), late.scope(), late.key());
            ps.setObject(6, EffectStatements.at(late.claimedAt()));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getTimestamp(1).toInstant() : null;
            }
        }
    }

    /** Records a refusal of the local writes on a fresh or expired key; when, or null if a live row is there. */
    public @Nullable Instant apply(Connection c, RefuseBeforeCall refusal) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(failSql)) {
            ps.setString(1, refusal.scope().value());
            ps.setString(2, refusal.key().value());
            ps.setBytes(3, refusal.fingerprint());
            ps.setBytes(4, refusal.failure());
            ps.setLong(5, refusal.ttl().toMillis());
            ps.setString(6, refusal.effect());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getTimestamp(1).toInstant() : null;
            }
        }
    }

    /** Ends the holder's lease now, the claim staying in flight, the attempt counted or not; false if the fence was lost. */
    public boolean apply(Connection c, ReleaseUnknown release) throws SQLException {
        return release(c, release.claim(), ClaimState.IN_FLIGHT, release.nextLookupIn());
    }

    /** Ends the holder's lease and hands the claim to an operator, the attempt counted; false if the fence was lost. */
    public boolean apply(Connection c, ReleaseToOperator release) throws SQLException {
        return release(c, release.claim(), ClaimState.NEEDS_RECONCILIATION, null);
    }

    private boolean release(Connection c, FencedClaim claim, ClaimState to, @Nullable Duration nextLookupIn)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
            ps.setShort(1, to.code());
            // counted: every release to an operator, and a release as unknown that schedules a lookup
            ps.setInt(2, to == ClaimState.NEEDS_RECONCILIATION || nextLookupIn != null ? 1 : 0);
            if (nextLookupIn == null) {
                ps.setNull(3, Types.BIGINT);
                ps.setNull(4, Types.BIGINT);
            } else {
                ps.setLong(3, nextLookupIn.toMillis());
                ps.setLong(4, nextLookupIn.toMillis());
            }
            ps.setShort(5, to.code());
            EffectStatements.bindClaim(ps, 6, claim);
            return ps.executeUpdate() == 1;
        }
    }

    /** An operator's answer for a claim needing reconciliation: its request and start, or null if it is not one. */
    public @Nullable Resolved apply(Connection c, Resolve resolve) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(resolveSql)) {
            bindAnswer(ps, resolve.answer(), resolve.ttl(), resolve.scope(), resolve.key());
            ps.setString(6, resolve.effect());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next()
                        ? new Resolved(rs.getBytes(1), rs.getTimestamp(2).toInstant())
                        : null;
            }
        }
    }

    /** Binds the answer's state and result, the TTL, then scope and key (1 to 5), as every settling statement starts. */
    private static void bindAnswer(PreparedStatement ps, Answer answer, Duration ttl, Scope scope, IdempotencyKey key)
            throws SQLException {
        ps.setShort(1, answer.state().code());
        ps.setBytes(2, answer.stored());
        ps.setLong(3, ttl.toMillis());
        ps.setString(4, scope.value());
        ps.setString(5, key.value());
    }
}
