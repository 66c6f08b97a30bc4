package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.jooq.EffectRecovery;
import io.github.idemtx.jooq.EffectRecovery.Ending;
import io.github.idemtx.jooq.ExternalEffect;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;

/**
 * Recovers the claims of every {@link ExternalEffect} bean on a schedule: each effect's pass
 * ({@link EffectRecovery#recover(int, java.util.function.BooleanSupplier)}) takes over up to
 * {@code batch} in-flight claims whose lease has passed and whose lookup is due, and runs again at
 * once while it takes whole batches, then every {@code interval}. Passes of one effect never overlap;
 * the effects share {@code workers} daemon threads. A pass that throws is logged and reported to the
 * {@link IdempotencyRecoveryListener}s; the next tick tries again.
 *
 * <p>Started and stopped with the context (a {@link SmartLifecycle}). {@link #stop()} starts no new
 * pass, and a running pass settles the claim it is on (its remote call ends within the effect's lease)
 * and hands the rest of its batch back at once (their lease ends, counted {@code handed_back}) for
 * the next recoverer, on this instance or another. {@code stop()} waits for that up to
 * {@code shutdownTimeout}; past it the passes are interrupted and their claims' leases run out by
 * themselves, so no claim is lost either way. Enabled by default ({@code idemtx.recovery.enabled})
 * when the context has an {@code ExternalEffect} bean.
 */
public class IdempotencyRecovery implements SmartLifecycle {

    private static final Log LOG = LogFactory.getLog(IdempotencyRecovery.class);

    /** The longest {@code shutdownTimeout}: 1 hour. */
    public static final Duration LONGEST_SHUTDOWN_TIMEOUT = Duration.ofHours(1);

    /** The most worker threads: 64. */
    public static final int MOST_WORKERS = 64;

    private final List<ExternalEffect<?, ?>> effects;
    private final Duration interval;
    private final int batch;
    private final int workers;
    private final Duration shutdownTimeout;
    private final List<IdempotencyRecoveryListener> listeners;

    /** The scheduler and the stop signal of the current run; null while stopped. */
    private volatile @Nullable Run run;

    private record Run(ScheduledThreadPoolExecutor scheduler, AtomicBoolean stopping) {}

    /**
     * A recovery that is not started yet.
     *
     * @param effects the effects to recover; their names must differ (two effects of one name would
     *     take each other's claims over); copied
     * @param interval the pause between an effect's passes, from 1 ms to 1 day
     * @param batch the most claims one pass takes over, from 1 to 10,000
     * @param workers the threads the effects' passes share, from 1 to {@value #MOST_WORKERS}
     * @param shutdownTimeout how long {@link #stop()} waits for running passes, positive, at most an hour
     * @param listeners told of every pass; copied
     * @throws NullPointerException if an argument, an effect or a listener is null
     * @throws IllegalArgumentException naming the {@code idemtx.recovery.*} property, if a value is out
     *     of range; or if two effects have the same name
     */
    public IdempotencyRecovery(
            List<? extends ExternalEffect<?, ?>> effects,
            Duration interval,
            int batch,
            int workers,
            Duration shutdownTimeout,
            List<IdempotencyRecoveryListener> listeners) {
        Objects.requireNonNull(effects, "effects must not be null");
        Objects.requireNonNull(interval, "idemtx.recovery.interval must not be null");
        Objects.requireNonNull(shutdownTimeout, "idemtx.recovery.shutdown-timeout must not be null");
        if (interval.compareTo(EffectRecovery.SHORTEST_INTERVAL) < 0
                || interval.compareTo(EffectRecovery.LONGEST_INTERVAL) > 0) {
            throw new IllegalArgumentException(
                    "idemtx.recovery.interval must be between 1ms and 1 day (1d), was " + interval);
        }
        if (batch < 1 || batch > EffectRecovery.MAX_LIMIT) {
            throw new IllegalArgumentException(
                    "idemtx.recovery.batch must be between 1 and " + EffectRecovery.MAX_LIMIT + ", was " + batch);
        }
        if (workers < 1 || workers > MOST_WORKERS) {
            throw new IllegalArgumentException(
                    "idemtx.recovery.workers must be between 1 and " + MOST_WORKERS + ", was " + workers);
        }
        if (shutdownTimeout.isNegative()
                || shutdownTimeout.isZero()
                || shutdownTimeout.compareTo(LONGEST_SHUTDOWN_TIMEOUT) > 0) {
            throw new IllegalArgumentException(
                    "idemtx.recovery.shutdown-timeout must be positive and at most 1 hour (1h), was "
                            + shutdownTimeout);
        }
        this.effects = distinct(effects);
        this.interval = interval;
        this.batch = batch;
        this.workers = workers;
        this.shutdownTimeout = shutdownTimeout;
        this.listeners = List.copyOf(listeners);
    }

    /**
     * The effects, checked to have names of their own.
     *
     * @throws IllegalArgumentException if two have the same name
     */
    static List<ExternalEffect<?, ?>> distinct(List<? extends ExternalEffect<?, ?>> effects) {
        Map<String, ExternalEffect<?, ?>> byName = new LinkedHashMap<>();
        for (ExternalEffect<?, ?> e : effects) {
            Objects.requireNonNull(e, "an effect must not be null");
            if (byName.putIfAbsent(e.name(), e) != null) {
                throw new IllegalArgumentException("two ExternalEffect beans are named '" + e.name()
                        + "': an effect's name selects its claims, so they would recover and resolve each"
                        + " other's with the wrong Remote; give each effect a name of its own");
            }
        }
        return List.copyOf(byName.values());
    }

    /** {@return the names of the effects this recovers, in the order passes are scheduled} */
    public List<String> effects() {
        return effects.stream().map(ExternalEffect::name).toList();
    }

    /**
     * One pass per effect on the calling thread, reported to the listeners like a scheduled one (for
     * an operator's "recover now", or a test). It stops like a scheduled pass when the recovery stops.
     *
     * @return each effect's pass by its name; an effect whose pass threw is absent (the failure is
     *     logged and reported)
     */
    public Map<String, EffectRecovery.Pass> recoverNow() {
        Run current = run;
        AtomicBoolean stopping = current == null ? new AtomicBoolean() : current.stopping();
        Map<String, EffectRecovery.Pass> passes = new LinkedHashMap<>();
        for (ExternalEffect<?, ?> effect : effects) {
            EffectRecovery.Pass pass = pass(effect, stopping);
            if (pass != null) {
                passes.put(effect.name(), pass);
            }
        }
        return passes;
    }

    /** An effect's passes, one tick: again at once while a whole batch was taken and nothing failed. */
    private void tick(ExternalEffect<?, ?> effect, AtomicBoolean stopping) {
        EffectRecovery.Pass pass;
        do {
            pass = pass(effect, stopping);
        } while (pass != null && pass.total() == batch && pass.count(Ending.FAILED) == 0 && !stopping.get());
    }

    // a scheduled task that throws never runs again: every failure is caught and logged
    private EffectRecovery.@Nullable Pass pass(ExternalEffect<?, ?> effect, AtomicBoolean stopping) {
        long started = System.nanoTime();
        EffectRecovery.Pass pass;
        try {
            pass = effect.recovery().recover(batch, stopping::get);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            if (stopping.get()) {
                LOG.info("idemtx: a recovery pass of '" + effect.name() + "' ended by the shutdown: " + e
                        + "; the leases of its claims run out and a later pass takes them over");
            } else {
                LOG.warn(
                        "idemtx: a recovery pass of '" + effect.name() + "' failed; the next one runs in " + interval,
                        e);
            }
            for (IdempotencyRecoveryListener l : listeners) {
                tell(l, () -> l.failed(effect.name(), took, e));
            }
            return null;
        }
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        if (pass.count(Ending.RECONCILIATION) > 0) {
            LOG.warn("idemtx: " + pass.count(Ending.RECONCILIATION) + " claim(s) of '" + effect.name()
                    + "' need reconciliation: their outcome stayed unknown through every lookup;"
                    + " an operator must record what the remote did (ClaimAdmin.resolveApplied or"
                    + " resolveRefused, or the idempotency endpoint)");
        }
        if (pass.count(Ending.FAILED) > 0) {
            LOG.warn("idemtx: recovering " + pass.count(Ending.FAILED) + " claim(s) of '" + effect.name()
                    + "' failed (logged above); they are tried again on their lookup schedule");
        }
        if (pass.count(Ending.HANDED_BACK) > 0 && LOG.isInfoEnabled()) {
            LOG.info("idemtx: the recovery of '" + effect.name() + "' is stopping: " + pass.count(Ending.HANDED_BACK)
                    + " claim(s) handed back for the next recoverer");
        }
        for (IdempotencyRecoveryListener l : listeners) {
            tell(l, () -> l.passed(effect.name(), pass, took));
        }
        return pass;
    }

    private static void tell(IdempotencyRecoveryListener listener, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            LOG.warn("idemtx: a recovery listener (" + listener.getClass().getName() + ") threw; ignored", e);
        }
    }

    @Override
    public synchronized void start() {
        if (run != null) {
            return;
        }
        AtomicInteger threads = new AtomicInteger();
        ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(workers, r -> {
            Thread t = new Thread(r, "idemtx-recovery-" + threads.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        // after shutdown(): no new tick starts, running ones finish (the stop signal ends them early)
        scheduler.setContinueExistingPeriodicTasksAfterShutdownPolicy(false);
        scheduler.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        AtomicBoolean stopping = new AtomicBoolean();
        long millis = interval.toMillis();
        for (ExternalEffect<?, ?> effect : effects) {
            for (IdempotencyRecoveryListener l : listeners) {
                tell(l, () -> l.started(effect.name()));
            }
            // tick() logs what a pass throws, so the future has nothing to report
            Future<?> unused =
                    scheduler.scheduleWithFixedDelay(() -> tick(effect, stopping), 0, millis, TimeUnit.MILLISECONDS);
        }
        run = new Run(scheduler, stopping);
        if (LOG.isInfoEnabled()) {
            LOG.info("idemtx: recovering " + effects.size() + " external effect(s) " + effects()
                    + " every " + interval + ", up to " + batch + " claims per pass, on " + workers
                    + " thread(s); a stop waits up to " + shutdownTimeout);
        }
    }

    /**
     * Stops the recovery: no pass starts any more, running passes settle the claim they are on and
     * hand the rest of their batch back. Returns when they have, or after {@code shutdownTimeout},
     * having interrupted them.
     */
    @Override
    public void stop() {
        Run current;
        synchronized (this) {
            current = run;
            run = null;
        }
        if (current == null) {
            return;
        }
        current.stopping().set(true);
        ScheduledThreadPoolExecutor scheduler = current.scheduler();
        scheduler.shutdown();
        try {
            if (!scheduler.awaitTermination(shutdownTimeout.toNanos(), TimeUnit.NANOSECONDS)) {
                LOG.warn("idemtx: recovery passes still running after idemtx.recovery.shutdown-timeout ("
                        + shutdownTimeout + "); interrupting them. The leases of their claims run out and"
                        + " a later pass takes them over");
                scheduler.shutdownNow();
            }
        } catch (InterruptedException e) {
            scheduler.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean isRunning() {
        return run != null;
    }

    /** {@return the pause between an effect's passes} */
    public Duration interval() {
        return interval;
    }

    /** {@return the most claims one pass takes over} */
    public int batch() {
        return batch;
    }

    /** {@return the threads the passes share} */
    public int workers() {
        return workers;
    }

    /** {@return how long {@link #stop()} waits for running passes} */
    public Duration shutdownTimeout() {
        return shutdownTimeout;
    }
}
