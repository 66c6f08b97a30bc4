package io.github.idemtx.core;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * What a call of an external effect (a claim around a call to a remote system, such as a payment
 * provider) produced: one of the five {@link Outcome} cases, or one of two that exist only because
 * the remote system is outside the database's transaction. Switch over all seven:
 *
 * <pre>{@code
 * switch (outcome) {
 *     case Outcome.Executed<Charge> e -> created(e.value());
 *     case Outcome.Replayed<Charge> r -> created(r.value()).header("Idempotent-Replayed", "true");
 *     case Outcome.Rejected<Charge> f -> problem(422, f.failure());          // e.g. the charge was declined
 *     case Outcome.FingerprintMismatch<Charge> m -> problem(422, "key reused with another request");
 *     case Outcome.InProgress<Charge> p -> problem(409, ...).retryAfter(p.retryAfter());
 *     case RemoteOutcome.Unknown<Charge> u -> problem(503, ...).retryAfter(u.retryAfter());
 *     case RemoteOutcome.NeedsReconciliation<Charge> n -> problem(502, ...);
 * }
 * }</pre>
 *
 * <p>The two remote cases are a type of their own, not cases of {@code Outcome}, so that every
 * existing exhaustive switch over {@code Outcome} stays complete; {@code Outcome} extends this type,
 * so its five cases are the same records here and code that takes a {@code RemoteOutcome} (the
 * HTTP mappings) takes every {@code Outcome} too.
 *
 * @param <T> the type of the remote call's result
 */
public sealed interface RemoteOutcome<T> permits Outcome, RemoteOutcome.Unknown, RemoteOutcome.NeedsReconciliation {

    /**
     * The remote call's outcome is not known yet (it timed out, failed with an error that does not
     * say whether it applied, or a lookup could not tell). The claim stays in flight and is never
     * released by time, so the request is not sent twice blindly: a retry with the same key after
     * {@code retryAfter}, or the recoverer, looks it up at the remote and records what it finds
     * (HTTP: 503 with {@code Retry-After}).
     *
     * @param retryAfter a hint for when to retry with the same key
     * @param reason what made it unknown, for logs (never shown to clients as is)
     * @param <T> the type of the remote call's result
     */
    record Unknown<T>(Duration retryAfter, String reason) implements RemoteOutcome<T> {
        /**
         * Checks that both components are there.
         *
         * @throws NullPointerException if {@code retryAfter} or {@code reason} is null
         */
        public Unknown {
            Objects.requireNonNull(retryAfter, "retryAfter");
            Objects.requireNonNull(reason, "reason");
        }
    }

    /**
     * The remote system never told whether it applied the request, through every lookup of the
     * recovery schedule: the claim waits for an operator to reconcile it against the remote's own
     * records and record its outcome. Retries get this answer until then (HTTP: 502).
     *
     * @param since when the claim was handed to reconciliation
     * @param <T> the type of the remote call's result
     */
    record NeedsReconciliation<T>(Instant since) implements RemoteOutcome<T> {
        /**
         * Checks that {@code since} is there.
         *
         * @throws NullPointerException if {@code since} is null
         */
        public NeedsReconciliation {
            Objects.requireNonNull(since, "since");
        }
    }
}
