package io.github.idemtx.core;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one call did. It carries no key, fingerprint, result or failure message. The scope is there
 * for listeners that need it (a per-tenant audit), but it is unbounded in number: it must not become
 * a metric tag unless chosen on purpose. {@link #toString} leaves it out, so logging an event cannot
 * leak it.
 *
 * <p>A final class rather than a record, so that it can gain what a later version measures without
 * breaking a listener; the library builds it, and tests of a listener can with {@link #builder}.
 */
public final class CallEvent {

    private final String operation;
    private final Result result;
    private final @Nullable String exception;
    private final boolean joined;
    private final int attempts;
    private final long totalNanos;
    private final long claimingNanos;
    private final long waitingNanos;
    private final long workNanos;
    private final long recordingNanos;
    private final @Nullable Scope scope;

    private CallEvent(Builder b) {
        this.operation = b.operation;
        this.result = b.result;
        this.exception = b.exception;
        this.joined = b.joined;
        this.attempts = b.attempts;
        this.totalNanos = b.totalNanos;
        this.claimingNanos = b.claimingNanos;
        this.waitingNanos = b.waitingNanos;
        this.workNanos = b.workNanos;
        this.recordingNanos = b.recordingNanos;
        this.scope = b.scope;
    }

    /**
     * {@return a builder of an event; every measure not set is 0, {@code attempts} 1}
     *
     * @param operation {@code "transaction"}, or {@code "effect:<name>"}
     * @param result how the call ended
     * @throws NullPointerException if an argument is null
     */
    public static Builder builder(String operation, Result result) {
        return new Builder(operation, result);
    }

    /** {@return {@code "transaction"}, or {@code "effect:<name>"}} */
    public String operation() {
        return operation;
    }

    /** {@return how the call ended} */
    public Result result() {
        return result;
    }

    /** {@return the exception's class name when {@link #result()} is {@link Result#FAILED}, else null} */
    public @Nullable String exception() {
        return exception;
    }

    /** {@return whether it ran in the caller's transaction} */
    public boolean joined() {
        return joined;
    }

    /** {@return transactions tried (more than 1 after serialization failures or deadlocks)} */
    public int attempts() {
        return attempts;
    }

    /** {@return from the start of the call to its end, in ns} */
    public long totalNanos() {
        return totalNanos;
    }

    /** {@return in the claim statements, waits excluded, in ns} */
    public long claimingNanos() {
        return claimingNanos;
    }

    /** {@return waiting on another holder of the key, in ns} */
    public long waitingNanos() {
        return waitingNanos;
    }

    /** {@return in the work, in ns} */
    public long workNanos() {
        return workNanos;
    }

    /** {@return recording the outcome, the commit included, in ns} */
    public long recordingNanos() {
        return recordingNanos;
    }

    /** {@return whose call it was; not a metric tag by default (unbounded); null for none} */
    public @Nullable Scope scope() {
        return scope;
    }

    /** How a call ended: one per {@link RemoteOutcome} case, or an exception. */
    public enum Result {
        /** {@link Outcome.Executed}. */
        EXECUTED,
        /** {@link Outcome.Replayed}. */
        REPLAYED,
        /** {@link Outcome.Rejected}, the first time or replayed. */
        REJECTED,
        /** {@link Outcome.FingerprintMismatch}. */
        FINGERPRINT_MISMATCH,
        /** {@link Outcome.InProgress}. */
        IN_PROGRESS,
        /** {@link RemoteOutcome.Unknown}. */
        UNKNOWN,
        /** {@link RemoteOutcome.NeedsReconciliation}. */
        NEEDS_RECONCILIATION,
        /** The call ended with an exception, named by {@link CallEvent#exception()}. */
        FAILED;

        /**
         * {@return the result of an outcome}
         *
         * @param outcome any outcome; not null
         */
        public static Result of(RemoteOutcome<?> outcome) {
            return switch (outcome) {
                case Outcome.Executed<?> e -> EXECUTED;
                case Outcome.Replayed<?> r -> REPLAYED;
                case Outcome.Rejected<?> f -> REJECTED;
                case Outcome.FingerprintMismatch<?> m -> FINGERPRINT_MISMATCH;
                case Outcome.InProgress<?> p -> IN_PROGRESS;
                case RemoteOutcome.Unknown<?> u -> UNKNOWN;
                case RemoteOutcome.NeedsReconciliation<?> n -> NEEDS_RECONCILIATION;
            };
        }

        /** {@return the lower-case name, as metric tags spell it ({@code fingerprint_mismatch})} */
        public String tag() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** {@return the time from the start of the call to its end} */
    public Duration total() {
        return Duration.ofNanos(totalNanos);
    }

    /** {@return the time spent in the claim statements, waits excluded} */
    public Duration claiming() {
        return Duration.ofNanos(claimingNanos);
    }

    /** {@return the time spent waiting on another holder of the key} */
    public Duration waiting() {
        return Duration.ofNanos(waitingNanos);
    }

    /** {@return the time spent in the work (for an external effect: 0, the event carries the total only)} */
    public Duration work() {
        return Duration.ofNanos(workNanos);
    }

    /** {@return the time spent recording the outcome, the commit included} */
    public Duration recording() {
        return Duration.ofNanos(recordingNanos);
    }

    @Override
    public String toString() {
        return "CallEvent[operation=" + operation + ", result=" + result
                + (exception == null ? "" : ", exception=" + exception)
                + ", joined=" + joined + ", attempts=" + attempts + ", total=" + total() + ", claiming=" + claiming()
                + ", waiting=" + waiting() + ", work=" + work() + ", recording=" + recording() + "]";
    }

    /** Builds a {@link CallEvent}. Not thread-safe. */
    public static final class Builder {
        private final String operation;
        private final Result result;
        private @Nullable String exception;
        private boolean joined;
        private int attempts = 1;
        private long totalNanos;
        private long claimingNanos;
        private long waitingNanos;
        private long workNanos;
        private long recordingNanos;
        private @Nullable Scope scope;

        private Builder(String operation, Result result) {
            this.operation = Objects.requireNonNull(operation, "operation");
            this.result = Objects.requireNonNull(result, "result");
        }

        /**
         * Sets the exception's class name.
         *
         * @param exception the exception's class name, or null
         * @return this builder
         */
        public Builder exception(@Nullable String exception) {
            this.exception = exception;
            return this;
        }

        /**
         * Sets whether the call joined.
         *
         * @param joined whether the call ran in the caller's transaction
         * @return this builder
         */
        public Builder joined(boolean joined) {
            this.joined = joined;
            return this;
        }

        /**
         * Sets the attempts.
         *
         * @param attempts transactions tried
         * @return this builder
         */
        public Builder attempts(int attempts) {
            this.attempts = attempts;
            return this;
        }

        /**
         * Sets the scope.
         *
         * @param scope whose call it was, or null
         * @return this builder
         */
        public Builder scope(@Nullable Scope scope) {
            this.scope = scope;
            return this;
        }

        /**
         * Sets the total time.
         *
         * @param nanos from the start of the call to its end
         * @return this builder
         */
        public Builder total(long nanos) {
            this.totalNanos = nanos;
            return this;
        }

        /**
         * Sets the time in the claim statements.
         *
         * @param nanos in the claim statements, waits excluded
         * @return this builder
         */
        public Builder claiming(long nanos) {
            this.claimingNanos = nanos;
            return this;
        }

        /**
         * Sets the time waiting on another holder.
         *
         * @param nanos waiting on another holder of the key
         * @return this builder
         */
        public Builder waiting(long nanos) {
            this.waitingNanos = nanos;
            return this;
        }

        /**
         * Sets the time in the work.
         *
         * @param nanos in the work
         * @return this builder
         */
        public Builder work(long nanos) {
            this.workNanos = nanos;
            return this;
        }

        /**
         * Sets the time recording the outcome.
         *
         * @param nanos recording the outcome, the commit included
         * @return this builder
         */
        public Builder recording(long nanos) {
            this.recordingNanos = nanos;
            return this;
        }

        /** {@return the event} */
        public CallEvent build() {
            return new CallEvent(this);
        }
    }
}
