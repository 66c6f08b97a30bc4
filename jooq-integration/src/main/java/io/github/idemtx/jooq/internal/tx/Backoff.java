package io.github.idemtx.jooq.internal.tx;

/**
 * The pause before a retry after a serialization failure or a deadlock: "full jitter" exponential
 * backoff, a uniformly random delay between 0 and a cap that doubles with each attempt, from the
 * initial backoff up to the maximum. Pure functions; the caller supplies the randomness and sleeps.
 */
public final class Backoff {

    private Backoff() {}

    /**
     * The cap after {@code attempt} failed attempts (1 for the first): {@code initial * 2^(attempt-1)},
     * never above {@code max}, never negative, without overflow.
     */
    public static long capNanos(int attempt, long initialNanos, long maxNanos) {
        if (attempt < 1) {
            throw new IllegalArgumentException("attempt must be at least 1, was " + attempt);
        }
        long max = Math.max(0, maxNanos);
        long cap = Math.max(0, Math.min(initialNanos, max));
        for (int i = 1; i < attempt && cap < max; i++) {
            cap = cap > max / 2 ? max : cap * 2;
        }
        return cap;
    }

    /**
     * The delay after {@code attempt} failed attempts: {@code unit} (uniform in [0, 1)) scaled to
     * [0, cap], so 0 gives no delay and values near 1 the whole cap.
     */
    public static long delayNanos(int attempt, long initialNanos, long maxNanos, double unit) {
        if (!(unit >= 0 && unit < 1)) {
            throw new IllegalArgumentException("unit must be in [0, 1), was " + unit);
        }
        long cap = capNanos(attempt, initialNanos, maxNanos);
        return Math.min(cap, (long) (unit * (cap + 1.0)));
    }
}
