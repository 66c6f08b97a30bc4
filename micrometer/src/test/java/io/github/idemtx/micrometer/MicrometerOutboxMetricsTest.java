package io.github.idemtx.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.OutboxBacklog;
import io.github.idemtx.core.OutboxEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The outbox's attempts as a timer by outcome, the operators' actions as a counter, the backlog as gauges; no database. */
class MicrometerOutboxMetricsTest {

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final MicrometerOutboxMetrics metrics = MicrometerOutboxMetrics.of(meters);

    private double gauge(String name) {
        return meters.get(name).gauge().value();
    }

    @Test
    void theGaugesStartAtZeroAndFollowTheLastBacklog() {
        assertThat(gauge(MicrometerOutboxMetrics.BACKLOG)).isZero();
        assertThat(gauge(MicrometerOutboxMetrics.FAILED)).isZero();
        assertThat(gauge(MicrometerOutboxMetrics.OLDEST_PENDING_AGE)).isZero();

        metrics.outboxBacklog(OutboxBacklog.of(12, 2, Duration.ofMillis(3500)));
        assertThat(gauge(MicrometerOutboxMetrics.BACKLOG)).isEqualTo(12);
        assertThat(gauge(MicrometerOutboxMetrics.FAILED)).isEqualTo(2);
        assertThat(gauge(MicrometerOutboxMetrics.OLDEST_PENDING_AGE)).isEqualTo(3.5);

        metrics.outboxBacklog(OutboxBacklog.of(0, 2, null));
        assertThat(gauge(MicrometerOutboxMetrics.BACKLOG)).isZero();
        assertThat(gauge(MicrometerOutboxMetrics.OLDEST_PENDING_AGE)).isZero();
    }

    @Test
    void eachAttemptIsTimedByDestinationAndOutcome() {
        UUID id = UUID.randomUUID();
        metrics.outboxChanged(
                OutboxEvent.attempt(OutboxEvent.Kind.RETRYING, id, "ledger", 1, "down", Duration.ofMillis(5)));
        metrics.outboxChanged(
                OutboxEvent.attempt(OutboxEvent.Kind.DELIVERED, id, "ledger", 2, null, Duration.ofMillis(7)));
        metrics.outboxChanged(
                OutboxEvent.attempt(OutboxEvent.Kind.FAILED, UUID.randomUUID(), "ledger", 1, "422", Duration.ZERO));

        for (String outcome : new String[] {"retrying", "delivered", "failed"}) {
            assertThat(meters.get(MicrometerOutboxMetrics.DELIVERY)
                            .tags("destination", "ledger", "outcome", outcome)
                            .timer()
                            .count())
                    .as(outcome)
                    .isEqualTo(1);
        }
    }

    @Test
    void operatorsActionsAreCounted() {
        metrics.outboxChanged(OutboxEvent.byOperator(OutboxEvent.Kind.RETRIED, UUID.randomUUID(), "ledger", 10));
        metrics.outboxChanged(OutboxEvent.byOperator(OutboxEvent.Kind.DISCARDED, UUID.randomUUID(), "ledger", 10));
        metrics.outboxChanged(OutboxEvent.byOperator(OutboxEvent.Kind.DISCARDED, UUID.randomUUID(), "ledger", 10));

        assertThat(meters.get(MicrometerOutboxMetrics.OPERATOR_ACTIONS)
                        .tags("destination", "ledger", "action", "discarded")
                        .counter()
                        .count())
                .isEqualTo(2);
        assertThat(meters.find(MicrometerOutboxMetrics.DELIVERY).timer()).isNull();
    }
}
