package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.internal.store.EffectTransition.AbsentByStatement;
import io.github.idemtx.jooq.internal.store.EffectTransition.MarkSent;
import io.github.idemtx.jooq.internal.store.EffectTransition.MismatchToOperator;
import io.github.idemtx.jooq.internal.store.EffectTransition.SettleByStatement;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.Date;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The statements of effects settled by statement (V8, docs/claim-protocol.md, "Settled by
 * statement"): the claim marked sent before each send, a statement line recorded once by the bank's
 * entry id and the claim it names settled, a sent claim found absent, the statements applied, and
 * the operators' reads and handling of flagged lines. Every statement about one reference runs
 * after {@link #lockReference} in its transaction, so that two importers of overlapping statements
 * (or an importer and an absent decision) about the same reference take turns. Plain JDBC on the
 * connection the unit holds; immutable and thread-safe.
 */
public final class StatementSettlements {

    /** A line's verdict, as the {@code verdict} column holds it. */
    public enum Verdict {
        MATCHED,
        DUPLICATE,
        MISMATCH,
        UNMATCHED;

        String column() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        static Verdict of(String column) {
            return valueOf(column.toUpperCase(java.util.Locale.ROOT));
        }
    }

    /** The claim a reference names: its state, request, result and start; request null once settled. */
    @SuppressWarnings("ArrayRecordComponent") // read and taken apart, never compared or hashed
    public record Named(
            Scope scope,
            IdempotencyKey key,
            ClaimState state,
            byte @Nullable [] request,
            long fence,
            Instant createdAt) {}

    /** A line to record: the bank's entry id, the reference, amount, currency and booking date. */
    public record NewLine(String entryId, String reference, BigDecimal amount, String currency, LocalDate bookedOn) {}

    /** A sent claim: when it was last sent, how many times, and with which reference. */
    @SuppressWarnings("ArrayRecordComponent") // read and taken apart, never compared or hashed
    public record SentClaim(
            Scope scope,
            IdempotencyKey key,
            String reference,
            Instant sentAt,
            int sends,
            byte @Nullable [] request,
            Instant createdAt) {}

    private static final String SETTLE = EffectSettlements.SETTLE;

    /** Whether the applied statements of the effect cover {@code [sent_at, sent_at + lag)}, and no line names the claim. */
    static final String ABSENT = """
            (select range_agg(tstzrange(s.{period_from}, s.{period_to}, '[)')) from {statements} s
              where s.{effect} = c.{effect} and s.{period_to} > c.{sent_at}
                and s.{period_from} <= c.{sent_at} + ? * interval '1 millisecond')
              @> tstzrange(c.{sent_at}, c.{sent_at} + ? * interval '1 millisecond', '[]')
            and not exists (select from {statement_lines} l where l.{effect} = c.{effect} and l.{reference} = c.{reference})
            """;

    private final String markSentSql;
    private final String lockSql;
    private final String lineExistsSql;
    private final String periodSql;
    private final String namedSql;
    private final String priorLinesSql;
    private final String insertLineSql;
    private final String settleSql;
    private final String statementSql;
    private final String absentCandidatesSql;
    private final String absentSql;
    private final String mismatchSql;

    private final StatementViews views;

    /** The reads of claims awaiting or missing from statements, the lines, an operator's handling. */
    public StatementViews views() {
        return views;
    }

    StatementSettlements(ClaimTable t) {
        this.views = new StatementViews(t);
        this.markSentSql = t.sql(StatementKind.EFFECT_SENT, """
                update {claims} set {state} = {SENT}, {reference} = ?, {sent_at} = clock_timestamp(),
                  {sends} = coalesce({sends}, 0) + 1, {lease_until} = null, {next_lookup_at} = null
                where %s returning {sends};
                commit
                """.formatted(EffectStatements.THIS_CLAIM));
        this.lockSql = t.sql(StatementKind.STATEMENT_APPLY, "select pg_advisory_xact_lock(hashtextextended(?, 0))");
        this.lineExistsSql = t.sql(StatementKind.STATEMENT_APPLY, """
                select {entry_id}, {reference}, {amount}, {currency}, {booked_on} from {statement_lines}
                where {effect} = ? and {entry_id} = any(?)
                """);
        this.periodSql = t.sql(StatementKind.STATEMENT_READ, """
                select {period_from}, {period_to}, clock_timestamp() from {statements}
                right join (select 1) as one on {effect} = ? and {statement_id} = ?
                """);
        this.namedSql = t.sql(StatementKind.STATEMENT_APPLY, """
                select {scope}, {idem_key}, {state}, {request}, {fence}, {created_at} from {claims}
                where {effect} = ? and {reference} = ? order by {created_at} desc limit 1
                """);
        this.priorLinesSql = t.sql(StatementKind.STATEMENT_APPLY, """
                select count(*) from {statement_lines} where {effect} = ? and {reference} = ?
                  and {verdict} in ('matched', 'duplicate')
                """);
        this.insertLineSql = t.sql(StatementKind.STATEMENT_APPLY, """
                insert into {statement_lines} ({effect}, {entry_id}, {statement_id}, {reference}, {amount}, {currency},
                  {booked_on}, {verdict}, {scope}, {idem_key}, {detail}, {applied_at})
                values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, clock_timestamp())
                """);
        this.settleSql = t.sql(StatementKind.STATEMENT_APPLY, """
                update {claims} as c set %s
                from (select {scope}, {idem_key}, {request} from {claims}
                      where {scope} = ? and {idem_key} = ? and {effect} = ? and {reference} = ?
                        and {state} in ({IN_FLIGHT}, {NEEDS_RECONCILIATION}, {SENT})
                      for update) as old
                where c.{scope} = old.{scope} and c.{idem_key} = old.{idem_key}
                returning old.{request}, c.{created_at}
                """.formatted(SETTLE));
        this.statementSql = t.sql(StatementKind.STATEMENT_APPLY, """
                insert into {statements} ({effect}, {statement_id}, {period_from}, {period_to}, {lines}, {applied_at})
                values (?, ?, ?, ?, ?, clock_timestamp())
                on conflict ({effect}, {statement_id}) do update set {lines} = excluded.{lines},
                  {applied_at} = excluded.{applied_at}
                  where {statements}.{period_from} = excluded.{period_from} and {statements}.{period_to} = excluded.{period_to}
                returning 1
                """);
        this.absentCandidatesSql = t.sql(StatementKind.STATEMENT_READ, """
                select c.{scope}, c.{idem_key}, c.{reference}, c.{sent_at}, c.{sends}, c.{request}, c.{created_at}
                from {claims} c where c.{effect} = ? and c.{state} = {SENT} and %s
                order by c.{sent_at} limit ?
                """.formatted(ABSENT));
        this.absentSql = t.sql(StatementKind.STATEMENT_APPLY, """
                update {claims} c set {state} = ?, {fence} = {fence} + 1, {lease_until} = clock_timestamp(),
                  {next_lookup_at} = null,
                  {completed_at} = case when ? = {NEEDS_RECONCILIATION} then clock_timestamp() else null end
                where c.{scope} = ? and c.{idem_key} = ? and c.{effect} = ? and c.{state} = {SENT} and c.{sent_at} = ?
                  and %s
                """.formatted(ABSENT));
        // a line that disagrees with its unsettled claim: an operator decides, nothing sends it again meanwhile
        this.mismatchSql = t.sql(StatementKind.STATEMENT_APPLY, """
                update {claims} set {state} = {NEEDS_RECONCILIATION}, {completed_at} = clock_timestamp(),
                  {lease_until} = clock_timestamp(), {fence} = {fence} + 1, {next_lookup_at} = null
                where {scope} = ? and {idem_key} = ? and {effect} = ? and {state} in ({IN_FLIGHT}, {SENT})
                """);
    }

    /** Marks the claim sent, fenced, and commits; the sends so far, or null when the fence was lost. */
    public @Nullable Integer apply(Connection c, MarkSent mark) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
            ps.setString(1, mark.reference());
            EffectStatements.bindClaim(ps, 2, mark.claim());
            ps.execute();
            SqlStates.requireReplicated(ps.getWarnings());
            try (ResultSet rs = ps.getResultSet()) {
                return rs != null && rs.next() ? rs.getInt(1) : null;
            }
        } catch (SQLException e) {
            throw SqlStates.inCommit(e);
        }
    }

    /** Takes the transaction-level lock of one reference of the effect: statements about it take turns. */
    public void lockReference(Connection c, String effect, String reference) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(lockSql)) {
            ps.setString(1, "idemtx.statement\n" + effect + "\n" + reference);
            ps.execute();
        }
    }

    /** The lines of these entry ids recorded already, as they were recorded, by entry id. */
    public java.util.Map<String, NewLine> recorded(Connection c, String effect, List<String> entryIds)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(lineExistsSql)) {
            ps.setString(1, effect);
            ps.setArray(2, c.createArrayOf("varchar", entryIds.toArray()));
            java.util.Map<String, NewLine> out = new java.util.HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(
                            rs.getString(1),
                            new NewLine(
                                    rs.getString(1),
                                    rs.getString(2),
                                    rs.getBigDecimal(3),
                                    rs.getString(4),
                                    rs.getDate(5).toLocalDate()));
                }
            }
            return out;
        }
    }

    /** A statement of this id applied before: its period; and the database's clock now. */
    public record Period(@Nullable Instant from, @Nullable Instant to, Instant now) {}

    /** The period a statement of this id was applied with (nulls when none was), and the database's clock. */
    public Period period(Connection c, String effect, String statementId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(periodSql)) {
            ps.setString(1, effect);
            ps.setString(2, statementId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Period(
                        EffectStatements.instant(rs, 1),
                        EffectStatements.instant(rs, 2),
                        rs.getTimestamp(3).toInstant());
            }
        }
    }

    /** The claim of the effect that sent {@code reference}, or null. */
    public @Nullable Named named(Connection c, String effect, String reference) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(namedSql)) {
            ps.setString(1, effect);
            ps.setString(2, reference);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next()
                        ? new Named(
                                Scope.of(rs.getString(1)),
                                IdempotencyKey.of(rs.getString(2)),
                                ClaimState.of(rs.getShort(3)),
                                rs.getBytes(4),
                                rs.getLong(5),
                                rs.getTimestamp(6).toInstant())
                        : null;
            }
        }
    }

    /** How many lines of {@code reference} paid it already (matched or duplicate). */
    public int priorLines(Connection c, String effect, String reference) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(priorLinesSql)) {
            ps.setString(1, effect);
            ps.setString(2, reference);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** Records a line with its verdict and the claim it names (or none). */
    public void insertLine(
            Connection c,
            String effect,
            String statementId,
            NewLine line,
            Verdict verdict,
            @Nullable Scope scope,
            @Nullable IdempotencyKey key,
            @Nullable String detail)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(insertLineSql)) {
            ps.setString(1, effect);
            ps.setString(2, line.entryId());
            ps.setString(3, statementId);
            ps.setString(4, line.reference());
            ps.setBigDecimal(5, line.amount());
            ps.setString(6, line.currency());
            ps.setDate(7, Date.valueOf(line.bookedOn()));
            ps.setString(8, verdict.column());
            ps.setString(9, scope == null ? null : scope.value());
            ps.setString(10, key == null ? null : key.value());
            ps.setString(11, detail == null ? null : truncate(detail));
            ps.executeUpdate();
        }
    }

    /** Settles an unsettled claim applied from a statement line: its request and start, or null. */
    public EffectSettlements.@Nullable Resolved apply(Connection c, SettleByStatement settle) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(settleSql)) {
            ps.setShort(1, settle.answer().state().code());
            ps.setBytes(2, settle.answer().stored());
            ps.setLong(3, settle.ttl().toMillis());
            ps.setString(4, settle.scope().value());
            ps.setString(5, settle.key().value());
            ps.setString(6, settle.effect());
            ps.setString(7, settle.reference());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next()
                        ? new EffectSettlements.Resolved(
                                rs.getBytes(1), rs.getTimestamp(2).toInstant())
                        : null;
            }
        }
    }

    /**
     * Records a statement applied (its period counts toward absent decisions from now on); false when
     * a statement of that id was applied before with another period (nothing written).
     */
    public boolean statementApplied(Connection c, String effect, String id, Instant from, Instant to, int lines)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(statementSql)) {
            ps.setString(1, effect);
            ps.setString(2, id);
            ps.setObject(3, EffectStatements.at(from));
            ps.setObject(4, EffectStatements.at(to));
            ps.setInt(5, lines);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** Up to {@code limit} sent claims that the applied statements show absent past {@code lag}. */
    public List<SentClaim> absentCandidates(Connection c, String effect, Duration lag, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(absentCandidatesSql)) {
            ps.setString(1, effect);
            ps.setLong(2, lag.toMillis());
            ps.setLong(3, lag.toMillis());
            ps.setInt(4, limit);
            return sentClaims(ps);
        }
    }

    /** A sent claim found absent: sent again or to an operator, if it is still absent; false otherwise. */
    public boolean apply(Connection c, AbsentByStatement absent) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(absentSql)) {
            ps.setShort(1, absent.to().code());
            ps.setShort(2, absent.to().code());
            ps.setString(3, absent.scope().value());
            ps.setString(4, absent.key().value());
            ps.setString(5, absent.effect());
            ps.setObject(6, EffectStatements.at(absent.sentAt()));
            ps.setLong(7, absent.lag().toMillis());
            ps.setLong(8, absent.lag().toMillis());
            return ps.executeUpdate() == 1;
        }
    }

    /** An unsettled claim whose line disagrees with it, to an operator; false when it is not unsettled. */
    public boolean apply(Connection c, MismatchToOperator mismatch) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(mismatchSql)) {
            ps.setString(1, mismatch.scope().value());
            ps.setString(2, mismatch.key().value());
            ps.setString(3, mismatch.effect());
            return ps.executeUpdate() == 1;
        }
    }

    static List<SentClaim> sentClaims(PreparedStatement ps) throws SQLException {
        List<SentClaim> out = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.add(new SentClaim(
                        Scope.of(rs.getString(1)),
                        IdempotencyKey.of(rs.getString(2)),
                        rs.getString(3),
                        rs.getTimestamp(4).toInstant(),
                        rs.getInt(5),
                        rs.getBytes(6),
                        rs.getTimestamp(7).toInstant()));
            }
        }
        return out;
    }

    static String truncate(String s) {
        return s.length() <= 1000 ? s : s.substring(0, 997) + "...";
    }
}
