package io.github.idemtx.core.internal;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.CallStart;
import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.ClaimOrderEvent;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.OutboxBacklog;
import io.github.idemtx.core.OutboxEvent;
import io.github.idemtx.core.PurgeEvent;
import io.github.idemtx.core.Scope;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The listeners of one instance: each is told in turn, and one that throws is logged and skipped,
 * never changing an outcome. Immutable and thread-safe; not API.
 */
public final class Listeners {

    private static final System.Logger LOG = System.getLogger("io.github.idemtx");

    private final List<Entry<?>> listeners;

    public Listeners(List<? extends IdempotencyListener<?>> listeners) {
        this.listeners = listeners.stream().<Entry<?>>map(Entry::new).toList();
    }

    /** Whether there is anyone to tell (when not, nothing is measured). */
    public boolean any() {
        return !listeners.isEmpty();
    }

    /** What each listener carries from a call's start to its end. */
    public static final class Started {
        private final @Nullable Object[] contexts;

        private Started(int size) {
            this.contexts = new Object[size];
        }
    }

    /** Tells each listener that a call begins; what they return, for {@link #finished}. */
    public Started started(String operation, @Nullable Scope scope) {
        CallStart start = CallStart.of(operation, scope);
        Started started = new Started(listeners.size());
        for (int i = 0; i < listeners.size(); i++) {
            Entry<?> entry = listeners.get(i);
            try {
                started.contexts[i] = entry.listener.callStarted(start);
            } catch (RuntimeException e) {
                ignored(entry.listener, e);
            }
        }
        return started;
    }

    public void finished(CallEvent event, Started started) {
        for (int i = 0; i < listeners.size(); i++) {
            Entry<?> entry = listeners.get(i);
            try {
                entry.finished(event, started.contexts[i]);
            } catch (RuntimeException e) {
                ignored(entry.listener, e);
            }
        }
    }

    public void claimChanged(ClaimEvent event) {
        each(listener -> listener.claimChanged(event));
    }

    public void claimOrderChanged(ClaimOrderEvent event) {
        each(listener -> listener.claimOrderChanged(event));
    }

    public void purged(PurgeEvent event) {
        each(listener -> listener.purged(event));
    }

    public void outboxChanged(OutboxEvent event) {
        each(listener -> listener.outboxChanged(event));
    }

    public void outboxBacklog(OutboxBacklog backlog) {
        each(listener -> listener.outboxBacklog(backlog));
    }

    /** Tells each listener in turn; one that throws is logged and skipped. */
    private void each(java.util.function.Consumer<IdempotencyListener<?>> tell) {
        for (Entry<?> entry : listeners) {
            try {
                tell.accept(entry.listener);
            } catch (RuntimeException e) {
                ignored(entry.listener, e);
            }
        }
    }

    /**
     * A listener with its context type captured: only what its own {@code callStarted} returned is
     * handed back to it, so the cast is safe.
     */
    private record Entry<C extends @Nullable Object>(IdempotencyListener<C> listener) {
        @SuppressWarnings("unchecked")
        void finished(CallEvent event, @Nullable Object context) {
            listener.callFinished(event, (C) context);
        }
    }

    private static void ignored(IdempotencyListener<?> listener, RuntimeException e) {
        LOG.log(
                System.Logger.Level.WARNING,
                "idemtx: the listener " + listener.getClass().getName() + " threw; ignored, the outcome is unchanged",
                e);
    }
}
