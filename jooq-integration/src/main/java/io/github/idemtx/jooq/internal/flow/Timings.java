package io.github.idemtx.jooq.internal.flow;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.Scope;

/**
 * Where one call's time went, collected only when the instance has listeners. Confined to the
 * call's thread; not API.
 */
public final class Timings {

    private final long start = System.nanoTime();
    private long claiming;
    private long waiting;
    private long work;
    private long recording;
    private int attempts;
    private boolean joined;

    /** An attempt begins. */
    public void attempt(boolean joined) {
        attempts++;
        this.joined = joined;
    }

    public void claiming(long nanos) {
        claiming += nanos;
    }

    public void waiting(long nanos) {
        waiting += nanos;
    }

    public void work(long nanos) {
        work += nanos;
    }

    public void recording(long nanos) {
        recording += nanos;
    }

    /**
     * Runs {@code call} with {@code listeners} told of its start and of its end, with these timings,
     * whatever it returns or throws (then rethrown unchanged).
     */
    public <O extends io.github.idemtx.core.RemoteOutcome<?>> O observe(io.github.idemtx.core.internal.Listeners listeners,
            String operation, Scope scope, java.util.function.Supplier<O> call) {
        Object[] started = listeners.started(operation);
        O outcome;
        try {
            outcome = call.get();
        } catch (RuntimeException | Error e) {
            listeners.finished(event(operation, CallEvent.Result.FAILED, e.getClass().getName(), scope), started);
            throw e;
        }
        listeners.finished(event(operation, CallEvent.Result.of(outcome), null, scope), started);
        return outcome;
    }

    public CallEvent event(String operation, CallEvent.Result result, String exception, Scope scope) {
        return new CallEvent(operation, result, exception, joined, attempts, System.nanoTime() - start, claiming, waiting, work,
                recording, scope);
    }
}
