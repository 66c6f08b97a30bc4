package io.github.idemtx.jooq;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.time.Instant;
import java.util.Objects;
import org.jooq.DSLContext;

/**
 * The remote system behind an {@link ExternalEffect}, and the local writes around each call to it.
 * Implementations must be thread-safe. The remote must deduplicate by the intent's
 * {@link Intent#downstreamKey()} (payment providers do: Stripe's {@code Idempotency-Key}, Adyen's
 * {@code idempotency-key}) and answer a lookup by it.
 *
 * @param <R> the request type
 * @param <T> the result type
 */
public interface Remote<R, T> {

    /**
     * Sends the request, outside any transaction. Return {@link Reply#applied} with what the remote
     * did, or {@link Reply#refused} for a definite refusal (a declined charge), which is recorded
     * and replayed. Throw (or time out) when the answer does not say whether it applied: the outcome
     * is then unknown and found out later by {@link #lookup}.
     *
     * @param deadline answer before it, or give up: the claim's lease ends a margin later
     */
    Reply<T> call(Intent<R> intent, Instant deadline) throws Exception;

    /**
     * Asks the remote whether it has the request, by its downstream key: {@link Lookup#found},
     * {@link Lookup#refused}, {@link Lookup#absent} (the remote answered and has no record of it), or
     * {@link Lookup#unknown} (no usable answer: timeout, 5xx, a lagging index). Throwing counts as
     * unknown. Look it up by the downstream key alone: a recoverer's intent has a null
     * {@link Intent#request()} when the stored request no longer decodes (its class changed in a
     * deploy), and is looked up all the same.
     */
    Lookup<T> lookup(Intent<R> intent) throws Exception;

    /**
     * Local writes committed together with the in-flight claim, before the call (a hold on the funds).
     * A {@link io.github.idemtx.core.Rejection} here refuses the request without calling the remote:
     * the writes roll back and the failure is recorded. Anything else thrown rolls everything back and
     * frees the key. The claim's lease is counted from the COMMIT that follows, so however long this
     * runs, the call has all of it; a duplicate meanwhile waits on the uncommitted claim at most its
     * {@code duplicateWait}. A {@code Remote} that does not override this method saves a round trip:
     * the claim's COMMIT is sent with its INSERT. Like every local write of a {@code Remote}
     * ({@link #after}, {@link #refused}) it must not end the transaction it is handed: {@code tx}
     * refuses a commit, rollback, auto-commit or a COMMIT/ROLLBACK statement, and the call then
     * throws {@link io.github.idemtx.core.WorkEndedTransactionException} with nothing sent and
     * nothing committed (see {@link TransactionalWork}).
     */
    default void before(DSLContext tx, Intent<R> intent) throws Exception {}

    /**
     * Local writes committed together with the result (the posting), exactly once per claim: by the
     * holder that records it (a holder whose lease was taken over still records a definite answer
     * while the claim is unsettled), or with an operator's resolution.
     */
    default void after(DSLContext tx, Intent<R> intent, T result) throws Exception {}

    /** Local writes committed together with a refusal (releasing the hold), exactly once per claim, as {@link #after}. */
    default void refused(DSLContext tx, Intent<R> intent, Failure failure) throws Exception {}

    /**
     * One request of one claim.
     *
     * @param downstreamKey the key to send to the remote: the same for every attempt of this claim,
     *     different for every other (scope, key)
     * @param request the request; null only where the stored one no longer decodes (a recoverer's
     *     lookup and the local writes of its record, an operator's resolution), never for a call
     * @param fence the holder's fencing token (grows on every takeover); for logs
     */
    record Intent<R>(Scope scope, IdempotencyKey key, String downstreamKey, R request, long fence) {
        public Intent {
            Objects.requireNonNull(scope, "scope");
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(downstreamKey, "downstreamKey");
        }
    }

    /** The remote's definite answer to a call. */
    sealed interface Reply<T> {
        /** The remote applied the request; {@code result} is recorded and replayed. */
        static <T> Reply<T> applied(T result) {
            return new Applied<>(result);
        }

        /** The remote refused the request for good (declined); recorded as {@code Rejected} and replayed. */
        static <T> Reply<T> refused(Failure failure) {
            return new Refused<>(Objects.requireNonNull(failure, "failure"));
        }

        record Applied<T>(T result) implements Reply<T> {}

        record Refused<T>(Failure failure) implements Reply<T> {}
    }

    /** What a lookup by downstream key found. */
    sealed interface Lookup<T> {
        /** The remote applied the request. */
        static <T> Lookup<T> found(T result) {
            return new Found<>(result);
        }

        /** The remote has the request, refused. */
        static <T> Lookup<T> refused(Failure failure) {
            return new Refused<>(Objects.requireNonNull(failure, "failure"));
        }

        /** The remote answered and has no record of the request. */
        static <T> Lookup<T> absent() {
            return new Absent<>();
        }

        /** No usable answer. */
        static <T> Lookup<T> unknown(String reason) {
            return new Unknown<>(Objects.requireNonNull(reason, "reason"));
        }

        record Found<T>(T result) implements Lookup<T> {}

        record Refused<T>(Failure failure) implements Lookup<T> {}

        record Absent<T>() implements Lookup<T> {}

        record Unknown<T>(String reason) implements Lookup<T> {}
    }
}
