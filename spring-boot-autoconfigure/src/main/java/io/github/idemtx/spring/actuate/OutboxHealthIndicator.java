package io.github.idemtx.spring.actuate;

import io.github.idemtx.core.OutboxBacklog;
import io.github.idemtx.jooq.outbox.Outbox;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * The {@code outbox} health: the messages waiting to be delivered, the failed ones waiting for an
 * operator, and how long the oldest pending one has waited, against thresholds
 * ({@code idemtx.outbox.health.*}). Within them it is {@code UP}; past either, {@code exceededStatus}
 * ({@code WARNING} by default, for the reasons {@link IdempotencyHealthIndicator} gives), with details
 * saying which. A database it cannot read makes it {@code DOWN}.
 */
public class OutboxHealthIndicator extends AbstractHealthIndicator {

    private final Outbox outbox;
    private final long maxFailed;
    private final Duration maxPendingAge;
    private final Status exceeded;

    /**
     * An indicator over {@code outbox}.
     *
     * @param outbox reads the backlog
     * @param maxFailed the most failed messages still within bounds; 0 or more
     * @param maxPendingAge the oldest pending message's age still within bounds; positive
     * @param exceededStatus the status past a threshold: a status code such as {@code WARNING}, {@code DOWN}
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException naming the {@code idemtx.outbox.health.*} property, when a value is out of range
     */
    public OutboxHealthIndicator(Outbox outbox, long maxFailed, Duration maxPendingAge, String exceededStatus) {
        super("idemtx: the outbox health check failed");
        this.outbox = Objects.requireNonNull(outbox, "outbox must not be null");
        Objects.requireNonNull(maxPendingAge, "idemtx.outbox.health.max-pending-age must not be null");
        Objects.requireNonNull(exceededStatus, "idemtx.outbox.health.exceeded-status must not be null");
        if (maxFailed < 0) {
            throw new IllegalArgumentException("idemtx.outbox.health.max-failed must be 0 or more, was " + maxFailed);
        }
        if (maxPendingAge.isNegative() || maxPendingAge.isZero()) {
            throw new IllegalArgumentException(
                    "idemtx.outbox.health.max-pending-age must be positive, was " + maxPendingAge);
        }
        if (!exceededStatus.matches("[A-Za-z][A-Za-z0-9_]*")) {
            throw new IllegalArgumentException("idemtx.outbox.health.exceeded-status must be a status code such as"
                    + " WARNING, DOWN or OUT_OF_SERVICE, was '" + exceededStatus + "'");
        }
        this.maxFailed = maxFailed;
        this.maxPendingAge = maxPendingAge;
        this.exceeded = new Status(exceededStatus.toUpperCase(Locale.ROOT));
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        OutboxBacklog backlog = outbox.backlog();
        Duration age = backlog.oldestPendingAgeOrZero();
        boolean tooMany = backlog.failed() > maxFailed;
        boolean tooOld = age.compareTo(maxPendingAge) > 0;
        builder.status(tooMany || tooOld ? exceeded : Status.UP)
                .withDetail("pending", backlog.pending())
                .withDetail("oldestPendingAge", age.toString())
                .withDetail("maxPendingAge", maxPendingAge.toString())
                .withDetail("failed", backlog.failed())
                .withDetail("maxFailed", maxFailed);
        if (tooMany) {
            builder.withDetail(
                    "failedMessages",
                    backlog.failed() + " message(s) failed for good and wait for an operator"
                            + " (Outbox.failed, then retry or discard)");
        }
        if (tooOld) {
            builder.withDetail(
                    "pendingAge", "a message has waited " + age + ": is the relay running, is the destination up?");
        }
    }
}
