package io.github.idemtx.core;

import java.util.Objects;

/**
 * Thrown by the work to reject the request deterministically: the work's writes are rolled back,
 * the claim and this failure are recorded, and every retry with the same request gets the same
 * {@link Outcome.Rejected}, even if the world has changed since (funds deposited meanwhile).
 *
 * <p>Always treated as deterministic; no policy entry is needed. Other exception types can be made
 * deterministic with {@link IdempotencyPolicy.Builder#deterministicFailure(Class)}.
 */
public class Rejection extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient Failure failure;

    /**
     * Rejects with the given failure.
     *
     * @param failure what is recorded and replayed
     * @throws NullPointerException if {@code failure} is null
     */
    public Rejection(Failure failure) {
        // no stack trace (it is an answer, not a fault), but room for what went wrong on the way
        super(
                Objects.requireNonNull(failure, "failure must not be null").code() + ": " + failure.message(),
                null,
                true,
                false);
        this.failure = failure;
    }

    /**
     * Rejects with a failure of this code and message.
     *
     * @param code what kind of failure; see {@link Failure#code()}
     * @param message details for people; see {@link Failure#message()}
     * @throws NullPointerException if either is null
     * @throws IllegalArgumentException if {@link Failure} refuses them
     */
    public Rejection(String code, String message) {
        this(Failure.of(code, message));
    }

    /** {@return the failure that is recorded and replayed} */
    public Failure failure() {
        return failure;
    }
}
