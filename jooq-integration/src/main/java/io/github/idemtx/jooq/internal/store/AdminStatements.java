package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The claim table's statements for operators (ClaimAdmin): read a claim with its history, list the
 * unsettled ones oldest first, count the backlog, forget a settled claim, record an action. Every
 * write records its action in the same statement or transaction. Immutable and thread-safe.
 */
public final class AdminStatements {

    /** A forget recorded: the action's name in the actions table. */
    public static final String FORGOTTEN = "forgotten";

    /** An operator's "the remote applied it". */
    public static final String RESOLVED_APPLIED = "resolved_applied";

    /** An operator's "the remote did not apply it". */
    public static final String RESOLVED_REFUSED = "resolved_refused";

    private static final String COLUMNS = """
            {scope}, {idem_key}, {state}, {fingerprint}, {result}, {created_at}, {completed_at},
            case when {expires_at} = 'infinity' then null else {expires_at} end,
            {expires_at} <= clock_timestamp(), {effect}, {request}, {fence}, {lease_until}, {lookups},
            {next_lookup_at}, {reference}
            """;

    private final String schema;
    private final String readSql;
    private final String historySql;
    private final String pageSql;
    private final String backlogSql;
    private final String forgetSql;
    private final String recordSql;

    public AdminStatements(ClaimTable t) {
        this.schema = t.schema();
        this.readSql = t.sql(StatementKind.ADMIN_READ, "select " + COLUMNS + """
                from {claims} where {scope} = ? and {idem_key} = ?
                """);
        this.historySql = t.sql(StatementKind.ADMIN_READ, """
                select {at}, {action}, {operator}, {reason} from {actions}
                where {scope} = ? and {idem_key} = ? order by {at} desc, {id} desc limit 50
                """);
        // oldest first, from after the page's last row: (created_at, scope, key) is unique and the
        // unsettled rows are few (the partial index of V4 holds them)
        this.pageSql = t.sql(StatementKind.ADMIN_READ, "select " + COLUMNS + """
                from {claims} where {state} = ? and {state} in ({IN_FLIGHT}, {NEEDS_RECONCILIATION}, {SENT})
                and (cast(? as varchar) is null or {effect} = ?)
                and ({created_at}, {scope}, {idem_key}) > (?, ?, ?)
                order by {created_at}, {scope}, {idem_key} limit ?
                """);
        this.backlogSql = t.sql(StatementKind.ADMIN_READ, """
                select count(*) filter (where {state} = {IN_FLIGHT}),
                  count(*) filter (where {state} = {NEEDS_RECONCILIATION}),
                  min({created_at}) filter (where {state} = {IN_FLIGHT}),
                  min({completed_at}) filter (where {state} = {NEEDS_RECONCILIATION})
                from {claims} where {state} in ({IN_FLIGHT}, {NEEDS_RECONCILIATION})
                """);
        // one statement: the row goes and its action is recorded, or neither. Only the row the
        // operator was shown: a key forgotten and run again since is another claim, with its own
        // creation and completion times
        this.forgetSql = t.sql(StatementKind.ADMIN_WRITE, """
                with gone as (delete from {claims} where {scope} = ? and {idem_key} = ?
                    and {state} in ({SUCCEEDED}, {FAILED})
                    and {created_at} = cast(? as timestamptz)
                    and {completed_at} is not distinct from cast(? as timestamptz)
                  returning {scope}, {idem_key}, {state}, {effect}, {fingerprint}, {result})
                insert into {actions} ({at}, {scope}, {idem_key}, {action}, {operator}, {reason}, {state}, {effect},
                  {fingerprint}, {result})
                select clock_timestamp(), {scope}, {idem_key}, '%s', ?, ?, {state}, {effect}, {fingerprint}, {result}
                from gone
                """.formatted(FORGOTTEN));
        // after a resolution, in its transaction: the row as it now is, with the state it had
        this.recordSql = t.sql(StatementKind.ADMIN_WRITE, """
                insert into {actions} ({at}, {scope}, {idem_key}, {action}, {operator}, {reason}, {state}, {effect},
                  {fingerprint}, {result})
                select clock_timestamp(), {scope}, {idem_key}, ?, ?, ?, ?, {effect}, {fingerprint}, {result}
                from {claims} where {scope} = ? and {idem_key} = ?
                """);
    }

    /** {@return the schema holding the claim table} */
    public String schema() {
        return schema;
    }

    /** A claim row as an operator sees it: every column. */
    @SuppressWarnings("ArrayRecordComponent") // read and taken apart, never compared or hashed
    public record Row(
            Scope scope,
            IdempotencyKey key,
            ClaimState state,
            byte[] fingerprint,
            byte @Nullable [] result,
            Instant createdAt,
            @Nullable Instant completedAt,
            @Nullable Instant expiresAt,
            boolean expired,
            @Nullable String effect,
            byte @Nullable [] request,
            @Nullable Long fence,
            @Nullable Instant leaseUntil,
            @Nullable Integer lookups,
            @Nullable Instant nextLookupAt,
            @Nullable String reference) {}

    /** One action of an operator on a claim. */
    public record Action(Instant at, String action, String operator, String reason) {}

    /** The unsettled claims: how many, and the oldest of each state (null when none). */
    public record Backlog(
            long inFlight,
            long needingReconciliation,
            @Nullable Instant oldestInFlight,
            @Nullable Instant oldestNeeding) {}

    public @Nullable Row read(Connection c, Scope scope, IdempotencyKey key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(readSql)) {
            ps.setString(1, scope.value());
            ps.setString(2, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? row(rs) : null;
            }
        }
    }

    public List<Action> history(Connection c, Scope scope, IdempotencyKey key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(historySql)) {
            ps.setString(1, scope.value());
            ps.setString(2, key.value());
            List<Action> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Action(
                            rs.getTimestamp(1).toInstant(), rs.getString(2), rs.getString(3), rs.getString(4)));
                }
            }
            return out;
        }
    }

    /**
     * {@return up to {@code limit} rows in {@code state}, oldest first, after ({@code createdAt},
     * {@code scope}, {@code key}) (all null: from the first)}
     */
    public List<Row> page(
            Connection c,
            ClaimState state,
            @Nullable String effect,
            @Nullable Instant createdAt,
            @Nullable String scope,
            @Nullable String key,
            int limit)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(pageSql)) {
            ps.setShort(1, state.code());
            ps.setString(2, effect);
            ps.setString(3, effect);
            // '-infinity' and '' sort before every row
            ps.setObject(
                    4, createdAt == null ? OffsetDateTime.MIN : OffsetDateTime.ofInstant(createdAt, ZoneOffset.UTC));
            ps.setString(5, scope == null ? "" : scope);
            ps.setString(6, key == null ? "" : key);
            ps.setInt(7, limit);
            List<Row> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(row(rs));
                }
            }
            return out;
        }
    }

    public Backlog backlog(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(backlogSql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new Backlog(
                    rs.getLong(1), rs.getLong(2), EffectStatements.instant(rs, 3), EffectStatements.instant(rs, 4));
        }
    }

    /**
     * Deletes the settled claim created at {@code createdAt} and completed at {@code completedAt}
     * (the one an operator read) and records why, in one statement; false if there was none to
     * forget: gone, not settled, or made again since.
     */
    public boolean forget(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            Instant createdAt,
            @Nullable Instant completedAt,
            String operator,
            String reason)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(forgetSql)) {
            ps.setString(1, scope.value());
            ps.setString(2, key.value());
            ps.setObject(3, OffsetDateTime.ofInstant(createdAt, ZoneOffset.UTC));
            ps.setObject(4, completedAt == null ? null : OffsetDateTime.ofInstant(completedAt, ZoneOffset.UTC));
            ps.setString(5, operator);
            ps.setString(6, reason);
            return ps.executeUpdate() == 1;
        }
    }

    /** Records an operator's resolution of a claim that was in {@code before}, inside the resolution's transaction. */
    public void record(
            Connection c,
            Scope scope,
            IdempotencyKey key,
            String action,
            String operator,
            String reason,
            ClaimState before)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(recordSql)) {
            ps.setString(1, action);
            ps.setString(2, operator);
            ps.setString(3, reason);
            ps.setShort(4, before.code());
            ps.setString(5, scope.value());
            ps.setString(6, key.value());
            if (ps.executeUpdate() != 1) {
                throw new SQLException("the resolved claim was not there to record its resolution");
            }
        }
    }

    private static Row row(ResultSet rs) throws SQLException {
        long fence = rs.getLong(12);
        Long fenceOrNull = rs.wasNull() ? null : fence;
        int lookups = rs.getInt(14);
        Integer lookupsOrNull = rs.wasNull() ? null : lookups;
        return new Row(
                Scope.of(rs.getString(1)),
                IdempotencyKey.of(rs.getString(2)),
                ClaimState.of(rs.getShort(3)),
                rs.getBytes(4),
                rs.getBytes(5),
                rs.getTimestamp(6).toInstant(),
                EffectStatements.instant(rs, 7),
                EffectStatements.instant(rs, 8),
                rs.getBoolean(9),
                rs.getString(10),
                rs.getBytes(11),
                fenceOrNull,
                EffectStatements.instant(rs, 13),
                lookupsOrNull,
                EffectStatements.instant(rs, 15),
                rs.getString(16));
    }
}
