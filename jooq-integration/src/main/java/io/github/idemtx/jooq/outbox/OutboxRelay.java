package io.github.idemtx.jooq.outbox;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.OutboxBacklog;
import io.github.idemtx.core.OutboxEvent;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.internal.store.ClaimTable;
import io.github.idemtx.jooq.internal.store.OutboxRow;
import io.github.idemtx.jooq.internal.store.OutboxStatements;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

/**
 * Delivers the outbox's pending messages through an {@link OutboxTransport}, at least once, and
 * purges delivered ones after a retention.
 *
 * <h2>What it does per poll ({@link #deliverDue})</h2>
 * <ol>
 *   <li>Leases up to {@link Builder#batchSize} due messages in one statement, oldest first: pending,
 *       past their backoff, not leased by a live relay, and for an ordered message, the first of its
 *       destination and ordering key still to deliver. {@code FOR UPDATE SKIP LOCKED} and the lease
 *       ({@link Builder#lease}) keep any number of relays, on any number of machines, off each
 *       other's messages; the lease's end hands the messages of a relay that died to the others.
 *   <li>Sends them one after the other. The transport returns once the destination confirmed; the
 *       message is then marked delivered. A failed attempt keeps it pending with its reason and a
 *       backoff ({@link Builder#initialBackoff} doubling up to {@link Builder#maxBackoff}); after
 *       {@link Builder#maxAttempts} attempts, or at once for a {@link DeliveryRefusedException}, it
 *       is kept as failed for an operator ({@link Outbox#failed}, {@link Outbox#retry}).
 *   <li>Tells listeners each message's fate ({@link IdempotencyListener#outboxChanged}) and the
 *       backlog ({@link IdempotencyListener#outboxBacklog}).
 * </ol>
 * A relay that dies after a send and before its mark leaves the message leased; once the lease has
 * passed, a relay sends it again, under the same message id. Consumers deduplicate by that id.
 *
 * <h2>Running it</h2>
 * {@link #start()} polls on a thread of its own: again at once after a full batch, else after
 * {@link Builder#pollInterval}, purging at most every {@link Builder#purgeInterval}. {@link #close()}
 * stops it gracefully: the message being sent is finished and marked, the rest of the batch is given
 * back unsent (its attempt does not count), and it waits up to {@link Builder#shutdownTimeout}. Or
 * call {@link #deliverDue()} and {@link #purge()} from a scheduler of your own. Thread-safe.
 */
public final class OutboxRelay implements AutoCloseable {

    /** Default {@link Builder#batchSize}: {@value}. */
    public static final int DEFAULT_BATCH_SIZE = 100;
    /** Default {@link Builder#pollInterval}: 1 second. */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);
    /** Default {@link Builder#lease}: 1 minute. */
    public static final Duration DEFAULT_LEASE = Duration.ofMinutes(1);
    /** Default {@link Builder#maxAttempts}: {@value}. */
    public static final int DEFAULT_MAX_ATTEMPTS = 10;
    /** Default {@link Builder#initialBackoff}: 1 second. */
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
    /** Default {@link Builder#maxBackoff}: 5 minutes. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);
    /** Default {@link Builder#retention}: 7 days. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** Default {@link Builder#purgeInterval}: 10 minutes. */
    public static final Duration DEFAULT_PURGE_INTERVAL = Duration.ofMinutes(10);
    /** Default {@link Builder#shutdownTimeout}: 30 seconds. */
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);

    /** The most one {@link #purge()} deletes. */
    static final int PURGE_LIMIT = 10_000;

    private static final System.Logger LOG = System.getLogger("io.github.idemtx");
    private static final int MAX_ERROR = 2000;

    private final DSLContext dsl;
    private final OutboxTransport transport;
    private final String schema;
    private final String owner;
    private final int batchSize;
    private final Duration pollInterval;
    private final Duration lease;
    private final int maxAttempts;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final Duration retention;
    private final Duration purgeInterval;
    private final Duration shutdownTimeout;
    private final OutboxStatements sql;
    private final Listeners listeners;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private volatile boolean stopping;
    private @Nullable Thread thread;

    private OutboxRelay(Builder b) {
        this.dsl = b.dsl;
        this.transport = b.transport;
        this.schema = b.schema;
        this.owner = b.owner != null ? b.owner : "relay-" + UUID.randomUUID();
        this.batchSize = b.batchSize;
        this.pollInterval = b.pollInterval;
        this.lease = b.lease;
        this.maxAttempts = b.maxAttempts;
        this.initialBackoff = b.initialBackoff;
        this.maxBackoff = b.maxBackoff;
        this.retention = b.retention;
        this.purgeInterval = b.purgeInterval;
        this.shutdownTimeout = b.shutdownTimeout;
        this.sql = new OutboxStatements(new ClaimTable(b.schema));
        this.listeners = new Listeners(b.listeners);
    }

    /**
     * {@return a builder}
     *
     * @param dsl where the relay gets its connections (never a work's {@code tx})
     * @param transport how messages reach their destinations
     * @throws NullPointerException if an argument is null
     */
    public static Builder builder(DSLContext dsl, OutboxTransport transport) {
        return new Builder(dsl, transport);
    }

    /** {@return the name this relay leases messages under} */
    public String owner() {
        return owner;
    }

    /**
     * Leases a batch of due messages, sends each and marks it; see the class documentation. Each
     * statement commits on its own.
     *
     * @return how many messages were delivered
     * @throws org.jooq.exception.DataAccessException if the database fails; the messages already
     *     leased stay so until the lease passes, then are sent again
     */
    public int deliverDue() {
        return deliver(true).delivered();
    }

    private record Poll(int leased, int delivered) {}

    private Poll deliver(boolean tellBacklog) {
        List<OutboxRow> batch = OwnStatement.run(
                dsl, schema, "the outbox relay's lease failed", c -> sql.lease(c, owner, lease, batchSize));
        int delivered = 0;
        for (int i = 0; i < batch.size(); i++) {
            OutboxRow row = batch.get(i);
            if (stopping && thread != null && Thread.currentThread() == thread) {
                release(batch.subList(i, batch.size()));
                break;
            }
            if (send(row)) {
                delivered++;
            }
        }
        if (tellBacklog && listeners.any()) {
            listeners.outboxBacklog(backlog());
        }
        return new Poll(batch.size(), delivered);
    }

    /** Sends one leased message and marks its fate; whether it was delivered. */
    private boolean send(OutboxRow row) {
        OutboxDelivery delivery = OutboxDelivery.of(
                row.messageId(),
                Scope.of(row.scope()),
                IdempotencyKey.of(row.key()),
                row.name(),
                row.destination(),
                row.orderingKey(),
                row.payload(),
                Headers.decode(row.headers()),
                row.attempts());
        long start = System.nanoTime();
        Exception failure = null;
        try {
            transport.send(delivery);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = e;
        } catch (Exception e) {
            failure = e;
        }
        if (failure == null) {
            // a failure here leaves the message leased: sent again once the lease passes (at least once)
            OwnStatement.run(dsl, schema, "the outbox relay's mark failed", c -> sql.delivered(c, row.id()));
            tell(OutboxEvent.Kind.DELIVERED, row, null, start);
            return true;
        }
        boolean keep = failure instanceof DeliveryRefusedException || row.attempts() >= maxAttempts;
        String reason = reason(failure);
        Duration backoff = backoff(row.attempts());
        boolean ours = OwnStatement.run(
                dsl,
                schema,
                "the outbox relay's mark failed",
                c -> sql.failed(c, row.id(), owner, keep, reason, keep ? Duration.ZERO : backoff));
        if (ours) {
            tell(keep ? OutboxEvent.Kind.FAILED : OutboxEvent.Kind.RETRYING, row, reason, start);
        }
        if (keep) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: the outbox message " + row.messageId() + " to " + row.destination() + " failed after "
                            + row.attempts() + " attempts and is kept for an operator: " + reason);
        }
        return false;
    }

    private void tell(OutboxEvent.Kind kind, OutboxRow row, @Nullable String error, long start) {
        if (listeners.any()) {
            listeners.outboxChanged(OutboxEvent.attempt(
                    kind,
                    row.messageId(),
                    row.destination(),
                    row.attempts(),
                    error,
                    Duration.ofNanos(System.nanoTime() - start)));
        }
    }

    private void release(List<OutboxRow> unsent) {
        for (OutboxRow row : unsent) {
            try {
                OwnStatement.run(dsl, schema, "the outbox relay's release failed", c -> {
                    sql.release(c, row.id(), owner);
                    return null;
                });
            } catch (RuntimeException e) {
                // the lease passes on its own; the message is only late
                LOG.log(System.Logger.Level.DEBUG, "idemtx: could not give back an unsent outbox message", e);
            }
        }
    }

    /** The backoff after the {@code attempts}-th failed attempt: the initial one, doubled per attempt, capped. */
    Duration backoff(int attempts) {
        int doublings = Math.min(Math.max(attempts - 1, 0), 40);
        Duration d = initialBackoff;
        for (int i = 0; i < doublings && d.compareTo(maxBackoff) < 0; i++) {
            d = d.multipliedBy(2);
        }
        return d.compareTo(maxBackoff) > 0 ? maxBackoff : d;
    }

    private static String reason(Exception e) {
        String text = e.getClass().getName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        return text.length() <= MAX_ERROR ? text : text.substring(0, MAX_ERROR);
    }

    /**
     * Deletes up to 10,000 delivered and discarded messages settled longer than {@link Builder#retention} ago.
     *
     * @return how many were deleted
     * @throws org.jooq.exception.DataAccessException if the database fails; nothing was deleted
     */
    public int purge() {
        return OwnStatement.run(dsl, schema, "the outbox purge failed", c -> sql.purge(c, retention, PURGE_LIMIT));
    }

    /** {@return pending and failed messages now, and how long the oldest pending one has waited} */
    public OutboxBacklog backlog() {
        OutboxStatements.Backlog b = OwnStatement.run(dsl, schema, "the outbox backlog read failed", sql::backlog);
        return OutboxBacklog.of(b.pending(), b.failed(), b.oldestPendingAge());
    }

    /**
     * Starts polling on a thread of its own ({@code idemtx-outbox-relay}, a daemon).
     *
     * @throws IllegalStateException if it was started before
     */
    public void start() {
        lock.lock();
        try {
            if (thread != null) {
                throw new IllegalStateException("the relay " + owner + " was started already");
            }
            Thread t = new Thread(this::loop, "idemtx-outbox-relay");
            t.setDaemon(true);
            thread = t;
            t.start();
        } finally {
            lock.unlock();
        }
    }

    /** {@return whether {@link #start()} was called and the relay has not been stopped} */
    public boolean isRunning() {
        Thread t = thread;
        return t != null && t.isAlive() && !stopping;
    }

    private void loop() {
        long lastPurge = System.nanoTime();
        while (!stopping) {
            boolean full = false;
            try {
                Poll poll = deliver(true);
                full = poll.leased() >= batchSize;
                if (System.nanoTime() - lastPurge >= purgeInterval.toNanos()) {
                    lastPurge = System.nanoTime();
                    purge();
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "idemtx: the outbox relay's poll failed; trying again", e);
            }
            if (!full) {
                pause(pollInterval);
            }
        }
    }

    private void pause(Duration d) {
        lock.lock();
        try {
            long left = d.toNanos();
            while (!stopping && left > 0) {
                left = wake.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            stopping = true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops polling: the message being sent is finished and marked, the rest of the batch is given
     * back; waits up to {@code timeout} for that, then interrupts the relay's thread. Idempotent.
     *
     * @param timeout how long to wait for the poll under way
     * @return whether the relay's thread ended within {@code timeout}
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean stop(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout must not be null");
        Thread t;
        lock.lock();
        try {
            stopping = true;
            wake.signalAll();
            t = thread;
        } finally {
            lock.unlock();
        }
        if (t == null || t == Thread.currentThread()) {
            return true;
        }
        try {
            t.join(timeout);
            if (t.isAlive()) {
                t.interrupt();
                return false;
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !t.isAlive();
        }
    }

    /** {@link #stop(Duration)} with {@link Builder#shutdownTimeout}. */
    @Override
    public void close() {
        stop(shutdownTimeout);
    }

    /** Builds an {@link OutboxRelay}; not thread-safe, each setter validates at once. */
    public static final class Builder {
        private final DSLContext dsl;
        private final OutboxTransport transport;
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;
        private @Nullable String owner;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private Duration pollInterval = DEFAULT_POLL_INTERVAL;
        private Duration lease = DEFAULT_LEASE;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
        private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
        private Duration retention = DEFAULT_RETENTION;
        private Duration purgeInterval = DEFAULT_PURGE_INTERVAL;
        private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
        private final List<IdempotencyListener<?>> listeners = new ArrayList<>();

        private Builder(DSLContext dsl, OutboxTransport transport) {
            this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
            this.transport = Objects.requireNonNull(transport, "transport must not be null");
        }

        /**
         * The schema the migrations were applied to; default {@value IdempotencySchema#DEFAULT_SCHEMA}.
         *
         * @param schema a plain PostgreSQL identifier
         * @return this builder
         */
        public Builder schema(String schema) {
            this.schema = IdempotencySchema.requireSchemaName(schema);
            return this;
        }

        /**
         * The name the relay leases under, shown to operators; default {@code relay-} and a random UUID.
         * Give each relay its own.
         *
         * @param owner 1 to 64 characters
         * @return this builder
         */
        public Builder owner(String owner) {
            Objects.requireNonNull(owner, "owner must not be null");
            if (owner.isBlank() || owner.length() > 64) {
                throw new IllegalArgumentException("owner must be 1 to 64 characters, was '" + owner + "'");
            }
            this.owner = owner;
            return this;
        }

        /**
         * The most messages leased per poll; default {@value #DEFAULT_BATCH_SIZE}.
         *
         * @param batchSize from 1 to 1,000
         * @return this builder
         */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1 || batchSize > 1000) {
                throw new IllegalArgumentException("batchSize must be between 1 and 1000, was " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        /**
         * How long the relay waits after a poll that did not fill its batch; default 1 second.
         *
         * @param pollInterval positive
         * @return this builder
         */
        public Builder pollInterval(Duration pollInterval) {
            this.pollInterval = positive(pollInterval, "pollInterval");
            return this;
        }

        /**
         * How long a leased batch stays the relay's: longer than a batch's sends take, or another relay
         * sends its messages again; default 1 minute.
         *
         * @param lease at least 1 second
         * @return this builder
         */
        public Builder lease(Duration lease) {
            positive(lease, "lease");
            if (lease.compareTo(Duration.ofSeconds(1)) < 0) {
                throw new IllegalArgumentException("lease must be at least 1 second, was " + lease);
            }
            this.lease = lease;
            return this;
        }

        /**
         * Attempts before a message is kept as failed; default {@value #DEFAULT_MAX_ATTEMPTS}.
         *
         * @param maxAttempts from 1 to 1,000
         * @return this builder
         */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1 || maxAttempts > 1000) {
                throw new IllegalArgumentException("maxAttempts must be between 1 and 1000, was " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * The backoff after a first failed attempt, doubled after each further one; default 1 second.
         *
         * @param initialBackoff zero or more
         * @return this builder
         */
        public Builder initialBackoff(Duration initialBackoff) {
            this.initialBackoff = notNegative(initialBackoff, "initialBackoff");
            return this;
        }

        /**
         * The longest backoff; default 5 minutes.
         *
         * @param maxBackoff zero or more
         * @return this builder
         */
        public Builder maxBackoff(Duration maxBackoff) {
            this.maxBackoff = notNegative(maxBackoff, "maxBackoff");
            return this;
        }

        /**
         * How long delivered and discarded messages are kept before {@link #purge()} deletes them;
         * default 7 days.
         *
         * @param retention zero or more
         * @return this builder
         */
        public Builder retention(Duration retention) {
            this.retention = notNegative(retention, "retention");
            return this;
        }

        /**
         * How often the started relay purges; default 10 minutes.
         *
         * @param purgeInterval positive
         * @return this builder
         */
        public Builder purgeInterval(Duration purgeInterval) {
            this.purgeInterval = positive(purgeInterval, "purgeInterval");
            return this;
        }

        /**
         * How long {@link #close()} waits for the poll under way; default 30 seconds.
         *
         * @param shutdownTimeout zero or more
         * @return this builder
         */
        public Builder shutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = notNegative(shutdownTimeout, "shutdownTimeout");
            return this;
        }

        /**
         * Adds a listener, told of each message's fate and of the backlog after each poll.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder listener(IdempotencyListener<?> listener) {
            listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
            return this;
        }

        /**
         * {@return the relay, not started}
         *
         * @throws IllegalStateException if the initial backoff exceeds the longest one
         */
        public OutboxRelay build() {
            if (initialBackoff.compareTo(maxBackoff) > 0) {
                throw new IllegalStateException(
                        "initialBackoff " + initialBackoff + " must not exceed maxBackoff " + maxBackoff);
            }
            return new OutboxRelay(this);
        }

        private static Duration positive(Duration d, String name) {
            Objects.requireNonNull(d, name + " must not be null");
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, was " + d);
            }
            return d;
        }

        private static Duration notNegative(Duration d, String name) {
            Objects.requireNonNull(d, name + " must not be null");
            if (d.isNegative()) {
                throw new IllegalArgumentException(name + " must not be negative, was " + d);
            }
            return d;
        }
    }
}
