package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.jooq.IdempotentTransaction;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;

/**
 * Deletes expired claims every {@code interval} on a daemon thread of its own, running
 * {@code purgeExpired(limit)} again while a statement deletes {@code limit} rows. Started and stopped
 * with the context; a failure is logged and the next round tries again. Enabled with
 * {@code idemtx.purge.enabled=true}.
 */
public class IdempotencyPurge implements SmartLifecycle {

    private static final Log LOG = LogFactory.getLog(IdempotencyPurge.class);

    private final IdempotentTransaction<?> transactions;
    private final Duration interval;
    private final int limit;
    private final AtomicLong deleted = new AtomicLong();
    private volatile @Nullable ScheduledExecutorService scheduler;

    /**
     * A purge that is not started yet.
     *
     * @param transactions whose claim table is purged
     * @param interval the pause between rounds; positive
     * @param limit the most rows one statement deletes, from 1 to 100,000
     * @throws NullPointerException if {@code transactions} or {@code interval} is null
     * @throws IllegalArgumentException if {@code interval} is not positive or {@code limit} is out of range
     */
    public IdempotencyPurge(IdempotentTransaction<?> transactions, Duration interval, int limit) {
        this.transactions = Objects.requireNonNull(transactions, "transactions must not be null");
        Objects.requireNonNull(interval, "idemtx.purge.interval must not be null");
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("idemtx.purge.interval must be positive, was " + interval);
        }
        if (limit < 1 || limit > 100_000) {
            throw new IllegalArgumentException("idemtx.purge.limit must be between 1 and 100000, was " + limit);
        }
        this.interval = interval;
        this.limit = limit;
    }

    /**
     * One purge, on the calling thread: deletes expired claims until a statement deletes fewer than the
     * limit, or the thread is interrupted.
     *
     * @return how many claims it deleted
     */
    public long purgeNow() {
        long total = 0;
        int round;
        do {
            round = transactions.purgeExpired(limit);
            total += round;
        } while (round == limit && !Thread.currentThread().isInterrupted());
        deleted.addAndGet(total);
        return total;
    }

    /** {@return how many expired claims this purge deleted since start-up} */
    public long deleted() {
        return deleted.get();
    }

    @Override
    public synchronized void start() {
        if (scheduler != null) {
            return;
        }
        ScheduledExecutorService started = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "idemtx-purge");
            t.setDaemon(true);
            return t;
        });
        scheduler = started;
        long millis = interval.toMillis();
        // round() logs what a round throws, so the future never holds a failure to read
        ScheduledFuture<?> unused = started.scheduleWithFixedDelay(this::round, millis, millis, TimeUnit.MILLISECONDS);
    }

    private void round() {
        try {
            purgeNow();
        } catch (RuntimeException e) {
            LOG.warn("idemtx: the purge of expired claims failed; it runs again in " + interval, e);
        }
    }

    @Override
    public synchronized void stop() {
        ScheduledExecutorService running = scheduler;
        if (running != null) {
            running.shutdownNow();
            scheduler = null;
        }
    }

    @Override
    public boolean isRunning() {
        return scheduler != null;
    }
}
