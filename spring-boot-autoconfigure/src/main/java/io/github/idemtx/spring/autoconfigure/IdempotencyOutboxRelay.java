package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.jooq.outbox.OutboxRelay;
import java.time.Duration;
import java.util.Objects;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the {@link OutboxRelay} with the context: started once the context is refreshed (after every
 * bean it uses, the migration included), stopped first when it closes, before the {@code DataSource}:
 * the message being sent is finished and marked, the rest of its batch given back, within
 * {@code idemtx.outbox.relay.shutdown-timeout}.
 */
public class IdempotencyOutboxRelay implements SmartLifecycle {

    private final OutboxRelay relay;
    private final Duration shutdownTimeout;
    private volatile boolean running;

    /**
     * A lifecycle around {@code relay}.
     *
     * @param relay the relay, not started
     * @param shutdownTimeout how long a stop waits for the message being sent
     */
    public IdempotencyOutboxRelay(OutboxRelay relay, Duration shutdownTimeout) {
        this.relay = Objects.requireNonNull(relay, "relay must not be null");
        this.shutdownTimeout = Objects.requireNonNull(shutdownTimeout, "shutdownTimeout must not be null");
    }

    /** {@return the relay it runs} */
    public OutboxRelay relay() {
        return relay;
    }

    @Override
    public synchronized void start() {
        if (!running) {
            relay.start();
            running = true;
        }
    }

    /** Stops the relay; a relay once stopped is not started again (a new context makes a new one). */
    @Override
    public synchronized void stop() {
        if (running) {
            relay.stop(shutdownTimeout);
            running = false;
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }
}
