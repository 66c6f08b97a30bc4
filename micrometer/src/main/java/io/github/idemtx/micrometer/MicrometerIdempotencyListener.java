package io.github.idemtx.micrometer;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.PurgeEvent;
import io.github.idemtx.core.Scope;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Function;

/**
 * The library's events as Micrometer meters and observations. Each call is an {@link Observation}
 * named {@value #CALL}: with a {@code DefaultMeterObservationHandler} it is a timer, and with
 * Micrometer Tracing on the registry a span (OpenTelemetry through its bridge). Beside it:
 *
 * <table>
 *   <caption>meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@code idemtx.call}</td><td>timer (from the observation)</td><td>operation, outcome, joined, exception, error</td></tr>
 *   <tr><td>{@code idemtx.call.wait}</td><td>timer</td><td>operation, outcome: time waiting on another holder of the key</td></tr>
 *   <tr><td>{@code idemtx.call.retries}</td><td>counter</td><td>operation: attempts after the first (40001, 40P01)</td></tr>
 *   <tr><td>{@code idemtx.purge.deleted}</td><td>counter</td><td>expired claims deleted</td></tr>
 *   <tr><td>{@code idemtx.purge}</td><td>timer</td><td>outcome ({@code ok} or {@code failed})</td></tr>
 * </table>
 *
 * <p>Tags are bounded: {@code outcome} is one of eight values, {@code exception} a class name of the
 * contract's exceptions (or {@code none}). No scope, key or fingerprint becomes a tag unless
 * {@link Builder#scopeTag} maps scopes to a bounded set on purpose.
 */
public final class MicrometerIdempotencyListener implements IdempotencyListener {

    /** The observation's name, and so the timer's. */
    public static final String CALL = "idemtx.call";

    private final ObservationRegistry observations;
    private final MeterRegistry meters;
    private final Function<Scope, String> scopeTag;
    private final ConcurrentMap<String, Timer> waitTimers = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Counter> retryCounters = new ConcurrentHashMap<>();
    private final Counter purgeDeleted;

    private MicrometerIdempotencyListener(Builder b) {
        this.meters = b.meters;
        this.observations = b.observations != null ? b.observations : metricsOnly(b.meters);
        this.scopeTag = b.scopeTag;
        this.purgeDeleted = Counter.builder("idemtx.purge.deleted").description("expired idempotency claims deleted")
                .register(meters);
    }

    /** Metrics into {@code meters}, through an observation registry of its own (no tracing). */
    public static MicrometerIdempotencyListener of(MeterRegistry meters) {
        return builder(meters).build();
    }

    public static Builder builder(MeterRegistry meters) {
        return new Builder(meters);
    }

    private static ObservationRegistry metricsOnly(MeterRegistry meters) {
        ObservationRegistry registry = ObservationRegistry.create();
        registry.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        return registry;
    }

    private record Started(Observation observation, Observation.Scope scope) {}

    @Override
    public Object callStarted(String operation) {
        Observation observation = Observation.createNotStarted(CALL, observations)
                .contextualName("idemtx " + operation)
                .lowCardinalityKeyValue("operation", operation)
                .start();
        return new Started(observation, observation.openScope());
    }

    @Override
    public void callFinished(CallEvent event, Object started) {
        String outcome = event.result().tag();
        if (started instanceof Started s) {
            s.scope().close();
            Observation o = s.observation()
                    .lowCardinalityKeyValue("outcome", outcome)
                    .lowCardinalityKeyValue("joined", Boolean.toString(event.joined()))
                    .lowCardinalityKeyValue("exception", event.exception() == null ? "none" : simpleName(event.exception()));
            if (scopeTag != null && event.scope() != null) {
                o.lowCardinalityKeyValue("scope", scopeTag.apply(event.scope()));
            }
            o.stop();
        }
        waitTimers.computeIfAbsent(event.operation() + "|" + outcome, k -> Timer.builder("idemtx.call.wait")
                        .description("time a call waited on another holder of its key")
                        .tags(Tags.of("operation", event.operation(), "outcome", outcome)).register(meters))
                .record(event.waiting());
        if (event.attempts() > 1) {
            retryCounters.computeIfAbsent(event.operation(), op -> Counter.builder("idemtx.call.retries")
                            .description("attempts after the first, after serialization failures or deadlocks")
                            .tag("operation", op).register(meters))
                    .increment(event.attempts() - 1);
        }
    }

    @Override
    public void purged(PurgeEvent event) {
        purgeDeleted.increment(event.deleted());
        Timer.builder("idemtx.purge").description("purges of expired idempotency claims")
                .tag("outcome", event.exception() == null ? "ok" : "failed").register(meters).record(event.took());
    }

    private static String simpleName(String className) {
        return className.substring(className.lastIndexOf('.') + 1);
    }

    /** Builds the listener. */
    public static final class Builder {
        private final MeterRegistry meters;
        private ObservationRegistry observations;
        private Function<Scope, String> scopeTag;

        private Builder(MeterRegistry meters) {
            this.meters = Objects.requireNonNull(meters, "meters must not be null");
        }

        /**
         * The observation registry calls are observed in (the application's, with its handlers: the
         * meter handler, Micrometer Tracing); by default one that only makes metrics in the meter registry.
         */
        public Builder observations(ObservationRegistry observations) {
            this.observations = Objects.requireNonNull(observations, "observations must not be null");
            return this;
        }

        /**
         * Tags calls with {@code scope} mapped by {@code mapper}, which must map the unbounded set of
         * scopes onto a small bounded one (a tenant's plan, a region), or metrics will grow without bound.
         */
        public Builder scopeTag(Function<Scope, String> mapper) {
            this.scopeTag = Objects.requireNonNull(mapper, "mapper must not be null");
            return this;
        }

        public MicrometerIdempotencyListener build() {
            return new MicrometerIdempotencyListener(this);
        }
    }
}
