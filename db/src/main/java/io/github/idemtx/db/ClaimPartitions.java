package io.github.idemtx.db;

import io.github.idemtx.core.IdempotencyKey;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.format.ResolverStyle;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * The claim table range-partitioned by the day its keys carry, so that retention drops a whole
 * day instead of deleting its rows one by one (docs/scaling.md, "Retention by partition").
 *
 * <p>Every key then begins with its day in UTC, {@code yyyyMMdd}: the day the <em>intent</em> was
 * created, carried with it across retries (never the attempt's time), so that every retry of an
 * intent lands in the same partition. {@link #key(Instant, String)} builds such a key. The table is
 * partitioned by {@code idem_key} itself under the unchanged primary key, one partition per day
 * ({@code idempotency_claim_20261203} holds the keys from {@code "20261203"} up to, not including,
 * {@code "20261204"}). A key is <em>accepted</em> while its day has not ended more than
 * {@link Builder#acceptFor} ago, and at most one day ahead of the clock (a client's clock a little
 * fast); {@link #requireAccepted} refuses the others before anything is written, and an
 * {@code IdempotentTransaction} or {@code ExternalEffect} given these partitions calls it first.
 *
 * <pre>{@code
 * ClaimPartitions partitions = ClaimPartitions.byKeyDay(dataSource)
 *         .schema("payments")
 *         .acceptFor(Duration.ofDays(2))   // the longest time an intent is retried
 *         .build();
 * partitions.migrate();                    // instead of IdempotencySchema.migrate: converts an empty table
 * // daily, from a scheduler:
 * partitions.createAhead();                // the days to come
 * partitions.dropBehind(policyTtl);        // the days nothing in can still answer
 * }</pre>
 *
 * <p>A partition is dropped only when its day ended more than {@code acceptFor} plus
 * {@link Builder#longestTransaction} plus the TTL ago, <em>and</em> none of its rows can still
 * answer: none expires in the future, which covers external effects in flight or waiting for
 * reconciliation (they never expire) and a joined call's row written by a transaction that committed
 * late. It is detached with {@code DETACH PARTITION ... CONCURRENTLY} (no lock that stops the
 * claims, and it waits for every transaction that could still write to it), checked again, and only
 * then dropped; a row that arrived in between puts it back.
 *
 * <p>Thread-safe. {@link #createAhead} and {@link #dropBehind} hold a session advisory lock per
 * schema while they work, so instances that run the same scheduled job at once take turns; they
 * use two connections of the data source at a time (give them one straight to the server, not
 * through a transaction-mode pooler, as for migrations).
 */
public final class ClaimPartitions {

    private static final DateTimeFormatter DAY =
            DateTimeFormatter.ofPattern("uuuuMMdd", Locale.ROOT).withResolverStyle(ResolverStyle.STRICT);

    /** The first key of the maintenance lock's two-key advisory lock ({@link #exclusively}). */
    private static final int MAINTENANCE_LOCK = 0x1de7a11;

    /** How many characters of a key name its day. */
    public static final int PREFIX_LENGTH = 8;

    private final DataSource dataSource;
    private final String schema;
    private final Duration acceptFor;
    private final int ahead;
    private final Duration longestTransaction;
    private final Duration lockTimeout;
    private final Clock clock;

    private ClaimPartitions(Builder b) {
        this.dataSource = b.dataSource;
        this.schema = b.schema;
        this.acceptFor = b.acceptFor;
        this.ahead = b.ahead;
        this.longestTransaction = b.longestTransaction;
        this.lockTimeout = b.lockTimeout;
        this.clock = b.clock;
    }

    /**
     * Starts the configuration of a claim table partitioned by the day its keys carry.
     *
     * @param dataSource where the claim table is; used by the maintenance methods only
     * @return a builder with the defaults: schema {@value IdempotencySchema#DEFAULT_SCHEMA}, keys
     *     accepted for 2 days after their day, 7 days created ahead, 1 hour for the longest
     *     transaction, DDL waiting at most 5 s for a lock, the system clock
     * @throws NullPointerException if {@code dataSource} is null
     */
    public static Builder byKeyDay(DataSource dataSource) {
        return new Builder(Objects.requireNonNull(dataSource, "dataSource must not be null"));
    }

    /**
     * A key for an intent created at {@code intentCreated}: its UTC day, {@code -}, then {@code rest}.
     *
     * @param intentCreated when the intent was created: the same for every retry of it
     * @param rest what makes the key unique within its day (a UUID, a derived key)
     * @return the key, for example {@code 20261203-6f1c...}
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code rest} is empty, or the key would break
     *     {@link IdempotencyKey}'s rules
     */
    public static IdempotencyKey key(Instant intentCreated, String rest) {
        Objects.requireNonNull(intentCreated, "intentCreated must not be null");
        Objects.requireNonNull(rest, "rest must not be null");
        if (rest.isEmpty()) {
            throw new IllegalArgumentException("rest must not be empty: it makes the key unique within its day");
        }
        return IdempotencyKey.of(prefix(intentCreated) + "-" + rest);
    }

    /**
     * The UTC day {@code instant} falls in, as keys carry it.
     *
     * @param instant an instant
     * @return {@code yyyyMMdd}
     */
    public static String prefix(Instant instant) {
        return DAY.format(instant.atOffset(ZoneOffset.UTC).toLocalDate());
    }

    /**
     * The day a key carries.
     *
     * @param key a key
     * @return its day
     * @throws IllegalArgumentException if it does not begin with a valid {@code yyyyMMdd}
     */
    public static LocalDate dayOf(IdempotencyKey key) {
        String value = key.value();
        if (value.length() < PREFIX_LENGTH) {
            throw notADay(value);
        }
        try {
            return LocalDate.parse(value.substring(0, PREFIX_LENGTH), DAY);
        } catch (DateTimeParseException e) {
            throw notADay(value);
        }
    }

    private static IllegalArgumentException notADay(String value) {
        return new IllegalArgumentException("key '" + abbreviate(value) + "' does not begin with the day of its intent"
                + " (yyyyMMdd, UTC), which the claim table partitioned by day needs to know where it belongs:"
                + " build it with ClaimPartitions.key(intentCreated, rest)");
    }

    private static String abbreviate(String value) {
        return value.length() <= 40 ? value : value.substring(0, 40) + "...";
    }

    /**
     * Refuses a key this table does not accept now, before anything is written.
     *
     * @param key the key of a call
     * @throws NullPointerException if {@code key} is null
     * @throws IllegalArgumentException if it carries no day, or a day outside the days accepted now:
     *     ended more than {@code acceptFor} ago (its partition may be gone, and an answer with it), or
     *     more than one day ahead
     */
    public void requireAccepted(IdempotencyKey key) {
        Objects.requireNonNull(key, "key must not be null");
        LocalDate day = dayOf(key);
        Instant now = clock.instant();
        LocalDate first = firstAccepted(now);
        LocalDate last = today(now).plusDays(1);
        if (day.isBefore(first) || day.isAfter(last)) {
            throw new IllegalArgumentException("key '" + abbreviate(key.value()) + "' belongs to " + day
                    + ", outside the days the claim table accepts now (" + first + " to " + last + ", UTC):"
                    + (day.isBefore(first)
                            ? " an intent is retried for at most " + acceptFor + " after its day; a retry this late"
                                    + " could find its day's answers dropped"
                            : " a key's day is the day its intent was created, not one in the future"));
        }
    }

    private LocalDate firstAccepted(Instant now) {
        // a key's day ends at the next midnight: accepted while now < end + acceptFor
        return today(now.minus(acceptFor));
    }

    private static LocalDate today(Instant now) {
        return now.atOffset(ZoneOffset.UTC).toLocalDate();
    }

    /** {@return the schema the claim table is in} */
    public String schema() {
        return schema;
    }

    /**
     * Applies the pending migrations ({@link IdempotencySchema#migrate(DataSource, String)}), makes
     * the claim table partitioned by key day if it is not yet, and {@link #createAhead creates} the
     * partitions of the days accepted now and the days ahead. Safe at every start-up.
     *
     * @return the days whose partitions were created
     * @throws IllegalStateException if the table is not partitioned yet and holds rows (it is
     *     converted only while empty; nothing was changed), or a lock was not had in time
     */
    public List<LocalDate> migrate() {
        IdempotencySchema.migrate(dataSource, schema);
        // partitioned already (every start-up after the first): no lock that would stop the claims
        if (!inTransaction(this::partitioned)) {
            convert();
        }
        return createAhead();
    }

    private void convert() {
        inTransaction(c -> {
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
            List<String> ddl = TableDdl.read(c, table()).partitionByKey(table());
            try (Statement s = c.createStatement()) {
                for (String sql : ddl) {
                    s.execute(sql);
                }
            }
            return true;
        });
    }

    /**
     * Creates the partitions of every day accepted now through {@code ahead} days after today that
     * do not exist yet. Each is created as a table and then attached, which takes no lock that stops
     * the claims.
     *
     * @return the days whose partitions were created, oldest first
     * @throws IllegalStateException if the claim table is not partitioned by key day, or a lock was
     *     not had within the lock timeout
     */
    public List<LocalDate> createAhead() {
        return exclusively(List.of(), this::createAheadAlone);
    }

    private List<LocalDate> createAheadAlone() {
        Instant now = clock.instant();
        LocalDate last = today(now).plusDays(ahead);
        List<LocalDate> created = new ArrayList<>();
        for (LocalDate day = firstAccepted(now); !day.isAfter(last); day = day.plusDays(1)) {
            LocalDate d = day;
            boolean made = inTransaction(c -> {
                requirePartitioned(c);
                if (partitions(c).containsKey(d)) {
                    return false;
                }
                String partition = partition(d);
                try (Statement s = c.createStatement()) {
                    s.execute("CREATE TABLE " + partition + " (LIKE " + table()
                            + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) WITH (fillfactor = 90)");
                    // the partition's own key, named after the parent's: PostgreSQL names a unique
                    // violation by the partition's index, and the library recognises its key by the prefix
                    s.execute("ALTER TABLE " + partition + " ADD CONSTRAINT " + IdempotencySchema.CLAIM_TABLE + "_pk_"
                            + DAY.format(d) + " PRIMARY KEY (scope, idem_key)");
                    s.execute("ALTER TABLE " + table() + " ATTACH PARTITION " + partition + bounds(d));
                }
                return true;
            });
            if (made) {
                created.add(d);
            }
        }
        return created;
    }

    /**
     * What {@link #dropBehind} did: the days dropped, and the days old enough that were kept, with why.
     *
     * @param dropped the days whose partitions were dropped, oldest first
     * @param kept the days past the window whose partitions still hold a row that can answer, with
     *     what holds them
     */
    public record Retention(List<LocalDate> dropped, Map<LocalDate, String> kept) {
        /** Copies the collections. */
        public Retention {
            dropped = List.copyOf(dropped);
            kept = java.util.Collections.unmodifiableMap(new TreeMap<>(kept)); // oldest day first
        }
    }

    /**
     * Drops the partitions whose day ended more than {@code acceptFor} + {@code longestTransaction} +
     * {@code ttl} ago and none of whose rows can still answer. Also finishes a detach an earlier call
     * could not finish (its connection lost midway).
     *
     * @param ttl the longest time to live of the policies writing to this table
     * @return what was dropped and what was kept
     * @throws NullPointerException if {@code ttl} is null
     * @throws IllegalArgumentException if {@code ttl} is negative
     * @throws IllegalStateException if the claim table is not partitioned by key day, or a statement
     *     failed (the driver's error is the cause)
     */
    public Retention dropBehind(Duration ttl) {
        Objects.requireNonNull(ttl, "ttl must not be null");
        if (ttl.isNegative()) {
            throw new IllegalArgumentException("ttl must not be negative, was " + ttl);
        }
        return exclusively(new Retention(List.of(), Map.of()), () -> dropBehindAlone(ttl));
    }

    private Retention dropBehindAlone(Duration ttl) {
        Instant now = clock.instant();
        Instant endedBefore = now.minus(acceptFor).minus(longestTransaction).minus(ttl);
        List<LocalDate> dropped = new ArrayList<>();
        Map<LocalDate, String> kept = new LinkedHashMap<>();
        Map<LocalDate, String> candidates = inTransaction(c -> {
            requirePartitioned(c);
            Map<LocalDate, String> old = new LinkedHashMap<>();
            partitions(c).forEach((day, name) -> {
                if (!day.plusDays(1).atStartOfDay().toInstant(ZoneOffset.UTC).isAfter(endedBefore)) {
                    old.put(day, name);
                }
            });
            return old;
        });
        // a detach an earlier call began and did not finish (its connection lost in the second step)
        for (Map.Entry<LocalDate, String> e : pendingDetaches().entrySet()) {
            detach("ALTER TABLE " + table() + " DETACH PARTITION " + e.getValue() + " FINALIZE");
            settleDetached(e.getKey(), e.getValue(), dropped, kept);
        }
        for (Map.Entry<LocalDate, String> e : candidates.entrySet()) {
            String partition = e.getValue();
            Optional<String> holds = inTransaction(c -> stillAnswers(c, partition));
            if (holds.isPresent()) {
                kept.put(e.getKey(), holds.get());
                continue;
            }
            // CONCURRENTLY: no lock that stops the claims; it waits for every transaction that could write here
            detach("ALTER TABLE " + table() + " DETACH PARTITION " + partition + " CONCURRENTLY");
            settleDetached(e.getKey(), partition, dropped, kept);
        }
        return new Retention(dropped, kept);
    }

    /**
     * The tables of the current partitions, oldest day first, schema-qualified: what a purge runs on
     * one by one.
     *
     * @param connection an open connection to the claim table's database; left open, its transaction
     *     state untouched but for this one query
     * @return the partitions' qualified names; empty if the table is not partitioned; unmodifiable
     * @throws SQLException if the query fails
     * @throws IllegalStateException if a partition is not named by its day (not one this class made)
     */
    public List<String> tables(Connection connection) throws SQLException {
        return List.copyOf(partitions(connection).values());
    }

    /** Why {@code partition} may not go yet: the rows that can still answer; empty if none. */
    private static Optional<String> stillAnswers(Connection c, String partition) throws SQLException {
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

    /**
     * A detached partition: dropped if none of its rows can answer, else (a joined caller's row
     * committed between the check and the detach) attached again and kept.
     */
    private void settleDetached(LocalDate day, String partition, List<LocalDate> dropped, Map<LocalDate, String> kept) {
        Optional<String> arrived = inTransaction(c -> {
            Optional<String> late = stillAnswers(c, partition);
            try (Statement s = c.createStatement()) {
                s.execute(
                        late.isPresent()
                                ? "ALTER TABLE " + table() + " ATTACH PARTITION " + partition + bounds(day)
                                : "DROP TABLE " + partition);
            }
            return late;
        });
        if (arrived.isEmpty()) {
            dropped.add(day);
        } else {
            kept.put(day, arrived.get());
        }
    }

    private static String bounds(LocalDate day) {
        return " FOR VALUES FROM ('" + DAY.format(day) + "') TO ('" + DAY.format(day.plusDays(1)) + "')";
    }

    private Map<LocalDate, String> pendingDetaches() {
        return inTransaction(c -> partitions(c, true));
    }

    private Map<LocalDate, String> partitions(Connection c) throws SQLException {
        return partitions(c, false);
    }

    /** The partitions by day: those attached, or those whose detach is pending. */
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
                    String suffix = name.substring(Math.max(0, name.length() - PREFIX_LENGTH));
                    try {
                        byDay.put(LocalDate.parse(suffix, DAY), r.getString(2));
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

    private boolean partitioned(Connection c) throws SQLException {
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

    private void requirePartitioned(Connection c) throws SQLException {
        if (!partitioned(c)) {
            throw new IllegalStateException("the claim table " + table() + " is not partitioned by key day:"
                    + " create it with ClaimPartitions.migrate()");
        }
    }

    /** The claim table, its schema quoted (a plain identifier may hold capitals, which Flyway keeps). */
    private String table() {
        return "\"" + schema + "\"." + IdempotencySchema.CLAIM_TABLE;
    }

    private String partition(LocalDate day) {
        return "\"" + schema + "\"." + IdempotencySchema.CLAIM_TABLE + "_" + DAY.format(day);
    }

    /**
     * Runs {@code body} while this schema's maintenance lock is held: a session advisory lock (the
     * two-key form, apart from the claims' one-key locks) on a connection of its own, so that two
     * instances running the same job at once never race over one partition. When another instance
     * holds it, returns {@code whenBusy} at once: that one is doing the work.
     */
    private <R> R exclusively(R whenBusy, java.util.function.Supplier<R> body) {
        try (Connection c = dataSource.getConnection()) {
            boolean locked;
            try (Statement s = c.createStatement();
                    ResultSet r = s.executeQuery(
                            "SELECT pg_try_advisory_lock(" + MAINTENANCE_LOCK + ", " + schema.hashCode() + ")")) {
                locked = r.next() && r.getBoolean(1);
            }
            if (!locked) {
                return whenBusy; // another instance is at it now
            }
            R result;
            boolean unlocked = false;
            try {
                result = body.get();
            } finally {
                unlocked = unlock(c);
            }
            if (!unlocked) {
                throw new IllegalStateException("the maintenance lock of " + table() + " was not held at its end:"
                        + " the data source hands out connections through a transaction-mode pooler; give"
                        + " ClaimPartitions one straight to the server");
            }
            return result;
        } catch (SQLException e) {
            throw failed(e);
        }
    }

    private boolean unlock(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet r = s.executeQuery(
                        "SELECT pg_advisory_unlock(" + MAINTENANCE_LOCK + ", " + schema.hashCode() + ")")) {
            return r.next() && r.getBoolean(1);
        }
    }

    @FunctionalInterface
    private interface Work<R> {
        R apply(Connection c) throws SQLException;
    }

    private <R> R inTransaction(Work<R> work) {
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                try (Statement s = c.createStatement()) {
                    s.execute("SET LOCAL lock_timeout = '" + lockTimeout.toMillis() + "ms'");
                }
                R result = work.apply(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(auto);
            }
        } catch (SQLException e) {
            throw failed(e);
        }
    }

    /**
     * A detach, which cannot run in a transaction block. It waits for every transaction that has
     * used the claim table (those of other days too) but stops no claim: bounded by the longest
     * transaction, not the lock timeout. Left pending when that runs out; the next call finishes it.
     */
    private void detach(String sql) {
        long bound = Math.max(lockTimeout.toMillis(), longestTransaction.toMillis());
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            try (Statement s = c.createStatement()) {
                c.setAutoCommit(true);
                s.execute("SET lock_timeout = '" + bound + "ms'");
                try {
                    s.execute(sql);
                } finally {
                    try {
                        s.execute("RESET lock_timeout");
                    } finally {
                        c.setAutoCommit(auto);
                    }
                }
            }
        } catch (SQLException e) {
            throw failed(e);
        }
    }

    private IllegalStateException failed(SQLException e) {
        String why = "55P03".equals(e.getSQLState())
                ? "a lock was not had within " + lockTimeout + " (a long transaction holds the claim table)"
                : e.getMessage();
        return new IllegalStateException(
                "maintaining the partitions of " + table() + " failed: " + why
                        + (e.getSQLState() == null ? "" : " (SQLSTATE " + e.getSQLState() + ")"),
                e);
    }

    /** Configures {@link ClaimPartitions}; not thread-safe. */
    public static final class Builder {
        private final DataSource dataSource;
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;
        private Duration acceptFor = Duration.ofDays(2);
        private int ahead = 7;
        private Duration longestTransaction = Duration.ofHours(1);
        private Duration lockTimeout = Duration.ofSeconds(5);
        private Clock clock = Clock.systemUTC();

        private Builder(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        /**
         * Names the claim table's schema.
         *
         * @param schema the claim table's schema, a plain identifier
         * @return this builder
         * @throws IllegalArgumentException if it is not one ({@link IdempotencySchema#requireSchemaName})
         */
        public Builder schema(String schema) {
            this.schema = IdempotencySchema.requireSchemaName(schema);
            return this;
        }

        /**
         * Sets how long a key is accepted after its day.
         *
         * @param acceptFor how long after its day ends a key is still accepted: the longest time an
         *     intent is retried; between 0 and 365 days
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder acceptFor(Duration acceptFor) {
            Objects.requireNonNull(acceptFor, "acceptFor must not be null");
            if (acceptFor.isNegative() || acceptFor.compareTo(Duration.ofDays(365)) > 0) {
                throw new IllegalArgumentException("acceptFor must be between 0 and 365 days, was " + acceptFor);
            }
            this.acceptFor = acceptFor;
            return this;
        }

        /**
         * Sets how far ahead partitions are created.
         *
         * @param days how many days after today {@link #createAhead} prepares, 1 to 90: at least as
         *     many as the days its scheduled job may miss
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder ahead(int days) {
            if (days < 1 || days > 90) {
                throw new IllegalArgumentException("ahead must be between 1 and 90 days, was " + days);
            }
            this.ahead = days;
            return this;
        }

        /**
         * Sets the longest transaction that joins a call.
         *
         * @param longest the longest a transaction that joins a call may stay open (the joined call
         *     writes its row when the caller commits); added to the time before a day may be dropped
         * @return this builder
         * @throws IllegalArgumentException if negative
         */
        public Builder longestTransaction(Duration longest) {
            Objects.requireNonNull(longest, "longestTransaction must not be null");
            if (longest.isNegative()) {
                throw new IllegalArgumentException("longestTransaction must not be negative, was " + longest);
            }
            this.longestTransaction = longest;
            return this;
        }

        /**
         * Sets how long a maintenance statement waits for a lock.
         *
         * @param lockTimeout how long a maintenance statement waits for a lock before it fails,
         *     1 ms to 10 minutes
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder lockTimeout(Duration lockTimeout) {
            Objects.requireNonNull(lockTimeout, "lockTimeout must not be null");
            if (lockTimeout.toMillis() < 1 || lockTimeout.compareTo(Duration.ofMinutes(10)) > 0) {
                throw new IllegalArgumentException(
                        "lockTimeout must be between 1 ms and 10 minutes, was " + lockTimeout);
            }
            this.lockTimeout = lockTimeout;
            return this;
        }

        /**
         * Sets the clock.
         *
         * @param clock the clock that says which days are accepted and which may go (tests)
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock must not be null");
            return this;
        }

        /** {@return the partitions' configuration} */
        public ClaimPartitions build() {
            return new ClaimPartitions(this);
        }
    }
}
