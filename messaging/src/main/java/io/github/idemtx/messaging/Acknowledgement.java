package io.github.idemtx.messaging;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultTooLargeException;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.core.UnsupportedDatabaseException;
import io.github.idemtx.core.WorkEndedTransactionException;
import java.time.Duration;
import java.util.Objects;

/**
 * What a message consumer does with a message once the idempotent call it made for it returned or
 * threw: acknowledge it, deliver it again later, move it to a dead-letter queue, or stop consuming,
 * with the reason. Broker-neutral; the consumer maps {@link Action} onto its broker (RabbitMQ:
 * {@code basicAck}; {@code basicNack} with requeue; a publish to the dead-letter queue then
 * {@code basicAck}; {@code basicNack} with requeue, then cancel the consumer and alert).
 *
 * <pre>{@code
 * Acknowledgement ack;
 * try {
 *     ack = Acknowledgement.of(transfers.run(scope, key, fingerprint, tx -> apply(intent, tx)));
 * } catch (RuntimeException | Error e) {
 *     ack = Acknowledgement.of(e);
 * }
 * ack = ack.giveUpAfter(deliveries, 5);
 * switch (ack.action()) {
 *     case ACK -> channel.basicAck(tag, false);                 // after the commit: run returned
 *     case RETRY -> channel.basicNack(tag, false, true);        // the same message, the same key, later
 *     case DEAD_LETTER -> { deadLetters.publish(message, ack.reason()); channel.basicAck(tag, false); }
 *     case STOP -> { channel.basicNack(tag, false, true); stopConsuming(ack.reason()); }
 * }
 * }</pre>
 *
 * <p>Build the consumer's {@code IdempotentTransaction} with {@code TransactionMode.OWN}: then a
 * call that would join a transaction already open is refused ({@link Action#STOP}) instead of
 * returning before anything committed.
 *
 * <p>A call that owns its transaction returns only after that transaction committed, so
 * acknowledging after it is never too early; a consumer killed before it acknowledged gets the
 * message again, and the same key replays the recorded answer. A call that <em>joins</em> the
 * consumer's open transaction (a {@code @Transactional} listener, a jOOQ {@code transaction} around
 * it) returns before anything is committed: acknowledge only after that transaction commits (in
 * Spring, {@code TransactionSynchronization.afterCommit}), never in its body. That holds only if the key is the intent's, the same on every delivery: the
 * producer's intent id, or a key derived from the intent's fields ({@code DerivedKeys}), never the
 * delivery tag, a timestamp of the delivery or a random id.
 *
 * @param action what to do with the message
 * @param reason why, for logs and the dead-letter queue's header; never blank; on one line (line
 *     breaks, as in some exceptions' messages, become spaces)
 * @param retryAfter for {@link Action#RETRY}, how long to wait before the next attempt (a hint,
 *     zero where there is none); {@link Duration#ZERO} for the other actions
 */
public record Acknowledgement(Action action, String reason, Duration retryAfter) {

    private static final java.util.regex.Pattern LINE_BREAKS = java.util.regex.Pattern.compile("\\s*[\\r\\n]+\\s*");

    /** What to do with the message. */
    public enum Action {
        /**
         * Acknowledge: the call's result (or its recorded refusal) is committed and the message is
         * done. Answer it first where the producer waits for an answer.
         */
        ACK,
        /**
         * Deliver it again, with the same key, after {@link #retryAfter()}: nothing was recorded
         * for it, or what was recorded says "not yet" (another delivery still runs the same key, a
         * remote's outcome is still unknown).
         */
        RETRY,
        /**
         * Park it where a person looks, with {@link #reason()}, and acknowledge it: delivering it
         * again would fail the same way (a key reused for another intent, a claim waiting for
         * reconciliation, a message that cannot be decoded, a result too large to record).
         */
        DEAD_LETTER,
        /**
         * Put it back in the queue and stop consuming, alerting someone with {@link #reason()}: the
         * consumer's code or setup must change before <em>any</em> message can be applied (it
         * joins a transaction it cannot own, its work ends the transaction, the claim table is
         * missing). Retrying would fail every message the same way, and parking would empty the
         * whole backlog into the dead-letter queue.
         */
        STOP
    }

    /**
     * Checks the fields.
     *
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code reason} is blank, {@code retryAfter} is negative,
     *     or not zero for an action other than {@link Action#RETRY}
     */
    public Acknowledgement {
        Objects.requireNonNull(action, "action must not be null");
        Objects.requireNonNull(reason, "reason must not be null");
        Objects.requireNonNull(retryAfter, "retryAfter must not be null");
        reason = LINE_BREAKS.matcher(reason.strip()).replaceAll(" "); // one line: it goes into logs and headers
        if (reason.isBlank()) {
            throw new IllegalArgumentException("reason must not be blank");
        }
        if (retryAfter.isNegative()) {
            throw new IllegalArgumentException("retryAfter must not be negative, was " + retryAfter);
        }
        if (action != Action.RETRY && !retryAfter.isZero()) {
            throw new IllegalArgumentException("retryAfter is for RETRY only; " + action + " was given " + retryAfter);
        }
    }

    /**
     * What to do with a message whose call returned {@code outcome}:
     *
     * <ul>
     *   <li>{@code Executed}, {@code Replayed}: {@link Action#ACK} (a redelivery replays the first
     *       answer: answer it again, identically, and acknowledge);
     *   <li>{@code Rejected}: {@link Action#ACK}, the refusal is recorded and is the answer;
     *   <li>{@code FingerprintMismatch}: {@link Action#DEAD_LETTER}, the key was used for another
     *       intent (a reused intent id, or equal fields where the key is derived);
     *   <li>{@code InProgress}: {@link Action#RETRY} after its hint, another delivery of the same key
     *       still runs;
     *   <li>an external effect's {@code Unknown}: {@link Action#RETRY} after its hint, the same key
     *       later looks the outcome up; {@code NeedsReconciliation}: {@link Action#DEAD_LETTER}, an
     *       operator settles it first.
     * </ul>
     *
     * @param outcome the call's outcome
     * @return the decision, with its reason
     * @throws NullPointerException if {@code outcome} is null
     */
    public static Acknowledgement of(RemoteOutcome<?> outcome) {
        Objects.requireNonNull(outcome, "outcome must not be null");
        return switch (outcome) {
            case Outcome.Executed<?> e -> ack("executed");
            case Outcome.Replayed<?> r -> ack("replayed: the first delivery completed at " + r.completedAt());
            case Outcome.Rejected<?> f ->
                ack("rejected" + (f.replayed() ? " (replayed)" : "") + ": "
                        + f.failure().code());
            case Outcome.FingerprintMismatch<?> m ->
                deadLetter("the key was already used for a message with other content: an intent id reused for"
                        + " another intent, or two intents whose fields derive the same key");
            case Outcome.InProgress<?> p ->
                new Acknowledgement(
                        Action.RETRY, "another delivery with the same key is still running", p.retryAfter());
            case RemoteOutcome.Unknown<?> u ->
                new Acknowledgement(Action.RETRY, "the remote outcome is not known yet: " + u.reason(), u.retryAfter());
            case RemoteOutcome.NeedsReconciliation<?> n ->
                deadLetter("the claim needs reconciliation since " + n.since() + ": an operator settles it, then a"
                        + " redelivery gets the settled answer");
        };
    }

    /**
     * What to do with a message whose call threw {@code failure}. Nothing was recorded for the
     * key (a deterministic failure is an {@code Outcome.Rejected}, not an exception), or, for
     * {@link CommitOutcomeUnknownException}, it may have been (the same key replays it or runs once),
     * so it is {@link Action#RETRY}, as for any exception or error of the consumer's own work and an
     * unreachable database; except:
     *
     * <ul>
     *   <li>{@link Action#STOP} where no message can be applied until the consumer or its setup
     *       changes: {@link TransactionOwnershipException} (the call would join a transaction it
     *       cannot own, or cannot tell), {@link WorkEndedTransactionException} (the work commits or
     *       rolls back the transaction itself), {@link UnsupportedDatabaseException} (no claim
     *       table, or a server too old);
     *   <li>{@link Action#DEAD_LETTER} for {@link ResultTooLargeException}: this message's result
     *       cannot be recorded.
     * </ul>
     *
     * Bound the retries with {@link #giveUpAfter}.
     *
     * @param failure what the call threw
     * @return the decision, with the exception's class and message as its reason
     * @throws NullPointerException if {@code failure} is null
     */
    public static Acknowledgement of(Throwable failure) {
        Objects.requireNonNull(failure, "failure must not be null");
        String reason =
                failure.getClass().getSimpleName() + (failure.getMessage() == null ? "" : ": " + failure.getMessage());
        if (failure instanceof TransactionOwnershipException
                || failure instanceof WorkEndedTransactionException
                || failure instanceof UnsupportedDatabaseException) {
            return new Acknowledgement(
                    Action.STOP, "no message can be applied until the consumer changes: " + reason, Duration.ZERO);
        }
        if (failure instanceof ResultTooLargeException) {
            return deadLetter("the result cannot be recorded: " + reason);
        }
        return new Acknowledgement(Action.RETRY, reason, Duration.ZERO);
    }

    /**
     * {@link Action#DEAD_LETTER} with {@code reason}: for a message the consumer refuses before any
     * call, such as one it cannot decode (nothing is written for it).
     *
     * @param reason why, never blank
     * @return the decision
     * @throws NullPointerException if {@code reason} is null
     * @throws IllegalArgumentException if {@code reason} is blank
     */
    public static Acknowledgement deadLetter(String reason) {
        return new Acknowledgement(Action.DEAD_LETTER, reason, Duration.ZERO);
    }

    /**
     * This decision, except that a {@link Action#RETRY} of a message delivered {@code deliveries}
     * times already, of {@code limit} allowed, becomes {@link Action#DEAD_LETTER} with a reason that
     * says so: a message that never succeeds stops coming back.
     *
     * @param deliveries how many times the message was delivered, this delivery included (1 for the
     *     first; RabbitMQ's quorum queues count earlier ones in {@code x-delivery-count})
     * @param limit how many deliveries to allow
     * @return the decision
     * @throws IllegalArgumentException if {@code deliveries} or {@code limit} is less than 1
     */
    public Acknowledgement giveUpAfter(int deliveries, int limit) {
        if (deliveries < 1) {
            throw new IllegalArgumentException("deliveries counts this delivery too: at least 1, was " + deliveries);
        }
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1, was " + limit);
        }
        if (action != Action.RETRY || deliveries < limit) {
            return this;
        }
        return deadLetter("gave up after " + deliveries + " deliveries: " + reason);
    }

    private static Acknowledgement ack(String reason) {
        return new Acknowledgement(Action.ACK, reason, Duration.ZERO);
    }
}
