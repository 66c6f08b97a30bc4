package io.github.idemtx.jooq;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import java.time.Instant;
import java.util.Objects;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

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
     * @param intent what to send, and the downstream key to send it with
     * @param deadline answer before it, or give up: the claim's lease ends a margin later
     * @return the remote's definite answer; not null
     * @throws Exception when the answer does not say whether the request applied; the outcome is
     *     then unknown
     */
    Reply<T> call(Intent<R> intent, Instant deadline) throws Exception;

    /**
     * Asks the remote whether it has the request, by its downstream key: {@link Lookup#found},
     * {@link Lookup#refused}, {@link Lookup#absent} (the remote answered and has no record of it), or
     * {@link Lookup#unknown} (no usable answer: timeout, 5xx, a lagging index). Throwing counts as
     * unknown. Look it up by the downstream key alone: a recoverer's intent has a null
     * {@link Intent#request()} when the stored request no longer decodes (its class changed in a
     * deploy), and is looked up all the same. It runs on a thread of its own and gets four fifths of
     * the lease: past that it is interrupted and counted as unknown (a lookup that hangs cannot hold
     * the recoverer).
     *
     * @param intent what to look up; its request may be null
     * @return what the remote has; not null
     * @throws Exception when there is no usable answer; counted as {@link Lookup#unknown}
     */
    Lookup<T> lookup(Intent<R> intent) throws Exception;

    /**
     * Local writes committed together with the result (the posting), exactly once per claim: by the
     * holder that records it (a holder whose lease was taken over still records a definite answer
     * while the claim is unsettled), or with an operator's resolution. They run before the fenced
     * record, which goes out with the COMMIT, so they see the claim still in flight and hold no lock
     * on it (two holders of one claim, one whose lease was taken over, can run them at once; one
     * commits). When the fence turns out lost, or they throw (perhaps because the claim was settled
     * while they ran), that transaction is rolled back and they run again after the record, under
     * its row lock; a serialization failure or deadlock runs the whole again. So they may run more
     * than once, and one run at most commits: keep them to {@code tx}, since anything else they do
     * (a message sent, a session setting) is not undone.
     *
     * @param tx the transaction that records the result; valid only during this call
     * @param intent the request; its request may be null where the stored one no longer decodes
     * @param result what the remote applied, as recorded
     * @throws Exception when thrown by the run after the record too: rolls the recording back, the
     *     claim stays in flight, it is looked up again, and the caller gets {@code Unknown}
     */
    default void after(DSLContext tx, Intent<R> intent, @Nullable T result) throws Exception {}

    /**
     * Local writes committed together with a refusal (releasing the hold), exactly once per claim, as
     * {@link #after} (and, like it, possibly run more than once with one run committed).
     *
     * @param tx the transaction that records the refusal; valid only during this call
     * @param intent the request; its request may be null where the stored one no longer decodes
     * @param failure the refusal, as recorded
     * @throws Exception when thrown by the run after the record too: rolls the recording back, the
     *     claim stays in flight, it is looked up again, and the caller gets {@code Unknown}
     */
    default void refused(DSLContext tx, Intent<R> intent, Failure failure) throws Exception {}

    /**
     * A remote whose calls begin with local writes committed together with the in-flight claim (a
     * hold on the funds): implement this instead of {@link Remote} to have {@link #before} run. A
     * plain {@code Remote} saves a round trip: the claim's COMMIT is sent with its INSERT. Which of
     * the two a remote is, the type says, so the engine never guesses.
     *
     * @param <R> the request type
     * @param <T> the result type
     */
    interface Holding<R, T> extends Remote<R, T> {

        /**
         * Local writes committed together with the in-flight claim, before the call (a hold on the funds).
         * A {@link io.github.idemtx.core.Rejection} here refuses the request without calling the remote:
         * the writes roll back and the failure is recorded. Anything else thrown rolls everything back and
         * frees the key. The claim's lease is counted from the COMMIT that follows, so however long this
         * runs, the call has all of it; a duplicate meanwhile waits on the uncommitted claim at most its
         * {@code duplicateWait}. Like every local write of a {@code Remote} ({@link #after},
         * {@link #refused}) it must not end the transaction it is handed: {@code tx} refuses a commit,
         * rollback, auto-commit or a COMMIT/ROLLBACK statement, and the call then throws
         * {@link io.github.idemtx.core.WorkEndedTransactionException} with nothing sent and nothing
         * committed (see {@link TransactionalWork}).
         *
         * @param tx the transaction that holds the claim; valid only during this call
         * @param intent the request about to be sent
         * @throws Exception to refuse (a {@code Rejection}) or to roll everything back
         */
        void before(DSLContext tx, Intent<R> intent) throws Exception;
    }

    /**
     * One request of one claim.
     *
     * @param downstreamKey the key to send to the remote: the same for every attempt of this claim,
     *     different for every other (scope, key)
     * @param request the request; null only where the stored one no longer decodes (a recoverer's
     *     lookup and the local writes of its record, an operator's resolution), never for a call
     * @param scope the claim's scope
     * @param key the claim's key
     * @param fence the holder's fencing token (grows on every takeover); for logs
     * @param <R> the request type
     */
    record Intent<R>(
            Scope scope,
            IdempotencyKey key,
            String downstreamKey,
            @Nullable R request,
            long fence) {
        /**
         * Checks the components that are never null.
         *
         * @throws NullPointerException if {@code scope}, {@code key} or {@code downstreamKey} is null
         */
        public Intent {
            Objects.requireNonNull(scope, "scope");
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(downstreamKey, "downstreamKey");
        }
    }

    /**
     * The remote's definite answer to a call.
     *
     * @param <T> the result type
     */
    sealed interface Reply<T> {
        /**
         * {@return the remote applied the request} {@code result} is recorded and replayed.
         *
         * @param <T> the result type
         * @param result what the remote did; may be null
         */
        static <T> Reply<T> applied(@Nullable T result) {
            return new Applied<>(result);
        }

        /**
         * {@return the remote refused the request for good (declined)} Recorded as {@code Rejected}
         * and replayed.
         *
         * @param <T> the result type
         * @param failure why it refused
         * @throws NullPointerException if {@code failure} is null
         */
        static <T> Reply<T> refused(Failure failure) {
            return new Reply.Refused<>(Objects.requireNonNull(failure, "failure"));
        }

        /**
         * See {@link #applied}.
         *
         * @param result what the remote did; may be null
         * @param <T> the result type
         */
        record Applied<T>(@Nullable T result) implements Reply<T> {}

        /**
         * See {@link #refused}.
         *
         * @param failure why it refused; use {@link #refused}, which rejects null
         * @param <T> the result type
         */
        record Refused<T>(Failure failure) implements Reply<T> {}
    }

    /**
     * What a lookup by downstream key found.
     *
     * @param <T> the result type
     */
    sealed interface Lookup<T> {
        /**
         * {@return the remote applied the request}
         *
         * @param <T> the result type
         * @param result what the remote did; may be null
         */
        static <T> Lookup<T> found(@Nullable T result) {
            return new Found<>(result);
        }

        /**
         * {@return the remote has the request, refused}
         *
         * @param <T> the result type
         * @param failure why it refused
         * @throws NullPointerException if {@code failure} is null
         */
        static <T> Lookup<T> refused(Failure failure) {
            return new Lookup.Refused<>(Objects.requireNonNull(failure, "failure"));
        }

        /**
         * {@return the remote answered and has no record of the request}
         *
         * @param <T> the result type
         */
        static <T> Lookup<T> absent() {
            return new Absent<>();
        }

        /**
         * {@return no usable answer}
         *
         * @param <T> the result type
         * @param reason why, for logs
         * @throws NullPointerException if {@code reason} is null
         */
        static <T> Lookup<T> unknown(String reason) {
            return new Unknown<>(Objects.requireNonNull(reason, "reason"));
        }

        /**
         * See {@link #found}.
         *
         * @param result what the remote did; may be null
         * @param <T> the result type
         */
        record Found<T>(@Nullable T result) implements Lookup<T> {}

        /**
         * See {@link #refused}.
         *
         * @param failure why it refused; use {@link #refused}, which rejects null
         * @param <T> the result type
         */
        record Refused<T>(Failure failure) implements Lookup<T> {}

        /**
         * See {@link #absent}.
         *
         * @param <T> the result type
         */
        record Absent<T>() implements Lookup<T> {}

        /**
         * See {@link #unknown}.
         *
         * @param reason why, for logs; use {@link #unknown}, which rejects null
         * @param <T> the result type
         */
        record Unknown<T>(String reason) implements Lookup<T> {}
    }
}
