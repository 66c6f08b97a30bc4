package io.github.idemtx.core;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one purge did.
 *
 * @param deleted expired claims deleted (0 when it failed)
 * @param limit the most it was asked to delete
 * @param took how long it took
 * @param exception the exception's class name when it failed, else null
 */
public record PurgeEvent(int deleted, int limit, Duration took, @Nullable String exception) {
    /**
     * Checks that {@code took} is there.
     *
     * @throws NullPointerException if {@code took} is null
     */
    public PurgeEvent {
        Objects.requireNonNull(took, "took");
    }
}
