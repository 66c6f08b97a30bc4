package io.github.idemtx.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.LocalDate;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The claim table of one schema partitioned by key day, as PostgreSQL's catalog has it: the names of
 * the table and of its day partitions, what the catalog says of them, and the statements that add,
 * attach and drop one. Each method runs on the connection it is given, in its transaction.
 */
final class PartitionCatalog {

    private final String schema;

    PartitionCatalog(String schema) {
        this.schema = schema;
    }

    /** The claim table, its schema quoted (a plain identifier may hold capitals, which Flyway keeps). */
    String table() {
        return "\"" + schema + "\"." + IdempotencySchema.CLAIM_TABLE;
    }

    private String partition(LocalDate day) {
        return "\"" + schema + "\"." + IdempotencySchema.CLAIM_TABLE + "_" + KeyDay.format(day);
    }

    /** Whether the table is partitioned, by key day; false when it is not partitioned at all. */
    boolean partitioned(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT pg_get_partkeydef(c.oid) FROM pg_class c WHERE c.oid = to_regclass(?) AND c.relkind = 'p'")) {
            ps.setString(1, table());
            try (ResultSet r = ps.executeQuery()) {
                if (!r.next()) {
                    return false;
                }
                String key = r.getString(1);
                if (!"RANGE (idem_key)".equals(key)) {
                    throw new IllegalStateException("the claim table " + table() + " is partitioned by " + key
                            + ", not by RANGE (idem_key): ClaimPartitions manages only the layout it makes");
                }
                return true;
            }
        }
    }

    void requirePartitioned(Connection c) throws SQLException {
        if (!partitioned(c)) {
            throw new IllegalStateException("the claim table " + table() + " is not partitioned by key day:"
                    + " create it with ClaimPartitions.migrate()");
        }
    }

    /**
     * Makes the table, which must hold no row, partitioned by key day, under a lock that stops the
     * claims; false when another instance had done it meanwhile.
     */
    boolean convert(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("LOCK TABLE " + table() + " IN ACCESS EXCLUSIVE MODE");
        }
        if (partitioned(c)) {
            return false; // another instance converted it meanwhile
        }
        try (Statement s = c.createStatement();
                ResultSet r = s.executeQuery("SELECT count(*) FROM (SELECT 1 FROM " + table() + " LIMIT 1001) x")) {
            r.next();
            long rows = r.getLong(1);
            if (rows > 0) {
                throw new IllegalStateException("the claim table " + table() + " holds "
                        + (rows > 1000 ? "more than 1000" : String.valueOf(rows))
                        + " rows, and only an empty one is partitioned by key day: migrate into a new schema"
                        + " (and move the traffic there once the old one's answers expired), or empty it");
            }
        }
        try (Statement s = c.createStatement()) {
            for (String sql : TableDdl.read(c, table()).partitionByKey(table())) {
                s.execute(sql);
            }
        }
        return true;
    }

    /** Creates {@code day}'s partition as a table and then attaches it, which takes no lock that stops the claims. */
    void create(Connection c, LocalDate day) throws SQLException {
        String partition = partition(day);
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + partition + " (LIKE " + table()
                    + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) WITH (fillfactor = 90)");
            // the partition's own key, named after the parent's: PostgreSQL names a unique
            // violation by the partition's index, and the library recognises its key by the prefix
            s.execute("ALTER TABLE " + partition + " ADD CONSTRAINT " + IdempotencySchema.CLAIM_TABLE + "_pk_"
                    + KeyDay.format(day) + " PRIMARY KEY (scope, idem_key)");
            s.execute("ALTER TABLE " + table() + " ATTACH PARTITION " + partition + bounds(day));
        }
    }

    /** {@return the detach of {@code partition} that waits for every transaction that could write to it} */
    String detachConcurrently(String partition) {
        return "ALTER TABLE " + table() + " DETACH PARTITION " + partition + " CONCURRENTLY";
    }

    /** {@return the end of a detach of {@code partition} that an earlier one began} */
    String finalizeDetach(String partition) {
        return "ALTER TABLE " + table() + " DETACH PARTITION " + partition + " FINALIZE";
    }

    /** Attaches the detached {@code partition} of {@code day} again. */
    void attach(Connection c, LocalDate day, String partition) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("ALTER TABLE " + table() + " ATTACH PARTITION " + partition + bounds(day));
        }
    }

    /** Drops the detached {@code partition}. */
    static void drop(Connection c, String partition) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("DROP TABLE " + partition);
        }
    }

    private static String bounds(LocalDate day) {
        return " FOR VALUES FROM ('" + KeyDay.format(day) + "') TO ('" + KeyDay.format(day.plusDays(1)) + "')";
    }

    /** The partitions attached, by day, oldest first: their qualified names. */
    Map<LocalDate, String> partitions(Connection c) throws SQLException {
        return partitions(c, false);
    }

    /** The partitions whose detach is pending, by day, oldest first: their qualified names. */
    Map<LocalDate, String> pendingDetaches(Connection c) throws SQLException {
        return partitions(c, true);
    }

    private Map<LocalDate, String> partitions(Connection c, boolean detachPending) throws SQLException {
        Map<LocalDate, String> byDay = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT p.relname, quote_ident(n.nspname) || '.' ||"
                + " quote_ident(p.relname) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid"
                + " JOIN pg_namespace n ON n.oid = p.relnamespace WHERE i.inhparent = to_regclass(?)"
                + " AND i.inhdetachpending = ?")) {
            ps.setString(1, table());
            ps.setBoolean(2, detachPending);
            try (ResultSet r = ps.executeQuery()) {
                while (r.next()) {
                    String name = r.getString(1);
                    String suffix = name.substring(Math.max(0, name.length() - KeyDay.LENGTH));
                    try {
                        byDay.put(KeyDay.parse(suffix), r.getString(2));
                    } catch (DateTimeParseException e) {
                        throw new IllegalStateException(
                                "the claim table " + table() + " has a partition " + name
                                        + " that is not named by its day; ClaimPartitions manages only the"
                                        + " partitions it made",
                                e);
                    }
                }
            }
        }
        return byDay;
    }

    /** Why {@code partition} may not go yet: the rows that can still answer; empty if none. */
    static Optional<String> stillAnswers(Connection c, String partition) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet r = s.executeQuery("SELECT count(*), count(*) FILTER (WHERE state IN (3, 4)),"
                        + " count(*) FILTER (WHERE state = 4) FROM (SELECT state FROM " + partition
                        + " WHERE expires_at > now() LIMIT 1000) x")) {
            r.next();
            long live = r.getLong(1);
            if (live == 0) {
                return Optional.empty();
            }
            return Optional.of((live >= 1000 ? "at least 1000 rows" : live == 1 ? "1 row" : live + " rows")
                    + " not expired yet ("
                    + r.getLong(2) + " external effects in flight or unsettled, " + r.getLong(3)
                    + " of them needing reconciliation)");
        }
    }
}
