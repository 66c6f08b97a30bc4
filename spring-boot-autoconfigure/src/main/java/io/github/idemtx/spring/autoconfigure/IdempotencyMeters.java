package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.micrometer.MicrometerIdempotencyListener;
import io.github.idemtx.micrometer.MicrometerRecoveryMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The one Micrometer listener and the recovery metrics that every instance, effect and recovery pass of
 * the context reports to, made on first use (so the application's {@code MeterRegistry} need not exist
 * before the starter's beans). Loaded only with idemtx-micrometer and Micrometer on the class path.
 */
final class IdempotencyMeters {

    private final ObjectProvider<MeterRegistry> meters;
    private final ObjectProvider<ObservationRegistry> observations;
    private final AtomicReference<@Nullable MicrometerIdempotencyListener> listener = new AtomicReference<>();
    private final AtomicReference<@Nullable MicrometerRecoveryMetrics> recovery = new AtomicReference<>();

    IdempotencyMeters(ObjectProvider<MeterRegistry> meters, ObjectProvider<ObservationRegistry> observations) {
        this.meters = meters;
        this.observations = observations;
    }

    /** The listener; null without a single {@code MeterRegistry} in the context. */
    @Nullable
    MicrometerIdempotencyListener listener() {
        MeterRegistry registry = meters.getIfUnique();
        if (registry == null) {
            return null;
        }
        return listener.updateAndGet(l -> {
            if (l != null) {
                return l;
            }
            MicrometerIdempotencyListener.Builder b = MicrometerIdempotencyListener.builder(registry);
            observations.ifUnique(b::observations);
            return b.build();
        });
    }

    /** The recovery metrics; null without a single {@code MeterRegistry} in the context. */
    @Nullable
    MicrometerRecoveryMetrics recovery() {
        MeterRegistry registry = meters.getIfUnique();
        if (registry == null) {
            return null;
        }
        return recovery.updateAndGet(r -> r != null ? r : MicrometerRecoveryMetrics.of(registry));
    }
}
