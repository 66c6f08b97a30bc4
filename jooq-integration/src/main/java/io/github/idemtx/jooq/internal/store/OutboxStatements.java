package io.github.idemtx.jooq.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The outbox table's statements (V7): add a message in the work's transaction, lease a batch of due
 * messages for a relay, mark each delivered, failed or released, the operator's reads, retry and
 * discard, the backlog and the purge. Each is one statement; the caller runs it in the transaction it
 * means (the work's, or one of its own). Times are the server's ({@code clock_timestamp()}), so
 * that relays on different machines agree on leases and backoffs. Immutable and thread-safe.
 */
public final class OutboxStatements {

    /** A message waiting to be delivered. */
    public static final String PENDING = "pending";
    /** A message the destination confirmed. */
    public static final String DELIVERED = "delivered";
    /** A message kept after its last attempt or a permanent refusal, for an operator. */
    public static final String FAILED = "failed";
    /** A message an operator discarded. */
    public static final String DISCARDED = "discarded";

    private static final String ALL = """
            {id}, {message_id}, {scope}, {idem_key}, {name}, {destination}, {ordering_key}, {payload},
            {headers}, {status}, {attempts}, {created_at}, {next_attempt_at}, {last_attempt_at},
            {last_error}, {settled_at}
            """;

    private final String addSql;
    private final String addOrderedSql;
    private final String leaseSql;
    private final String deliveredSql;
    private final String failedSql;
    private final String releaseSql;
    private final String retrySql;
    private final String discardSql;
    private final String findSql;
    private final String pageSql;
    private final String backlogSql;
    private final String purgeSql;

    public OutboxStatements(ClaimTable t) {
        String insert = """
                insert into {outbox} ({message_id}, {scope}, {idem_key}, {name}, {destination}, {ordering_key},
                  {payload}, {headers}, {status}, {created_at}, {attempts}, {next_attempt_at})
                select ?, ?, ?, ?, ?, ?, ?, ?, 'pending', clock_timestamp(), 0, clock_timestamp()
                """;
        this.addSql = t.sql(StatementKind.OUTBOX_ADD, insert);
        // an ordered message takes its ordering key's transaction-level lock first, so that messages of
        // one key get their ids in the order their transactions commit (the relay delivers by id)
        this.addOrderedSql = t.sql(
                StatementKind.OUTBOX_ADD,
                "with lock as materialized (select pg_advisory_xact_lock(hashtextextended(?, 0)))" + insert
                        + " from lock");
        // due, not leased by a live relay, and for an ordered message: no earlier one of its
        // destination and ordering key still to deliver. SKIP LOCKED: a row another relay is leasing
        // right now is left to it; its lease then keeps the others away once committed
        this.leaseSql = t.sql(StatementKind.OUTBOX_LEASE, """
                update {outbox} o set {lease_owner} = ?, {lease_until} = clock_timestamp() + make_interval(secs => ?),
                  {attempts} = o.{attempts} + 1, {last_attempt_at} = clock_timestamp()
                where o.{id} in (
                  select c.{id} from {outbox} c
                  where c.{status} = 'pending' and c.{next_attempt_at} <= clock_timestamp()
                    and (c.{lease_until} is null or c.{lease_until} < clock_timestamp())
                    and (c.{ordering_key} is null or not exists (
                      select 1 from {outbox} e where e.{destination} = c.{destination}
                        and e.{ordering_key} = c.{ordering_key} and e.{id} < c.{id}
                        and e.{status} in ('pending', 'failed')))
                  order by c.{id} limit ? for update skip locked)
                returning o.{id}, o.{message_id}, o.{scope}, o.{idem_key}, o.{name}, o.{destination},
                  o.{ordering_key}, o.{payload}, o.{headers}, o.{status}, o.{attempts}
                """);
        // whoever delivered it: a relay whose lease passed while it sent still delivered it
        this.deliveredSql = t.sql(StatementKind.OUTBOX_MARK, """
                update {outbox} set {status} = 'delivered', {settled_at} = clock_timestamp(), {lease_owner} = null,
                  {lease_until} = null where {id} = ? and {status} = 'pending'
                """);
        // only while the lease is still ours: a relay that took it over decides its fate now
        this.failedSql = t.sql(StatementKind.OUTBOX_MARK, """
                update {outbox} set {status} = ?, {last_error} = ?, {lease_owner} = null, {lease_until} = null,
                  {next_attempt_at} = clock_timestamp() + make_interval(secs => ?)
                where {id} = ? and {lease_owner} = ? and {status} = 'pending'
                """);
        // a leased message never sent (the relay stopped): not an attempt
        this.releaseSql = t.sql(StatementKind.OUTBOX_MARK, """
                update {outbox} set {lease_owner} = null, {lease_until} = null, {attempts} = {attempts} - 1
                where {id} = ? and {lease_owner} = ? and {status} = 'pending'
                """);
        this.retrySql = t.sql(StatementKind.OUTBOX_MARK, """
                update {outbox} set {status} = 'pending', {attempts} = 0, {next_attempt_at} = clock_timestamp(),
                  {lease_owner} = null, {lease_until} = null
                where {message_id} = ? and {status} = 'failed'
                returning {destination}, {attempts}
                """);
        this.discardSql = t.sql(StatementKind.OUTBOX_MARK, """
                update {outbox} set {status} = 'discarded', {settled_at} = clock_timestamp(),
                  {lease_owner} = null, {lease_until} = null
                where {message_id} = ? and {status} in ('pending', 'failed')
                returning {destination}, {attempts}
                """);
        this.findSql = t.sql(StatementKind.OUTBOX_READ, "select " + ALL + " from {outbox} where {message_id} = ?");
        this.pageSql = t.sql(
                StatementKind.OUTBOX_READ,
                "select " + ALL + " from {outbox} where {status} = ? and {id} > ? order by {id} limit ?");
        this.backlogSql = t.sql(StatementKind.OUTBOX_READ, """
                select count(*) filter (where {status} = 'pending'), count(*) filter (where {status} = 'failed'),
                  extract(epoch from clock_timestamp() - min({created_at}) filter (where {status} = 'pending'))
                from {outbox} where {status} in ('pending', 'failed')
                """);
        this.purgeSql = t.sql(StatementKind.OUTBOX_PURGE, """
                delete from {outbox} where {id} in (
                  select {id} from {outbox} where {status} in ('delivered', 'discarded')
                    and {settled_at} < clock_timestamp() - make_interval(secs => ?)
                  order by {settled_at} limit ? for update skip locked)
                """);
    }

    /**
     * Inserts a pending message, due now.
     *
     * @param orderingLock null for an unordered message, else the text its ordering key's lock is hashed from
     */
    public void add(
            Connection c,
            UUID messageId,
            String scope,
            String key,
            String name,
            String destination,
            @Nullable String orderingKey,
            @Nullable String orderingLock,
            byte[] payload,
            @Nullable String headers)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(orderingLock == null ? addSql : addOrderedSql)) {
            int i = 1;
            if (orderingLock != null) {
                ps.setString(i++, orderingLock);
            }
            ps.setObject(i++, messageId);
            ps.setString(i++, scope);
            ps.setString(i++, key);
            ps.setString(i++, name);
            ps.setString(i++, destination);
            setNullable(ps, i++, orderingKey);
            ps.setBytes(i++, payload);
            setNullable(ps, i, headers);
            ps.executeUpdate();
        }
    }

    /** Leases up to {@code limit} due messages to {@code owner} for {@code lease}; in id order. */
    public List<OutboxRow> lease(Connection c, String owner, Duration lease, int limit) throws SQLException {
        List<OutboxRow> rows = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(leaseSql)) {
            ps.setString(1, owner);
            ps.setDouble(2, seconds(lease));
            ps.setInt(3, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new OutboxRow(
                            rs.getLong(1),
                            rs.getObject(2, UUID.class),
                            rs.getString(3),
                            rs.getString(4),
                            rs.getString(5),
                            rs.getString(6),
                            rs.getString(7),
                            rs.getBytes(8),
                            rs.getString(9),
                            rs.getString(10),
                            rs.getInt(11),
                            null,
                            null,
                            null,
                            null,
                            null));
                }
            }
        }
        rows.sort(Comparator.comparingLong(OutboxRow::id));
        return rows;
    }

    /** {@return whether the message was still pending and is now delivered} */
    public boolean delivered(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(deliveredSql)) {
            ps.setLong(1, id);
            return ps.executeUpdate() == 1;
        }
    }

    /**
     * Records a failed attempt while {@code owner} still holds the lease: pending again after
     * {@code backoff}, or failed for good when {@code keep}.
     *
     * @return whether the lease was still the owner's
     */
    public boolean failed(Connection c, long id, String owner, boolean keep, String error, Duration backoff)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(failedSql)) {
            ps.setString(1, keep ? FAILED : PENDING);
            ps.setString(2, error);
            ps.setDouble(3, seconds(backoff));
            ps.setLong(4, id);
            ps.setString(5, owner);
            return ps.executeUpdate() == 1;
        }
    }

    /** Gives back a leased message that was not sent; its attempt does not count. */
    public void release(Connection c, long id, String owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
            ps.setLong(1, id);
            ps.setString(2, owner);
            ps.executeUpdate();
        }
    }

    /** What an operator's action changed: the message's destination and attempts. */
    public record Acted(String destination, int attempts) {}

    /** An operator's retry of a failed message; null if none was failed. */
    public @Nullable Acted retry(Connection c, UUID messageId) throws SQLException {
        return operatorAction(c, retrySql, messageId);
    }

    /** An operator's discard of a pending or failed message; null if none was pending or failed. */
    public @Nullable Acted discard(Connection c, UUID messageId) throws SQLException {
        return operatorAction(c, discardSql, messageId);
    }

    private static @Nullable Acted operatorAction(Connection c, String sql, UUID messageId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, messageId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new Acted(rs.getString(1), rs.getInt(2)) : null;
            }
        }
    }

    /** {@return the message with this id, or null} */
    public @Nullable OutboxRow find(Connection c, UUID messageId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(findSql)) {
            ps.setObject(1, messageId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? full(rs) : null;
            }
        }
    }

    /** {@return up to {@code limit} messages of {@code status} after the id {@code afterId}, in id order} */
    public List<OutboxRow> page(Connection c, String status, long afterId, int limit) throws SQLException {
        List<OutboxRow> rows = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(pageSql)) {
            ps.setString(1, status);
            ps.setLong(2, afterId);
            ps.setInt(3, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(full(rs));
                }
            }
        }
        return rows;
    }

    /** {@return pending count, failed count, and the oldest pending message's age (null if none)} */
    public Backlog backlog(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(backlogSql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            long pending = rs.getLong(1);
            long failed = rs.getLong(2);
            double age = rs.getDouble(3);
            @Nullable Duration oldest = rs.wasNull() ? null : Duration.ofNanos(Math.max(0, (long) (age * 1e9)));
            return new Backlog(pending, failed, oldest);
        }
    }

    /** The backlog's figures. */
    public record Backlog(
            long pending, long failed, @Nullable Duration oldestPendingAge) {}

    /** {@return how many delivered or discarded messages settled before {@code retention} ago were deleted} */
    public int purge(Connection c, Duration retention, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(purgeSql)) {
            ps.setDouble(1, seconds(retention));
            ps.setInt(2, limit);
            return ps.executeUpdate();
        }
    }

    private static OutboxRow full(ResultSet rs) throws SQLException {
        return new OutboxRow(
                rs.getLong(1),
                rs.getObject(2, UUID.class),
                rs.getString(3),
                rs.getString(4),
                rs.getString(5),
                rs.getString(6),
                rs.getString(7),
                rs.getBytes(8),
                rs.getString(9),
                rs.getString(10),
                rs.getInt(11),
                instant(rs, 12),
                instant(rs, 13),
                instant(rs, 14),
                rs.getString(15),
                instant(rs, 16));
    }

    private static @Nullable Instant instant(ResultSet rs, int column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }

    private static void setNullable(PreparedStatement ps, int i, @Nullable String value) throws SQLException {
        if (value == null) {
            ps.setNull(i, Types.VARCHAR);
        } else {
            ps.setString(i, value);
        }
    }

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }
}
