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
 * @param operation {@code "transaction"}, or {@code "effect:<name>"}
 * @param result how it ended
 * @param exception the exception's class name when {@code result} is {@link Result#FAILED}, else null
 * @param joined whether it ran in the caller's transaction
 * @param attempts transactions tried (more than 1 after serialization failures or deadlocks)
 * @param totalNanos from the start of the call to its end ({@link #total()})
 * @param claimingNanos in the claim statements, waits excluded ({@link #claiming()})
 * @param waitingNanos waiting on another holder of the key ({@link #waiting()})
 * @param workNanos in the work ({@link #work()})
 * @param recordingNanos recording the outcome, the commit included ({@link #recording()})
 * @param scope whose call it was; not a metric tag by default (unbounded)
 */
public record CallEvent(String operation, Result result, @Nullable String exception, boolean joined, int attempts, long totalNanos,
        long claimingNanos, long waitingNanos, long workNanos, long recordingNanos, Scope scope) {

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

    /**
     * Checks the two components that are never null.
     *
     * @throws NullPointerException if {@code operation} or {@code result} is null
     */
    public CallEvent {
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(result, "result");
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
        return "CallEvent[operation=" + operation + ", result=" + result + (exception == null ? "" : ", exception=" + exception)
                + ", joined=" + joined + ", attempts=" + attempts + ", total=" + total() + ", claiming=" + claiming()
                + ", waiting=" + waiting() + ", work=" + work() + ", recording=" + recording() + "]";
    }
}
