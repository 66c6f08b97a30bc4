package io.github.idemtx.jooq.internal.flow;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.internal.Listeners;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Where one call's time goes. {@link #NONE} measures nothing and reads no clock: a call whose
 * instance has no listeners gets it, so the flows never ask whether anyone listens (as HikariCP's
 * no-op metrics tracker spares its pool the question). A measuring one ({@link #of}) is confined to the
 * call's thread. Marks are {@link System#nanoTime()} values (0 from {@code NONE}); each phase adds
 * the time since a mark and returns the new mark. Not API.
 */
public class Timings {

    /** Measures nothing. */
    public static final Timings NONE = new Timings();

    private Timings() {}

    /** {@return timings for a call of an instance with {@code listeners}: measuring when anyone listens, else {@link #NONE}} */
    public static Timings of(Listeners listeners) {
        return listeners.any() ? new Measured() : NONE;
    }

    /** {@return a mark: now} */
    public long now() {
        return 0;
    }

    /** An attempt begins; {@code joined}: in a caller's transaction. */
    public void attempt(boolean joined) {}

    private static final int CLAIMING = 0;
    private static final int WAITING = 1;
    private static final int WORK = 2;
    private static final int RECORDING = 3;

    /** {@return now}, the time since {@code mark} counted as spent in the claim statements */
    public final long claiming(long mark) {
        return spent(CLAIMING, mark);
    }

    /** {@return now}, the time since {@code mark} counted as spent waiting on another holder of the key */
    public final long waiting(long mark) {
        return spent(WAITING, mark);
    }

    /** {@return now}, the time since {@code mark} counted as spent in the work */
    public final long work(long mark) {
        return spent(WORK, mark);
    }

    /** {@return now}, the time since {@code mark} counted as spent recording the outcome */
    public final long recording(long mark) {
        return spent(RECORDING, mark);
    }

    /** {@return now}, the time since {@code mark} counted in {@code phase} */
    long spent(int phase, long mark) {
        return 0;
    }

    /**
     * Runs {@code call} with {@code listeners} told of its start and of its end, with these timings,
     * whatever it returns or throws (then rethrown unchanged).
     */
    public <O extends RemoteOutcome<?>> O observe(
            Listeners listeners, String operation, Scope scope, Supplier<O> call) {
        return call.get();
    }

    private static final class Measured extends Timings {
        private final long start = System.nanoTime();
        private final long[] phases = new long[4];
        private int attempts;
        private boolean joined;

        @Override
        public long now() {
            return System.nanoTime();
        }

        @Override
        public void attempt(boolean joined) {
            attempts++;
            this.joined = joined;
        }

        @Override
        long spent(int phase, long mark) {
            long now = System.nanoTime();
            phases[phase] += now - mark;
            return now;
        }

        @Override
        public <O extends RemoteOutcome<?>> O observe(
                Listeners listeners, String operation, Scope scope, Supplier<O> call) {
            Listeners.Started started = listeners.started(operation, scope);
            O outcome;
            try {
                outcome = call.get();
            } catch (RuntimeException | Error e) {
                listeners.finished(
                        event(operation, CallEvent.Result.FAILED, e.getClass().getName(), scope), started);
                throw e;
            }
            listeners.finished(event(operation, CallEvent.Result.of(outcome), null, scope), started);
            return outcome;
        }

        private CallEvent event(String operation, CallEvent.Result result, @Nullable String exception, Scope scope) {
            return CallEvent.builder(operation, result)
                    .exception(exception)
                    .joined(joined)
                    .attempts(attempts)
                    .scope(scope)
                    .total(System.nanoTime() - start)
                    .claiming(phases[CLAIMING])
                    .waiting(phases[WAITING])
                    .work(phases[WORK])
                    .recording(phases[RECORDING])
                    .build();
        }
    }
}
