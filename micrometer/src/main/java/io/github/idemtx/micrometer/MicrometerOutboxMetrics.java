package io.github.idemtx.micrometer;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.OutboxBacklog;
import io.github.idemtx.core.OutboxEvent;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The outbox as Micrometer meters: a listener to give the outbox relay ({@code OutboxRelay.Builder
 * .listener}) and the outbox, for the operators' actions ({@code Outbox.Builder.listener}).
 *
 * <table>
 *   <caption>meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@code idemtx.outbox.delivery}</td><td>timer</td><td>destination, outcome ({@code delivered},
 *       {@code retrying}: the attempt failed and the message waits for its backoff, {@code failed}: kept
 *       for an operator): each delivery attempt and how long the transport took</td></tr>
 *   <tr><td>{@code idemtx.outbox.operator.actions}</td><td>counter</td><td>destination, action
 *       ({@code retried}, {@code discarded})</td></tr>
 *   <tr><td>{@code idemtx.outbox.backlog}</td><td>gauge</td><td>messages pending, as the relay's last poll
 *       measured them</td></tr>
 *   <tr><td>{@code idemtx.outbox.failed}</td><td>gauge</td><td>messages kept as failed, waiting for an
 *       operator</td></tr>
 *   <tr><td>{@code idemtx.outbox.oldest.pending.age}</td><td>gauge, seconds</td><td>how long the oldest
 *       pending message has waited (0 when none)</td></tr>
 * </table>
 *
 * <p>Tags are bounded as long as destinations are (an application's few exchanges or endpoints). The
 * gauges read what the last {@link #outboxBacklog} was told: they are as fresh as the relay's last
 * poll. Thread-safe.
 */
public final class MicrometerOutboxMetrics implements IdempotencyListener<Void> {

    /** The timer of delivery attempts, by destination and outcome. */
    public static final String DELIVERY = "idemtx.outbox.delivery";
    /** The gauge of pending messages. */
    public static final String BACKLOG = "idemtx.outbox.backlog";
    /** The gauge of failed messages. */
    public static final String FAILED = "idemtx.outbox.failed";
    /** The gauge of the oldest pending message's age, in seconds. */
    public static final String OLDEST_PENDING_AGE = "idemtx.outbox.oldest.pending.age";
    /** The counter of the operators' retries and discards. */
    public static final String OPERATOR_ACTIONS = "idemtx.outbox.operator.actions";

    private final MeterRegistry meters;
    private final AtomicLong pending = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong oldestNanos = new AtomicLong();

    private MicrometerOutboxMetrics(MeterRegistry meters) {
        this.meters = meters;
        Gauge.builder(BACKLOG, pending, AtomicLong::get)
                .description("outbox messages waiting to be delivered")
                .strongReference(true)
                .register(meters);
        Gauge.builder(FAILED, failed, AtomicLong::get)
                .description("outbox messages kept as failed, waiting for an operator")
                .strongReference(true)
                .register(meters);
        Gauge.builder(OLDEST_PENDING_AGE, oldestNanos, n -> n.get() / 1e9)
                .description("how long the oldest pending outbox message has waited")
                .baseUnit("seconds")
                .strongReference(true)
                .register(meters);
    }

    /**
     * {@return the meters, registered in {@code meters} (the gauges at once, at zero)}
     *
     * @param meters where the meters are registered
     * @throws NullPointerException if {@code meters} is null
     */
    public static MicrometerOutboxMetrics of(MeterRegistry meters) {
        return new MicrometerOutboxMetrics(Objects.requireNonNull(meters, "meters must not be null"));
    }

    /** Calls are not this listener's concern: {@link MicrometerIdempotencyListener} measures them. */
    @Override
    public void callFinished(CallEvent event, @Nullable Void context) {}

    @Override
    public void outboxChanged(OutboxEvent event) {
        String kind = event.kind().name().toLowerCase(Locale.ROOT);
        java.time.Duration took = event.took();
        if (took == null) {
            Counter.builder(OPERATOR_ACTIONS)
                    .description("outbox messages retried or discarded by operators")
                    .tag("destination", event.destination())
                    .tag("action", kind)
                    .register(meters)
                    .increment();
            return;
        }
        Timer.builder(DELIVERY)
                .description("outbox delivery attempts, by how they ended")
                .tag("destination", event.destination())
                .tag("outcome", kind)
                .register(meters)
                .record(took);
    }

    @Override
    public void outboxBacklog(OutboxBacklog backlog) {
        pending.set(backlog.pending());
        failed.set(backlog.failed());
        oldestNanos.set(backlog.oldestPendingAgeOrZero().toNanos());
    }
}
