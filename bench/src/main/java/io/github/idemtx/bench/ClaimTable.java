package io.github.idemtx.bench;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * The library's claim table as the bench sees it: its size, and a fast bulk load of rows shaped
 * like real ones (random version-4-looking keys spread over the bench's scopes, SHA-256
 * fingerprints, a result of the bench's size; half expired, half live).
 */
final class ClaimTable {

    /** The table's size when a segment starts. */
    record Stats(long rows, long bytes, long expiredRows) {}

    private final DataSource pool;
    private final String schema;
    private final BenchContext.Shared shared;

    ClaimTable(DataSource pool, String schema, BenchContext.Shared shared) {
        this.pool = pool;
        this.schema = schema;
        this.shared = shared;
    }

    String table() {
        return schema + ".idempotency_claim";
    }

    /** Rows as the bench counts them (every insert and purge it made), bytes with indexes and TOAST. */
    Stats stats() {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_total_relation_size('" + table() + "')")) {
            rs.next();
            return new Stats(shared.claimRows.get(), rs.getLong(1), shared.expiredRows.get());
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read the claim table's size", e);
        }
    }

    /** Counts the rows exactly (slow on big tables) and resets the bench's count to it. */
    long recount() {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table())) {
            rs.next();
            long n = rs.getLong(1);
            shared.claimRows.set(n);
            return n;
        } catch (SQLException e) {
            throw new IllegalStateException("cannot count the claim table", e);
        }
    }

    void truncate() {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            // no ANALYZE: TRUNCATE leaves the statistics unknown, which makes the planner assume a
            // table of some size; "0 rows" from an ANALYZE would, with this server's autovacuum off,
            // stay in the server-side prepared plans as a sequential scan while the table grows
            s.execute("TRUNCATE " + table());
            s.execute("CHECKPOINT"); // the next segment starts a checkpoint cycle, as after a load
        } catch (SQLException e) {
            throw new IllegalStateException("cannot truncate the claim table", e);
        }
        shared.claimRows.set(0);
        shared.expiredRows.set(0);
        shared.clearCompleted();
    }

    /**
     * Adds rows until the table holds about {@code target} (nothing if it already does): half of the
     * new rows expired (completed 25 to 48 hours ago, TTL 24 h), half live (completed within the
     * last 23 hours), inserted oldest first as a real table would have received them.
     *
     * <p>Fast path: the two indexes are dropped, the rows inserted with {@code generate_series} in
     * one-million-row statements, the indexes rebuilt from their own saved definitions (so the table
     * ends up exactly as the migration made it), then VACUUM ANALYZE and a CHECKPOINT, so that the
     * measurement starts on a settled table at the start of a checkpoint cycle.
     *
     * @return seconds it took
     */
    double loadTo(long target, Bench.Database db, Consumer<String> log) {
        long current = shared.claimRows.get();
        long add = target - current;
        if (add <= 0) {
            return 0;
        }
        long started = System.nanoTime();
        long expired = add / 2;
        long live = add - expired;
        String seed = Long.toHexString(ThreadLocalRandom.current().nextLong());
        // a dedicated connection: the session settings below must not reach the pool
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("SET maintenance_work_mem = '1GB'");
            List<String> recreate = new ArrayList<>();
            List<String> dropConstraints = new ArrayList<>();
            try (ResultSet rs =
                    s.executeQuery("SELECT 'ALTER TABLE " + table() + " ADD CONSTRAINT ' || quote_ident(conname)"
                            + " || ' ' || pg_get_constraintdef(oid), quote_ident(conname) FROM pg_constraint"
                            + " WHERE conrelid = '" + table() + "'::regclass AND contype = 'p'")) {
                while (rs.next()) {
                    recreate.add(rs.getString(1));
                    dropConstraints.add(rs.getString(2));
                }
            }
            List<String> dropIndexes = new ArrayList<>();
            try (ResultSet rs = s.executeQuery(
                    "SELECT pg_get_indexdef(i.indexrelid), quote_ident(n.nspname) || '.' || quote_ident(ic.relname)"
                            + " FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_namespace n ON n.oid = ic.relnamespace"
                            + " WHERE i.indrelid = '" + table() + "'::regclass AND NOT i.indisprimary")) {
                while (rs.next()) {
                    recreate.add(rs.getString(1));
                    dropIndexes.add(rs.getString(2));
                }
            }
            for (String constraint : dropConstraints) {
                s.execute("ALTER TABLE " + table() + " DROP CONSTRAINT " + constraint);
            }
            for (String index : dropIndexes) {
                s.execute("DROP INDEX " + index);
            }
            long done = 0;
            // expired first (older), then live; each chunk spread evenly over its time span
            done += insertChunks(s, seed, "e", expired, "48 hours", "23 hours", log, done, add);
            done += insertChunks(s, seed, "l", live, "23 hours", "23 hours", log, done, add);
            log.accept("    rebuilding indexes");
            for (String ddl : recreate) {
                s.execute(ddl);
            }
            log.accept("    VACUUM ANALYZE, CHECKPOINT");
            s.execute("VACUUM (ANALYZE) " + table());
            s.execute("CHECKPOINT");
        } catch (SQLException e) {
            throw new IllegalStateException("loading the claim table failed", e);
        }
        shared.claimRows.addAndGet(add);
        shared.expiredRows.addAndGet(expired);
        return (System.nanoTime() - started) / 1e9;
    }

    /**
     * Inserts {@code count} rows whose created_at runs evenly from now() - {@code from} over a span
     * of {@code span}. Expired rows: from 48 h ago to 25 h ago; live: from 23 h ago to now.
     */
    private long insertChunks(
            Statement s,
            String seed,
            String tag,
            long count,
            String from,
            String span,
            Consumer<String> log,
            long doneBefore,
            long total)
            throws SQLException {
        final long chunk = 1_000_000;
        long done = 0;
        while (done < count) {
            long n = Math.min(chunk, count - done);
            s.executeUpdate("INSERT INTO " + table()
                    + " (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)"
                    + " SELECT 'tenant-' || lpad((i % " + BenchContext.SCOPES + ")::text, 2, '0'),"
                    + "        md5('" + seed + tag + "' || i)::uuid::text,"
                    + "        sha256(convert_to('" + seed + tag + "' || i, 'UTF8')),"
                    + "        1,"
                    + "        convert_to(i || '|acct-000001|acct-000002|1.00', 'UTF8'),"
                    + "        t, t + interval '3 milliseconds', t + interval '24 hours'"
                    + " FROM (SELECT i, now() - interval '" + from + "' + (i::float8 / " + count + ") * interval '"
                    + span + "' AS t"
                    + "       FROM generate_series(" + (done + 1) + ", " + (done + n) + ") i) g");
            done += n;
            log.accept("    loaded %,d of %,d rows".formatted(doneBefore + done, total));
        }
        return done;
    }
}
