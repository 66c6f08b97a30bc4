package io.github.idemtx.core;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The outbox's backlog at one moment: what {@link IdempotencyListener#outboxBacklog} is told by the
 * outbox relay after each of its polls, and what the outbox reports on request. A final class rather
 * than a record, so that it can gain what a later version reports without breaking a listener.
 */
public final class OutboxBacklog {

    private final long pending;
    private final long failed;
    private final @Nullable Duration oldestPendingAge;

    private OutboxBacklog(long pending, long failed, @Nullable Duration oldestPendingAge) {
        if (pending < 0 || failed < 0) {
            throw new IllegalArgumentException("counts must not be negative, were " + pending + " and " + failed);
        }
        this.pending = pending;
        this.failed = failed;
        this.oldestPendingAge = oldestPendingAge;
    }

    /**
     * {@return the backlog}
     *
     * @param pending messages waiting to be delivered (retries included)
     * @param failed messages kept as failed, waiting for an operator
     * @param oldestPendingAge how long the oldest pending message has waited since it was added;
     *     null when none is pending
     * @throws IllegalArgumentException if a count is negative
     */
    public static OutboxBacklog of(long pending, long failed, @Nullable Duration oldestPendingAge) {
        return new OutboxBacklog(pending, failed, oldestPendingAge);
    }

    /** {@return messages waiting to be delivered, retries included} */
    public long pending() {
        return pending;
    }

    /** {@return messages kept as failed, waiting for an operator} */
    public long failed() {
        return failed;
    }

    /** {@return how long the oldest pending message has waited; null when none is pending} */
    public @Nullable Duration oldestPendingAge() {
        return oldestPendingAge;
    }

    /** {@return {@link #oldestPendingAge()}, or zero when none is pending} */
    public Duration oldestPendingAgeOrZero() {
        return Objects.requireNonNullElse(oldestPendingAge, Duration.ZERO);
    }

    @Override
    public String toString() {
        return "OutboxBacklog[pending=" + pending + ", failed=" + failed
                + (oldestPendingAge == null ? "" : ", oldestPendingAge=" + oldestPendingAge) + "]";
    }
}
