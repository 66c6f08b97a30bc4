package io.github.idemtx.spring.actuate;

import io.github.idemtx.jooq.ClaimAdmin;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * The {@code idempotency} health: the reconciliation backlog and the age of the oldest external-effect
 * claim in flight, against thresholds ({@code idemtx.health.*}). Within them it is {@code UP}; past
 * either, {@code exceededStatus} ({@code WARNING} by default), with the details saying which. A
 * database it cannot read makes it {@code DOWN}.
 *
 * <p>Why {@code WARNING} by default: a claim that needs reconciliation waits for an operator, and an
 * old in-flight claim means the recovery is not keeping up; neither is fixed by restarting or draining
 * the instance, which is what platforms do on {@code DOWN} or {@code OUT_OF_SERVICE}. Spring Boot's
 * default aggregation leaves a status it does not order ({@code WARNING}) out of the overall status,
 * so the application stays {@code UP} while the component shows the problem to dashboards and alerts.
 * Set {@code idemtx.health.exceeded-status=DOWN} where a failing health is what the alerting reads.
 */
public class IdempotencyHealthIndicator extends AbstractHealthIndicator {

    private final ClaimAdmin admin;
    private final long maxNeedingReconciliation;
    private final Duration maxInFlightAge;
    private final Status exceeded;
    private final Clock clock;

    /**
     * An indicator over {@code admin}.
     *
     * @param admin reads the backlog
     * @param maxNeedingReconciliation the most claims needing reconciliation still within bounds; 0 or more
     * @param maxInFlightAge the oldest in-flight claim still within bounds; positive
     * @param exceededStatus the status past a threshold: a status code such as {@code WARNING}, {@code DOWN}
     * @param clock measures the oldest claim's age
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException naming the {@code idemtx.health.*} property, when a value is out of range
     */
    public IdempotencyHealthIndicator(
            ClaimAdmin admin,
            long maxNeedingReconciliation,
            Duration maxInFlightAge,
            String exceededStatus,
            Clock clock) {
        super("idemtx: the idempotency health check failed");
        this.admin = Objects.requireNonNull(admin, "admin must not be null");
        Objects.requireNonNull(maxInFlightAge, "idemtx.health.max-in-flight-age must not be null");
        Objects.requireNonNull(exceededStatus, "idemtx.health.exceeded-status must not be null");
        if (maxNeedingReconciliation < 0) {
            throw new IllegalArgumentException(
                    "idemtx.health.max-needing-reconciliation must be 0 or more, was " + maxNeedingReconciliation);
        }
        if (maxInFlightAge.isNegative() || maxInFlightAge.isZero()) {
            throw new IllegalArgumentException(
                    "idemtx.health.max-in-flight-age must be positive, was " + maxInFlightAge);
        }
        if (!exceededStatus.matches("[A-Za-z][A-Za-z0-9_]*")) {
            throw new IllegalArgumentException("idemtx.health.exceeded-status must be a status code such as"
                    + " WARNING, DOWN or OUT_OF_SERVICE, was '" + exceededStatus + "'");
        }
        this.maxNeedingReconciliation = maxNeedingReconciliation;
        this.maxInFlightAge = maxInFlightAge;
        this.exceeded = new Status(exceededStatus.toUpperCase(java.util.Locale.ROOT));
        this.clock = Objects.requireNonNull(clock, "clock must not be null");
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        ClaimAdmin.Backlog backlog = admin.backlog();
        Duration age = backlog.oldestInFlightAge(clock.instant());
        boolean tooMany = backlog.needingReconciliation() > maxNeedingReconciliation;
        boolean tooOld = age.compareTo(maxInFlightAge) > 0;
        builder.status(tooMany || tooOld ? exceeded : Status.UP)
                .withDetail("needingReconciliation", backlog.needingReconciliation())
                .withDetail("maxNeedingReconciliation", maxNeedingReconciliation)
                .withDetail("inFlight", backlog.inFlight())
                .withDetail("oldestInFlightAge", age.toString())
                .withDetail("maxInFlightAge", maxInFlightAge.toString());
        if (tooMany) {
            builder.withDetail(
                    "reconciliation",
                    backlog.needingReconciliation() + " claim(s) wait for an operator (GET /actuator/idempotency/"
                            + "needs_reconciliation)");
        }
        if (tooOld) {
            builder.withDetail("inFlightAge", "a claim has been in flight for " + age + ": is the recovery running?");
        }
    }
}
