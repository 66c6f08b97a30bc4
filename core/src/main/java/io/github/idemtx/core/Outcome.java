package io.github.idemtx.core;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What an idempotent call produced. Exactly one of five cases; switch over them exhaustively:
 *
 * <pre>{@code
 * switch (outcome) {
 *     case Outcome.Executed<Transfer> e -> created(e.value());
 *     case Outcome.Replayed<Transfer> r -> created(r.value()).header("Idempotent-Replayed", "true");
 *     case Outcome.Rejected<Transfer> f -> problem(422, f.failure());
 *     case Outcome.FingerprintMismatch<Transfer> m -> problem(422, "key reused with another request");
 *     case Outcome.InProgress<Transfer> p -> problem(409, ...).retryAfter(p.retryAfter());
 * }
 * }</pre>
 *
 * <p>Every outcome is also a {@link RemoteOutcome}, the answer of an external effect, which adds
 * the cases of a remote call whose outcome is not known.
 *
 * @param <T> the type of the work's result
 */
public sealed interface Outcome<T> extends RemoteOutcome<T>
        permits Outcome.Executed, Outcome.Replayed, Outcome.Rejected, Outcome.FingerprintMismatch, Outcome.InProgress {

    /**
     * This call claimed the key, ran the work and committed its result together with the claim.
     *
     * @param <T> the type of the work's result
     * @param value the work's result; null only if the work returned null
     */
    record Executed<T>(@Nullable T value) implements Outcome<T> {}

    /**
     * An earlier call with the same scope, key and fingerprint completed; this is its stored
     * result, decoded, and nothing of this call committed. In the default claim order (claim first)
     * the work did not run; in the opt-in orders that run the work first ({@code WORK_FIRST},
     * {@code ADAPTIVE} while it works first) it may have run and been rolled back.
     *
     * @param value the stored result; null only if the original work returned null
     * @param completedAt when the original call completed
     * @param <T> the type of the work's result
     */
    record Replayed<T>(@Nullable T value, Instant completedAt) implements Outcome<T> {
        /**
         * Checks that {@code completedAt} is there.
         *
         * @throws NullPointerException if {@code completedAt} is null
         */
        public Replayed {
            Objects.requireNonNull(completedAt, "completedAt");
        }
    }

    /**
     * The work failed in a way the policy calls deterministic (a {@link Rejection}, or an exception
     * type the policy names): its writes were rolled back, the claim and the failure were recorded,
     * and every later call with the same request gets this same failure.
     *
     * @param failure what failed, as recorded
     * @param recordedAt when the failure was recorded
     * @param replayed false for the call whose work failed, true for every later call
     * @param <T> the type of the work's result
     */
    record Rejected<T>(Failure failure, Instant recordedAt, boolean replayed) implements Outcome<T> {
        /**
         * Checks that {@code failure} and {@code recordedAt} are there.
         *
         * @throws NullPointerException if {@code failure} or {@code recordedAt} is null
         */
        public Rejected {
            Objects.requireNonNull(failure, "failure");
            Objects.requireNonNull(recordedAt, "recordedAt");
        }
    }

    /**
     * The key was already used in this scope for a request with another fingerprint. Nothing ran;
     * the client reused a key for a different intent (HTTP: 422).
     *
     * @param <T> the type of the work's result
     */
    record FingerprintMismatch<T>() implements Outcome<T> {}

    /**
     * Another call with the same key was still running when this call's wait bound ran out. Nothing
     * ran; the client should retry later with the same key (HTTP: 409 with {@code Retry-After}).
     *
     * @param retryAfter a hint for when to retry
     * @param <T> the type of the work's result
     */
    record InProgress<T>(Duration retryAfter) implements Outcome<T> {
        /**
         * Checks that {@code retryAfter} is there.
         *
         * @throws NullPointerException if {@code retryAfter} is null
         */
        public InProgress {
            Objects.requireNonNull(retryAfter, "retryAfter");
        }
    }
}
