package io.github.idemtx.micrometer;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.CallStart;
import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.ClaimOrderEvent;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.PurgeEvent;
import io.github.idemtx.core.Scope;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The library's events as Micrometer meters and observations. Given the application's
 * {@link ObservationRegistry} ({@link Builder#observations}), each call is an {@link Observation}
 * named {@value #CALL}: a timer through its {@code DefaultMeterObservationHandler}, and a span with
 * Micrometer Tracing (OpenTelemetry through its bridge). Without one, the same timer is recorded
 * directly, which costs less (no observation context per call). Beside it:
 *
 * <table>
 *   <caption>meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@code idemtx.call}</td><td>timer (from the observation)</td><td>operation, outcome, joined, exception, error</td></tr>
 *   <tr><td>{@code idemtx.call.wait}</td><td>timer</td><td>operation, outcome: calls that waited on another holder of the key, and how long</td></tr>
 *   <tr><td>{@code idemtx.call.retries}</td><td>counter</td><td>operation: attempts after the first (40001, 40P01)</td></tr>
 *   <tr><td>{@code idemtx.purge.deleted}</td><td>counter</td><td>expired claims deleted</td></tr>
 *   <tr><td>{@code idemtx.purge}</td><td>timer</td><td>outcome ({@code ok} or {@code failed})</td></tr>
 *   <tr><td>{@code idemtx.claims.changed}</td><td>counter</td><td>operation, kind: claims created, resolved, forgotten</td></tr>
 *   <tr><td>{@code idemtx.claim.order.changes}</td><td>counter</td><td>order ({@code claim-first} or
 *     {@code work-first}): the adaptive claim mode changing order, as a retry storm begins or ends</td></tr>
 *   <tr><td>{@code idemtx.claim.order.claim.first}</td><td>gauge</td><td>the transactions reporting to
 *     the registry's listeners that claim the key first now (0 while retries are rare; one dropped while
 *     claiming first stays counted)</td></tr>
 * </table>
 *
 * <p>Tags are bounded: {@code outcome} is one of eight values, {@code exception} a class name of the
 * contract's exceptions (or {@code none}). No scope, key or fingerprint becomes a tag unless
 * {@link Builder#scopeTag} maps scopes to a bounded set on purpose.
 */
@SuppressWarnings("EnumOrdinal") // meters in arrays indexed by CallEvent.Result, built once per operation
public final class MicrometerIdempotencyListener
        implements IdempotencyListener<MicrometerIdempotencyListener.InFlight> {

    /** The observation's name, and so the timer's. */
    public static final String CALL = "idemtx.call";

    /** Null when only metrics are made: then calls are timed directly, without the Observation machinery. */
    private final @Nullable ObservationRegistry observations;

    private final MeterRegistry meters;
    private final @Nullable Function<Scope, String> scopeTag;
    private final ConcurrentMap<String, Operation> operations = new ConcurrentHashMap<>();
    private final Counter purgeDeleted;
    private final Counter toClaimFirst;
    private final Counter toWorkFirst;
    private final java.util.concurrent.ConcurrentMap<String, Counter[]> claimCounters =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** The meters of one operation, by result and joined (the common case: no exception), built once. */
    private final class Operation {
        final String name;
        final Timer[] calls = new Timer[CallEvent.Result.values().length * 2];
        final Timer[] waits = new Timer[CallEvent.Result.values().length];
        final ConcurrentMap<String, Timer> failures = new ConcurrentHashMap<>();
        final Counter retries;

        Operation(String name) {
            this.name = name;
            this.retries = Counter.builder("idemtx.call.retries")
                    .description("attempts after the first, after serialization failures or deadlocks")
                    .tag("operation", name)
                    .register(meters);
            for (CallEvent.Result r : CallEvent.Result.values()) {
                waits[r.ordinal()] = Timer.builder("idemtx.call.wait")
                        .description("time a call waited on another holder of its key")
                        .tags(Tags.of("operation", name, "outcome", r.tag()))
                        .register(meters);
            }
        }

        Timer call(CallEvent.Result result, boolean joined, @Nullable String exception) {
            if (exception != null) {
                return failures.computeIfAbsent(
                        exception + "|" + joined, k -> callTimer(result, joined, simpleName(exception)));
            }
            int i = result.ordinal() * 2 + (joined ? 1 : 0);
            Timer t = calls[i];
            if (t == null) {
                t = callTimer(result, joined, "none");
                calls[i] = t; // a benign race: the registry hands out one timer per id
            }
            return t;
        }

        private Timer callTimer(CallEvent.Result result, boolean joined, String exception) {
            return Timer.builder(CALL)
                    .description("idempotent calls, by outcome")
                    .tags(Tags.of(
                            "operation",
                            name,
                            "outcome",
                            result.tag(),
                            "joined",
                            Boolean.toString(joined),
                            "exception",
                            exception,
                            "error",
                            exception))
                    .register(meters);
        }
    }

    private MicrometerIdempotencyListener(Builder b) {
        this.meters = b.meters;
        this.observations = b.observations;
        this.scopeTag = b.scopeTag;
        this.purgeDeleted = Counter.builder("idemtx.purge.deleted")
                .description("expired idempotency claims deleted")
                .register(meters);
        this.toClaimFirst = orderChanges("claim-first");
        this.toWorkFirst = orderChanges("work-first");
        // the changes to claim first less those back, over the registry's counters: right however many
        // listeners share the registry, and held strongly (by the registry) however long they live
        io.micrometer.core.instrument.Gauge.builder(
                        "idemtx.claim.order.claim.first", meters, MicrometerIdempotencyListener::claimingFirst)
                .description("idempotent transactions claiming the key first now (the adaptive mode in a retry storm)")
                .strongReference(true)
                .register(meters);
    }

    private static double claimingFirst(MeterRegistry meters) {
        return changes(meters, "claim-first") - changes(meters, "work-first");
    }

    private static double changes(MeterRegistry meters, String order) {
        Counter counter =
                meters.find("idemtx.claim.order.changes").tag("order", order).counter();
        return counter == null ? 0 : counter.count();
    }

    private Counter orderChanges(String order) {
        return Counter.builder("idemtx.claim.order.changes")
                .description("changes of the adaptive claim mode's order, as a retry storm begins or ends")
                .tag("order", order)
                .register(meters);
    }

    /**
     * {@return a listener that makes metrics in {@code meters}, through an observation registry of
     * its own (no tracing)}
     *
     * @param meters where the meters are registered
     * @throws NullPointerException if {@code meters} is null
     */
    public static MicrometerIdempotencyListener of(MeterRegistry meters) {
        return builder(meters).build();
    }

    /**
     * {@return a builder, for observations in the application's registry or a scope tag}
     *
     * @param meters where the meters are registered
     * @throws NullPointerException if {@code meters} is null
     */
    public static Builder builder(MeterRegistry meters) {
        return new Builder(meters);
    }

    /** A call's observation and its open scope, from its start to its end; opaque. */
    public static final class InFlight {
        private final Observation observation;
        private final Observation.Scope scope;

        private InFlight(Observation observation) {
            this.observation = observation;
            this.scope = observation.openScope();
        }
    }

    @Override
    public @Nullable InFlight callStarted(CallStart start) {
        if (observations == null) {
            return null; // timed from the event's total
        }
        Observation observation = Observation.createNotStarted(CALL, observations)
                .contextualName("idemtx " + start.operation())
                .lowCardinalityKeyValue("operation", start.operation())
                .start();
        return new InFlight(observation);
    }

    @Override
    public void callFinished(CallEvent event, @Nullable InFlight started) {
        Operation op = operations.computeIfAbsent(event.operation(), Operation::new);
        String outcome = event.result().tag();
        if (started != null) {
            started.scope.close();
            Observation o = started.observation
                    .lowCardinalityKeyValue("outcome", outcome)
                    .lowCardinalityKeyValue("joined", Boolean.toString(event.joined()))
                    .lowCardinalityKeyValue(
                            "exception", event.exception() == null ? "none" : simpleName(event.exception()));
            if (scopeTag != null && event.scope() != null) {
                o.lowCardinalityKeyValue("scope", scopeTag.apply(event.scope()));
            }
            o.stop();
        } else if (scopeTag != null && event.scope() != null) {
            Timer.builder(CALL)
                    .description("idempotent calls, by outcome")
                    .tags(Tags.of(
                            "operation",
                            op.name,
                            "outcome",
                            outcome,
                            "joined",
                            Boolean.toString(event.joined()),
                            "exception",
                            event.exception() == null ? "none" : simpleName(event.exception()),
                            "error",
                            event.exception() == null ? "none" : simpleName(event.exception()),
                            "scope",
                            scopeTag.apply(event.scope())))
                    .register(meters)
                    .record(event.totalNanos(), TimeUnit.NANOSECONDS);
        } else {
            op.call(event.result(), event.joined(), event.exception()).record(event.totalNanos(), TimeUnit.NANOSECONDS);
        }
        if (event.waitingNanos() > 0) {
            op.waits[event.result().ordinal()].record(event.waitingNanos(), TimeUnit.NANOSECONDS);
        }
        if (event.attempts() > 1) {
            op.retries.increment(event.attempts() - 1);
        }
    }

    /**
     * Counts {@code idemtx.claims.changed} by {@code kind} (created, resolved, forgotten) and
     * {@code operation}; the counters are made once per operation, not per call.
     */
    @Override
    public void claimChanged(ClaimEvent event) {
        Counter[] counters = claimCounters.computeIfAbsent(event.operation(), operation -> {
            ClaimEvent.Kind[] kinds = ClaimEvent.Kind.values();
            Counter[] made = new Counter[kinds.length];
            for (ClaimEvent.Kind kind : kinds) {
                made[kind.ordinal()] = Counter.builder("idemtx.claims.changed")
                        .description("claims created by calls, and resolved or forgotten by operators")
                        .tag("operation", operation)
                        .tag("kind", kind.name().toLowerCase(java.util.Locale.ROOT))
                        .register(meters);
            }
            return made;
        });
        counters[event.kind().ordinal()].increment();
    }

    /** Counts {@code idemtx.claim.order.changes} by the new order and moves the gauge of transactions reading first. */
    @Override
    public void claimOrderChanged(ClaimOrderEvent event) {
        (event.claimFirst() ? toClaimFirst : toWorkFirst).increment();
    }

    @Override
    public void purged(PurgeEvent event) {
        purgeDeleted.increment(event.deleted());
        Timer.builder("idemtx.purge")
                .description("purges of expired idempotency claims")
                .tag("outcome", event.exception() == null ? "ok" : "failed")
                .register(meters)
                .record(event.took());
    }

    private static String simpleName(String className) {
        return className.substring(className.lastIndexOf('.') + 1);
    }

    /** Builds the listener. Not thread-safe; each setter validates at once. */
    public static final class Builder {
        private final MeterRegistry meters;
        private @Nullable ObservationRegistry observations;
        private @Nullable Function<Scope, String> scopeTag;

        private Builder(MeterRegistry meters) {
            this.meters = Objects.requireNonNull(meters, "meters must not be null");
        }

        /**
         * The observation registry calls are observed in (the application's, with its handlers: the
         * meter handler, Micrometer Tracing); by default one that only makes metrics in the meter registry.
         *
         * @param observations the application's observation registry
         * @return this builder
         * @throws NullPointerException if {@code observations} is null
         */
        public Builder observations(ObservationRegistry observations) {
            this.observations = Objects.requireNonNull(observations, "observations must not be null");
            return this;
        }

        /**
         * Tags calls with {@code scope} mapped by {@code mapper}, which must map the unbounded set of
         * scopes onto a small bounded one (a tenant's plan, a region), or metrics will grow without bound.
         *
         * @param mapper the tag value of a scope; called on the caller's thread, must be thread-safe
         *     and must not return null
         * @return this builder
         * @throws NullPointerException if {@code mapper} is null
         */
        public Builder scopeTag(Function<Scope, String> mapper) {
            this.scopeTag = Objects.requireNonNull(mapper, "mapper must not be null");
            return this;
        }

        /** {@return the listener} It registers its purge counter in the meter registry at once. */
        public MicrometerIdempotencyListener build() {
            return new MicrometerIdempotencyListener(this);
        }
    }
}
