package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.jooq.internal.store.StatementSettlements.SentClaim;
import io.github.idemtx.jooq.internal.store.StatementSettlements.Verdict;
import java.math.BigDecimal;
import java.sql.Connection;
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
 * The reads of an effect settled by statement (V8) and an operator's handling of its flagged lines:
 * the claims awaiting a statement, those recorded applied that the statements do not show, the
 * lines. Made by {@link StatementSettlements} for its schema; plain JDBC; immutable and thread-safe.
 */
public final class StatementViews {

    /** A line as recorded, with its verdict and an operator's handling. */
    public record LineRow(
            String entryId,
            String statementId,
            String reference,
            BigDecimal amount,
            String currency,
            LocalDate bookedOn,
            Verdict verdict,
            @Nullable String scope,
            @Nullable String key,
            @Nullable String detail,
            Instant appliedAt,
            @Nullable Instant workedAt,
            @Nullable String workedBy,
            @Nullable String note) {}

    private final String sentSql;
    private final String unconfirmedSql;
    private final String linesSql;
    private final String workSql;

    StatementViews(ClaimTable t) {
        // recorded applied (the call's reply said so) but missing from statements that cover its window
        this.unconfirmedSql = t.sql(StatementKind.STATEMENT_READ, """
                select c.{scope}, c.{idem_key}, c.{reference}, c.{sent_at}, c.{sends}, c.{request}, c.{created_at}
                from {claims} c where c.{effect} = ? and c.{state} = {SUCCEEDED} and c.{reference} is not null
                  and c.{expires_at} > clock_timestamp() and %s
                order by c.{sent_at} limit ?
                """.formatted(StatementSettlements.ABSENT));

        this.sentSql = t.sql(StatementKind.STATEMENT_READ, """
                select {scope}, {idem_key}, {reference}, {sent_at}, {sends}, {request}, {created_at} from {claims}
                where {effect} = ? and {state} = {SENT} order by {sent_at} limit ?
                """);

        this.linesSql = t.sql(StatementKind.STATEMENT_READ, """
                select {entry_id}, {statement_id}, {reference}, {amount}, {currency}, {booked_on}, {verdict}, {scope},
                  {idem_key}, {detail}, {applied_at}, {worked_at}, {worked_by}, {note}
                from {statement_lines} where {effect} = ? and (? is null or {verdict} = ?)
                  and (? or {worked_at} is null) and (? is null or {reference} = ?)
                order by {applied_at}, {entry_id} limit ?
                """);

        this.workSql = t.sql(StatementKind.STATEMENT_MARK, """
                update {statement_lines} set {worked_at} = clock_timestamp(), {worked_by} = ?, {note} = ?
                where {effect} = ? and {entry_id} = ? and {verdict} <> 'matched' and {worked_at} is null
                """);
    }

    /**
     * Up to {@code limit} claims of the effect recorded applied whose statements cover their send
     * plus {@code window} with no line of their reference, oldest send first.
     */
    public List<SentClaim> unconfirmed(Connection c, String effect, Duration window, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(unconfirmedSql)) {
            ps.setString(1, effect);
            ps.setLong(2, window.toMillis());
            ps.setLong(3, window.toMillis());
            ps.setInt(4, limit);
            return StatementSettlements.sentClaims(ps);
        }
    }

    /** Up to {@code limit} claims of the effect awaiting a statement, oldest send first. */
    public List<SentClaim> sent(Connection c, String effect, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sentSql)) {
            ps.setString(1, effect);
            ps.setInt(2, limit);
            return StatementSettlements.sentClaims(ps);
        }
    }

    /**
     * Up to {@code limit} lines of the effect, oldest first: of one verdict (or any), with those an
     * operator worked or only the open ones, of one reference (or any).
     */
    public List<LineRow> lines(
            Connection c,
            String effect,
            @Nullable Verdict verdict,
            boolean worked,
            @Nullable String reference,
            int limit)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(linesSql)) {
            String v = verdict == null ? null : verdict.column();
            ps.setString(1, effect);
            ps.setString(2, v);
            ps.setString(3, v);
            ps.setBoolean(4, worked);
            ps.setString(5, reference);
            ps.setString(6, reference);
            ps.setInt(7, limit);
            List<LineRow> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new LineRow(
                            rs.getString(1),
                            rs.getString(2),
                            rs.getString(3),
                            rs.getBigDecimal(4),
                            rs.getString(5),
                            rs.getDate(6).toLocalDate(),
                            Verdict.of(rs.getString(7)),
                            rs.getString(8),
                            rs.getString(9),
                            rs.getString(10),
                            rs.getTimestamp(11).toInstant(),
                            EffectStatements.instant(rs, 12),
                            rs.getString(13),
                            rs.getString(14)));
                }
            }
            return out;
        }
    }

    /** An operator's handling of a flagged line not worked yet; false when there is no such line. */
    public boolean work(Connection c, String effect, String entryId, String operator, String note) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(workSql)) {
            ps.setString(1, StatementSettlements.truncate(operator));
            ps.setString(2, StatementSettlements.truncate(note));
            ps.setString(3, effect);
            ps.setString(4, entryId);
            return ps.executeUpdate() == 1;
        }
    }
}
