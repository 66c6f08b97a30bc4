package io.github.idemtx.core;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one purge did. A final class rather than a record, so that it can gain what a later version
 * reports without breaking a listener.
 */
public final class PurgeEvent {

    private final int deleted;
    private final int limit;
    private final Duration took;
    private final @Nullable String exception;

    private PurgeEvent(int deleted, int limit, Duration took, @Nullable String exception) {
        this.deleted = deleted;
        this.limit = limit;
        this.took = Objects.requireNonNull(took, "took");
        this.exception = exception;
    }

    /**
     * {@return what a purge did}
     *
     * @param deleted expired claims deleted (0 when it failed)
     * @param limit the most it was asked to delete
     * @param took how long it took
     * @param exception the exception's class name when it failed, else null
     * @throws NullPointerException if {@code took} is null
     */
    public static PurgeEvent of(int deleted, int limit, Duration took, @Nullable String exception) {
        return new PurgeEvent(deleted, limit, took, exception);
    }

    /** {@return expired claims deleted (0 when it failed)} */
    public int deleted() {
        return deleted;
    }

    /** {@return the most it was asked to delete} */
    public int limit() {
        return limit;
    }

    /** {@return how long it took} */
    public Duration took() {
        return took;
    }

    /** {@return the exception's class name when it failed, else null} */
    public @Nullable String exception() {
        return exception;
    }

    @Override
    public String toString() {
        return "PurgeEvent[deleted=" + deleted + ", limit=" + limit + ", took=" + took
                + (exception == null ? "" : ", exception=" + exception) + "]";
    }
}
