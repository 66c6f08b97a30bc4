package io.github.idemtx.core.internal;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.PurgeEvent;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The listeners of one instance: each is told in turn, and one that throws is logged and skipped,
 * never changing an outcome. Immutable and thread-safe; not API.
 */
public final class Listeners {

    private static final System.Logger LOG = System.getLogger("io.github.idemtx");

    private final IdempotencyListener[] listeners;

    public Listeners(List<IdempotencyListener> listeners) {
        this.listeners = listeners.toArray(IdempotencyListener[]::new);
    }

    /** Whether there is anyone to tell (when not, nothing is measured). */
    public boolean any() {
        return listeners.length > 0;
    }

    /** What each listener returned from {@code callStarted}, by position. */
    public @Nullable Object[] started(String operation) {
        @Nullable Object[] started = new Object[listeners.length];
        for (int i = 0; i < listeners.length; i++) {
            try {
                started[i] = listeners[i].callStarted(operation);
            } catch (RuntimeException e) {
                ignored(listeners[i], e);
            }
        }
        return started;
    }

    public void finished(CallEvent event, @Nullable Object[] started) {
        for (int i = 0; i < listeners.length; i++) {
            try {
                listeners[i].callFinished(event, started[i]);
            } catch (RuntimeException e) {
                ignored(listeners[i], e);
            }
        }
    }

    public void purged(PurgeEvent event) {
        for (IdempotencyListener l : listeners) {
            try {
                l.purged(event);
            } catch (RuntimeException e) {
                ignored(l, e);
            }
        }
    }

    private static void ignored(IdempotencyListener listener, RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "idemtx: the listener " + listener.getClass().getName()
                + " threw; ignored, the outcome is unchanged", e);
    }
}
