package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.jooq.EffectRecovery;
import java.time.Duration;

/**
 * Told of the passes of {@link IdempotencyRecovery}: declare beans of this type to count or log them.
 * The auto-configuration declares one itself with {@code idemtx-micrometer} and a
 * {@code MeterRegistry} (the {@code idemtx.recovery.*} meters of {@code MicrometerRecoveryMetrics}).
 * Called on the recovery's threads, so implementations must be thread-safe; what they throw is logged
 * and does not stop the recovery.
 */
public interface IdempotencyRecoveryListener {

    /**
     * The recovery starts recovering {@code effect}, before its first pass.
     *
     * @param effect the effect's name
     */
    default void started(String effect) {}

    /**
     * A pass of {@code effect} returned, whether or not it took a claim over.
     *
     * @param effect the effect's name
     * @param pass how the claims it took over ended
     * @param took how long it ran
     */
    default void passed(String effect, EffectRecovery.Pass pass, Duration took) {}

    /**
     * A pass of {@code effect} threw (the database was unreachable, say); the next tick tries again.
     *
     * @param effect the effect's name
     * @param took how long it ran until it threw
     * @param exception what it threw
     */
    default void failed(String effect, Duration took, Throwable exception) {}
}
