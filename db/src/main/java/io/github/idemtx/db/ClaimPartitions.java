package io.github.idemtx.db;

import io.github.idemtx.core.IdempotencyKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
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

    /** How many characters of a key name its day. */
    public static final int PREFIX_LENGTH = KeyDay.LENGTH;

    private final DataSource dataSource;
    private final String schema;
    private final Duration acceptFor;
    private final int ahead;
    private final Duration longestTransaction;
    private final Clock clock;
    private final PartitionCatalog catalog;
    private final MaintenanceConnections connections;

    private ClaimPartitions(Builder b) {
        this.dataSource = b.dataSource;
        this.schema = b.schema;
        this.acceptFor = b.acceptFor;
        this.ahead = b.ahead;
        this.longestTransaction = b.longestTransaction;
        this.clock = b.clock;
        this.catalog = new PartitionCatalog(b.schema);
        this.connections = new MaintenanceConnections(
                b.dataSource, b.schema, catalog.table(), b.lockTimeout, b.longestTransaction);
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
        return KeyDay.format(KeyDay.utc(instant));
    }

    /**
     * The day a key carries.
     *
     * @param key a key
     * @return its day
     * @throws IllegalArgumentException if it does not begin with a valid {@code yyyyMMdd}
     */
    public static LocalDate dayOf(IdempotencyKey key) {
        return KeyDay.of(key);
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
        LocalDate last = KeyDay.utc(now).plusDays(1);
        if (day.isBefore(first) || day.isAfter(last)) {
            throw new IllegalArgumentException("key '" + KeyDay.abbreviate(key.value()) + "' belongs to " + day
                    + ", outside the days the claim table accepts now (" + first + " to " + last + ", UTC):"
                    + (day.isBefore(first)
                            ? " an intent is retried for at most " + acceptFor + " after its day; a retry this late"
                                    + " could find its day's answers dropped"
                            : " a key's day is the day its intent was created, not one in the future"));
        }
    }

    private LocalDate firstAccepted(Instant now) {
        // a key's day ends at the next midnight: accepted while now < end + acceptFor
        return KeyDay.utc(now.minus(acceptFor));
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
        if (!connections.inTransaction(catalog::partitioned)) {
            connections.inTransaction(catalog::convert);
        }
        return createAhead();
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
        return connections.exclusively(List.of(), this::createAheadAlone);
    }

    private List<LocalDate> createAheadAlone() {
        Instant now = clock.instant();
        LocalDate last = KeyDay.utc(now).plusDays(ahead);
        List<LocalDate> created = new ArrayList<>();
        for (LocalDate day = firstAccepted(now); !day.isAfter(last); day = day.plusDays(1)) {
            LocalDate d = day;
            boolean made = connections.inTransaction(c -> {
                catalog.requirePartitioned(c);
                if (catalog.partitions(c).containsKey(d)) {
                    return false;
                }
                catalog.create(c, d);
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
        return connections.exclusively(new Retention(List.of(), Map.of()), () -> dropBehindAlone(ttl));
    }

    private Retention dropBehindAlone(Duration ttl) {
        Instant now = clock.instant();
        Instant endedBefore = now.minus(acceptFor).minus(longestTransaction).minus(ttl);
        List<LocalDate> dropped = new ArrayList<>();
        Map<LocalDate, String> kept = new LinkedHashMap<>();
        Map<LocalDate, String> candidates = connections.inTransaction(c -> {
            catalog.requirePartitioned(c);
            Map<LocalDate, String> old = new LinkedHashMap<>();
            catalog.partitions(c).forEach((day, name) -> {
                if (!day.plusDays(1).atStartOfDay().toInstant(ZoneOffset.UTC).isAfter(endedBefore)) {
                    old.put(day, name);
                }
            });
            return old;
        });
        // a detach an earlier call began and did not finish (its connection lost in the second step)
        for (Map.Entry<LocalDate, String> e :
                connections.inTransaction(catalog::pendingDetaches).entrySet()) {
            connections.detach(catalog.finalizeDetach(e.getValue()));
            settleDetached(e.getKey(), e.getValue(), dropped, kept);
        }
        for (Map.Entry<LocalDate, String> e : candidates.entrySet()) {
            String partition = e.getValue();
            Optional<String> holds = connections.inTransaction(c -> PartitionCatalog.stillAnswers(c, partition));
            if (holds.isPresent()) {
                kept.put(e.getKey(), holds.get());
                continue;
            }
            // CONCURRENTLY: no lock that stops the claims; it waits for every transaction that could write here
            connections.detach(catalog.detachConcurrently(partition));
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
        return List.copyOf(catalog.partitions(connection).values());
    }

    /**
     * A detached partition: dropped if none of its rows can answer, else (a joined caller's row
     * committed between the check and the detach) attached again and kept.
     */
    private void settleDetached(LocalDate day, String partition, List<LocalDate> dropped, Map<LocalDate, String> kept) {
        Optional<String> arrived = connections.inTransaction(c -> {
            Optional<String> late = PartitionCatalog.stillAnswers(c, partition);
            if (late.isPresent()) {
                catalog.attach(c, day, partition);
            } else {
                PartitionCatalog.drop(c, partition);
            }
            return late;
        });
        if (arrived.isEmpty()) {
            dropped.add(day);
        } else {
            kept.put(day, arrived.get());
        }
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
