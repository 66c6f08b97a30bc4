package io.github.idemtx.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * How idempotent calls behave: how long a claim lives, how long a duplicate waits for the call
 * that holds its key, how often a transaction is retried, how large a result may be and which
 * failures are recorded rather than released.
 *
 * <p>Immutable and thread-safe. {@link #defaults()} gives the documented defaults; {@link #builder()}
 * changes some of them. Each setting is validated when it is set, with a message naming the
 * setting and its limits.
 */
public final class IdempotencyPolicy {

    /** Default {@link #ttl()}: 24 hours. */
    public static final Duration DEFAULT_TTL = Duration.ofHours(24);
    /** Shortest {@link #ttl()}: 1 second. */
    static final Duration SHORTEST_TTL = Duration.ofSeconds(1);
    /** Longest {@link #ttl()}: 3650 days. */
    static final Duration LONGEST_TTL = Duration.ofDays(3650);

    /** Default {@link #duplicateWait()}: 5 seconds. */
    public static final Duration DEFAULT_DUPLICATE_WAIT = Duration.ofSeconds(5);
    /** Shortest {@link #duplicateWait()}: 1 millisecond. */
    static final Duration SHORTEST_DUPLICATE_WAIT = Duration.ofMillis(1);
    /** Longest {@link #duplicateWait()}: 10 minutes. */
    static final Duration LONGEST_DUPLICATE_WAIT = Duration.ofMinutes(10);

    /** Default {@link #retryAfter()}: 1 second. */
    public static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(1);
    /** Longest {@link #retryAfter()}: 1 hour. */
    static final Duration LONGEST_RETRY_AFTER = Duration.ofHours(1);

    /** Default {@link #maxAttempts()}: 5. */
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    /** Largest {@link #maxAttempts()}: 100. */
    static final int MOST_ATTEMPTS = 100;

    /** Default {@link #initialBackoff()}: 5 milliseconds. */
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(5);
    /** Default {@link #maxBackoff()}: 500 milliseconds. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMillis(500);
    /** Longest {@link #initialBackoff()} and {@link #maxBackoff()}: 1 minute. */
    static final Duration LONGEST_BACKOFF = Duration.ofMinutes(1);

    /** Default {@link #maxResultBytes()}: 1 MiB. */
    public static final int DEFAULT_MAX_RESULT_BYTES = 1024 * 1024;
    /** Largest {@link #maxResultBytes()}: 64 MiB. */
    static final int LARGEST_RESULT_BYTES = 64 * 1024 * 1024;

    private static final IdempotencyPolicy DEFAULTS = new Builder().build();

    private final Duration ttl;
    private final Duration duplicateWait;
    private final Duration retryAfter;
    private final int maxAttempts;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final int maxResultBytes;
    private final List<Deterministic<?>> deterministic;

    private IdempotencyPolicy(Builder b) {
        this.ttl = b.ttl;
        this.duplicateWait = b.duplicateWait;
        this.retryAfter = b.retryAfter;
        this.maxAttempts = b.maxAttempts;
        this.initialBackoff = b.initialBackoff;
        this.maxBackoff = b.maxBackoff;
        this.maxResultBytes = b.maxResultBytes;
        this.deterministic = List.copyOf(b.deterministic);
    }

    /** {@return the documented defaults} */
    public static IdempotencyPolicy defaults() {
        return DEFAULTS;
    }

    /** {@return a builder starting from the defaults} */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a builder starting from this policy's settings} */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.ttl = ttl;
        b.duplicateWait = duplicateWait;
        b.retryAfter = retryAfter;
        b.maxAttempts = maxAttempts;
        b.initialBackoff = initialBackoff;
        b.maxBackoff = maxBackoff;
        b.maxResultBytes = maxResultBytes;
        b.deterministic.addAll(deterministic);
        return b;
    }

    /**
     * {@return how long a completed claim is remembered} Within it, a call with the same key replays;
     * after it, the claim counts as absent and the next call takes it over and runs again.
     */
    public Duration ttl() {
        return ttl;
    }

    /**
     * {@return how long a call waits for a concurrent call holding the same key to finish before it
     * gives up with {@link Outcome.InProgress}} The bound applies to the claim statement alone, never
     * to the work's own statements.
     */
    public Duration duplicateWait() {
        return duplicateWait;
    }

    /** {@return the hint returned in {@link Outcome.InProgress#retryAfter()}} */
    public Duration retryAfter() {
        return retryAfter;
    }

    /**
     * {@return how many times a call runs its whole unit (claim, work, result) when the database
     * reports a serialization failure (40001) or a deadlock (40P01)} 1 means no retry.
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /** {@return the upper bound of the first retry's random (full-jitter) delay; doubled for each retry after it} */
    public Duration initialBackoff() {
        return initialBackoff;
    }

    /** {@return the upper bound of any retry's random delay} */
    public Duration maxBackoff() {
        return maxBackoff;
    }

    /**
     * {@return the largest encoded result that is stored, in bytes} A larger one rolls the call back
     * with {@link ResultTooLargeException}.
     */
    public int maxResultBytes() {
        return maxResultBytes;
    }

    /**
     * The failure to record for {@code exception}, if it is deterministic: a {@link Rejection}, or an
     * instance of a type named with {@link Builder#deterministicFailure}. Empty means the exception is
     * transient: the call is rolled back and the key released.
     *
     * @param exception what the work threw
     * @return the failure to record, or empty
     * @throws NullPointerException if {@code exception} is null, or a mapper returned null
     */
    public Optional<Failure> classify(Throwable exception) {
        Objects.requireNonNull(exception, "exception must not be null");
        if (exception instanceof Rejection rejection) {
            return Optional.of(rejection.failure());
        }
        for (Deterministic<?> d : deterministic) {
            if (d.type.isInstance(exception)) {
                return Optional.of(d.record(exception));
            }
        }
        return Optional.empty();
    }

    @Override
    public String toString() {
        return "IdempotencyPolicy[ttl=" + ttl + ", duplicateWait=" + duplicateWait + ", retryAfter=" + retryAfter
                + ", maxAttempts=" + maxAttempts + ", initialBackoff=" + initialBackoff + ", maxBackoff=" + maxBackoff
                + ", maxResultBytes=" + maxResultBytes + ", deterministic=" + deterministic + "]";
    }

    private record Deterministic<E extends Throwable>(Class<E> type, Function<? super E, Failure> mapper) {
        Failure record(Throwable exception) {
            Failure failure = mapper.apply(type.cast(exception));
            if (failure == null) {
                throw new NullPointerException("the failure mapper for " + type.getName() + " returned null");
            }
            return failure;
        }

        @Override
        public String toString() {
            return type.getName();
        }
    }

    /** Builds an {@link IdempotencyPolicy}. Not thread-safe; each setter validates at once. */
    public static final class Builder {
        private Duration ttl = DEFAULT_TTL;
        private Duration duplicateWait = DEFAULT_DUPLICATE_WAIT;
        private Duration retryAfter = DEFAULT_RETRY_AFTER;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
        private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
        private int maxResultBytes = DEFAULT_MAX_RESULT_BYTES;
        private final List<Deterministic<?>> deterministic = new ArrayList<>();

        private Builder() {}

        /**
         * See {@link IdempotencyPolicy#ttl()}.
         *
         * @param ttl from 1 second to 3650 days
         * @return this builder
         * @throws NullPointerException if {@code ttl} is null
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder ttl(Duration ttl) {
            this.ttl = within("ttl", ttl, SHORTEST_TTL, LONGEST_TTL);
            return this;
        }

        /**
         * See {@link IdempotencyPolicy#duplicateWait()}.
         *
         * @param duplicateWait from 1 millisecond to 10 minutes, in whole milliseconds
         * @return this builder
         * @throws NullPointerException if {@code duplicateWait} is null
         * @throws IllegalArgumentException if it is out of range or not whole milliseconds
         */
        public Builder duplicateWait(Duration duplicateWait) {
            within("duplicateWait", duplicateWait, SHORTEST_DUPLICATE_WAIT, LONGEST_DUPLICATE_WAIT);
            if (duplicateWait.toNanos() % 1_000_000 != 0) {
                throw new IllegalArgumentException("duplicateWait must be whole milliseconds, was " + duplicateWait);
            }
            this.duplicateWait = duplicateWait;
            return this;
        }

        /**
         * See {@link IdempotencyPolicy#retryAfter()}.
         *
         * @param retryAfter from zero to 1 hour
         * @return this builder
         * @throws NullPointerException if {@code retryAfter} is null
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder retryAfter(Duration retryAfter) {
            this.retryAfter = within("retryAfter", retryAfter, Duration.ZERO, LONGEST_RETRY_AFTER);
            return this;
        }

        /**
         * See {@link IdempotencyPolicy#maxAttempts()}.
         *
         * @param maxAttempts from 1 to 100
         * @return this builder
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1 || maxAttempts > MOST_ATTEMPTS) {
                throw new IllegalArgumentException(
                        "maxAttempts must be between 1 and " + MOST_ATTEMPTS + ", was " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * See {@link IdempotencyPolicy#initialBackoff()} and {@link IdempotencyPolicy#maxBackoff()}.
         *
         * @param initial from zero to 1 minute, at most {@code max}
         * @param max from zero to 1 minute
         * @return this builder
         * @throws NullPointerException if either is null
         * @throws IllegalArgumentException if either is out of range, or {@code initial > max}
         */
        public Builder backoff(Duration initial, Duration max) {
            within("initialBackoff", initial, Duration.ZERO, LONGEST_BACKOFF);
            within("maxBackoff", max, Duration.ZERO, LONGEST_BACKOFF);
            if (initial.compareTo(max) > 0) {
                throw new IllegalArgumentException(
                        "initialBackoff must not exceed maxBackoff, was " + initial + " > " + max);
            }
            this.initialBackoff = initial;
            this.maxBackoff = max;
            return this;
        }

        /**
         * See {@link IdempotencyPolicy#maxResultBytes()}.
         *
         * @param maxResultBytes from 0 to 64 MiB
         * @return this builder
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder maxResultBytes(int maxResultBytes) {
            if (maxResultBytes < 0 || maxResultBytes > LARGEST_RESULT_BYTES) {
                throw new IllegalArgumentException(
                        "maxResultBytes must be between 0 and " + LARGEST_RESULT_BYTES + ", was " + maxResultBytes);
            }
            this.maxResultBytes = maxResultBytes;
            return this;
        }

        /**
         * Makes exceptions of {@code type} (and its subtypes) deterministic, recorded with
         * {@link Failure#of(Throwable)}: the simple class name and the message.
         *
         * @param type the exception type
         * @return this builder
         * @throws NullPointerException if {@code type} is null
         */
        public Builder deterministicFailure(Class<? extends Exception> type) {
            return deterministicFailure(type, Failure::of);
        }

        /**
         * Makes exceptions of {@code type} (and its subtypes) deterministic, recorded as
         * {@code mapper} says. Types are tried in the order they were added.
         *
         * @param <E> the exception type
         * @param type the exception type
         * @param mapper the failure to record for an exception; must not return null
         * @return this builder
         * @throws NullPointerException if either is null
         */
        public <E extends Exception> Builder deterministicFailure(Class<E> type, Function<? super E, Failure> mapper) {
            Objects.requireNonNull(type, "type must not be null");
            Objects.requireNonNull(mapper, "mapper must not be null");
            deterministic.add(new Deterministic<>(type, mapper));
            return this;
        }

        /** {@return the policy} The builder can be used again afterwards. */
        public IdempotencyPolicy build() {
            return new IdempotencyPolicy(this);
        }

        private static Duration within(String name, Duration value, Duration min, Duration max) {
            Objects.requireNonNull(value, name + " must not be null");
            if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
                throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", was " + value);
            }
            return value;
        }
    }
}
