package io.github.idemtx.http;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import java.util.Objects;
import java.util.function.Function;

/**
 * Turns the {@link Outcome} of an idempotent call whose result is a {@link StoredResponse} into the
 * response to send, following the conventions of the {@code Idempotency-Key} draft:
 *
 * <ul>
 *   <li>{@code Executed}: the stored response;
 *   <li>{@code Replayed}: the same status, headers and body, plus {@code Idempotent-Replayed: true};
 *   <li>{@code Rejected}: the rejection's response ({@link Problem#rejected} by default, 422), marked
 *       as a replay when it is one;
 *   <li>{@code FingerprintMismatch}: 422 {@link Problem#keyReused};
 *   <li>{@code InProgress}: 409 {@link Problem#inProgress} with {@code Retry-After};
 *   <li>for an external effect ({@link RemoteOutcome}), {@code Unknown}: 503
 *       {@link Problem#outcomeUnknown} with {@code Retry-After}, and {@code NeedsReconciliation}: 502
 *       {@link Problem#needsReconciliation}.
 * </ul>
 */
public final class IdempotentResponses {

    /** The header that marks a replayed response. */
    public static final String REPLAYED_HEADER = "Idempotent-Replayed";

    private IdempotentResponses() {}

    /**
     * The response to send, with rejections as 422 problems carrying the failure's code. Takes an
     * {@link Outcome} of {@code IdempotentTransaction} or a {@link RemoteOutcome} of an external
     * effect (every {@code Outcome} is one).
     *
     * @param outcome the call's outcome
     * @return the response to send
     * @throws NullPointerException if {@code outcome} is null, or an executed or replayed call
     *     recorded no response (its work returned null)
     */
    public static StoredResponse toResponse(RemoteOutcome<StoredResponse> outcome) {
        return toResponse(outcome, failure -> Problem.rejected(failure).toResponse());
    }

    /**
     * The response to send, with rejections turned into responses by {@code rejection} (which must
     * depend on the failure alone, so a replay answers the same).
     *
     * @param outcome the call's outcome
     * @param rejection the response for a recorded failure; must not return null
     * @return the response to send
     * @throws NullPointerException if an argument is null, {@code rejection} returned null, or an
     *     executed or replayed call recorded no response (its work returned null)
     */
    public static StoredResponse toResponse(
            RemoteOutcome<StoredResponse> outcome, Function<Failure, StoredResponse> rejection) {
        Objects.requireNonNull(outcome, "outcome must not be null");
        Objects.requireNonNull(rejection, "rejection must not be null");
        return switch (outcome) {
            case Outcome.Executed<StoredResponse> e ->
                Objects.requireNonNull(e.value(), "the work recorded no response");
            case Outcome.Replayed<StoredResponse> r ->
                Objects.requireNonNull(r.value(), "the work recorded no response")
                        .withHeader(REPLAYED_HEADER, "true");
            case Outcome.Rejected<StoredResponse> f -> {
                StoredResponse response =
                        Objects.requireNonNull(rejection.apply(f.failure()), "rejection returned null");
                yield f.replayed() ? response.withHeader(REPLAYED_HEADER, "true") : response;
            }
            case Outcome.FingerprintMismatch<StoredResponse> m ->
                Problem.keyReused().toResponse();
            case Outcome.InProgress<StoredResponse> p ->
                Problem.inProgress(p.retryAfter())
                        .toResponse()
                        .withHeader("Retry-After", Long.toString(Problem.retryAfterSeconds(p.retryAfter())));
            case RemoteOutcome.Unknown<StoredResponse> u ->
                Problem.outcomeUnknown(u.retryAfter())
                        .toResponse()
                        .withHeader("Retry-After", Long.toString(Problem.retryAfterSeconds(u.retryAfter())));
            case RemoteOutcome.NeedsReconciliation<StoredResponse> n ->
                Problem.needsReconciliation().toResponse();
        };
    }
}
