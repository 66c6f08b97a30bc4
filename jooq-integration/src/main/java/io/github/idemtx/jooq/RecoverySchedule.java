package io.github.idemtx.jooq;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * What {@link EffectRecovery#schedule} starts: one daemon thread that runs the passes, and the stop
 * signal that a running pass asks before each claim.
 */
final class RecoverySchedule {

    private static final System.Logger LOG = System.getLogger("io.github.idemtx");

    private final AtomicBoolean closed = new AtomicBoolean();
    private final ScheduledExecutorService scheduler;

    private RecoverySchedule(String effect) {
        this.scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "idemtx-recover-" + effect);
            t.setDaemon(true);
            return t;
        });
    }

    /** {@return the handle whose {@code close()} stops the schedule} */
    static AutoCloseable start(
            EffectRecovery<?> recovery, Duration every, int limit, Consumer<EffectRecovery.Pass> onPass) {
        RecoverySchedule schedule = new RecoverySchedule(recovery.effect());
        // tick() catches all but a VirtualMachineError, so the Future has nothing to report;
        // close() stops it through the scheduler
        Future<?> unused = schedule.scheduler.scheduleWithFixedDelay(
                () -> schedule.tick(recovery, limit, onPass), 0, every.toMillis(), TimeUnit.MILLISECONDS);
        return schedule::stop;
    }

    private void tick(EffectRecovery<?> recovery, int limit, Consumer<EffectRecovery.Pass> onPass) {
        try {
            EffectRecovery.Pass pass;
            do {
                pass = recovery.recover(limit, closed::get);
                if (pass.total() > 0) {
                    onPass.accept(pass);
                }
                // again at once only while whole batches were taken: each claim of one is settled, or
                // counted and scheduled later, or held by someone else, so a next batch holds other
                // claims; failures wait for the next tick
            } while (pass.total() == limit && pass.count(EffectRecovery.Ending.FAILED) == 0 && !closed.get());
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            // a scheduled task that throws is never run again: log and go on
            LOG.log(
                    Level.WARNING,
                    "idemtx: a recovery pass of " + recovery.effect() + " failed; the next tick tries again",
                    e);
        }
    }

    /** Starts no new pass, lets the running one settle its claim and hand the rest back; waits up to a minute. */
    private void stop() throws InterruptedException {
        closed.set(true);
        scheduler.shutdown();
        if (!scheduler.awaitTermination(1, TimeUnit.MINUTES)) {
            scheduler.shutdownNow();
        }
    }
}
