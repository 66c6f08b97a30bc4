package io.github.idemtx.jooq;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * How an {@link ExternalEffect} whose remote takes no idempotency key and answers no lookup (most
 * banks' file and statement interfaces) is settled: from the remote's statement, read later ({@link
 * ExternalEffect.Builder#settledByStatement}). Before every send the claim is marked <b>sent</b>,
 * fenced and committed, with the reference it sends ({@link Remote.Intent#downstreamKey()}: the call
 * must carry it as the payment's reference, where the statement shows it again); a claim not marked
 * was never sent and is sent at once by a retry or the recoverer. A sent claim is settled by a
 * definite reply of the call, or by {@link StatementReconciliation#apply}: a statement line with its
 * reference settles it applied ({@link #resultOf}); no line, in statements that together cover the
 * send plus {@link #lag()}, makes it <b>absent</b>: sent again with the same reference ({@link
 * WhenAbsent#SEND_AGAIN}, up to {@link #maxSends()} sends) or handed to an operator. A second line of
 * one reference is flagged as a double payment; nothing settles a sent claim by time.
 *
 * <pre>{@code
 * StatementSettlement.of(Duration.ofDays(2),
 *         (PayoutRequest p) -> new StatementSettlement.Amount(p.amount(), p.currency()),
 *         (StatementReconciliation.Line line) -> line.entryId())
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 *
 * @param <R> the effect's request
 * @param <T> the effect's result
 */
public final class StatementSettlement<R, T> {

    /** The longest settlement lag: a bank that books later than this is not settled by its statements. */
    public static final Duration LONGEST_LAG = Duration.ofDays(366);

    /** The sends a claim gets by default: the first, and one more after it was found absent. */
    public static final int DEFAULT_MAX_SENDS = 2;

    /** What a sent claim that the statements show absent gets. */
    public enum WhenAbsent {
        /**
         * Sent again by the recoverer with the same reference, while it has sends left; then to an
         * operator. If the first send was booked after all (later than the lag), the statement shows
         * the reference twice and the second line is flagged as a double payment.
         */
        SEND_AGAIN,
        /** Handed to an operator at once ({@link ClaimAdmin}), never sent again by the library. */
        OPERATOR
    }

    /**
     * An amount in a currency, as a statement line shows it.
     *
     * @param value the amount, positive
     * @param currency the ISO 4217 code, three letters (compared ignoring case)
     */
    public record Amount(BigDecimal value, String currency) {
        /**
         * Checks the amount; the currency is kept in upper case.
         *
         * @throws NullPointerException if an argument is null
         * @throws IllegalArgumentException if the value is not positive or the currency not three letters
         */
        public Amount {
            Objects.requireNonNull(value, "value must not be null");
            Objects.requireNonNull(currency, "currency must not be null");
            if (value.signum() <= 0) {
                throw new IllegalArgumentException("an amount must be positive, was " + value.toPlainString());
            }
            if (value.scale() > 18 || value.precision() - value.scale() > 20) {
                throw new IllegalArgumentException(
                        "an amount has at most 20 digits before the point and 18 after it, was " + value);
            }
            if (!currency.matches("[A-Za-z]{3}")) {
                throw new IllegalArgumentException("a currency is three letters (ISO 4217), was '" + currency + "'");
            }
            currency = currency.toUpperCase(Locale.ROOT);
        }
    }

    private final Duration lag;
    private final Function<? super R, Amount> amountOf;
    private final Function<StatementReconciliation.Line, ? extends T> resultOf;
    private final WhenAbsent whenAbsent;
    private final int maxSends;

    private StatementSettlement(
            Duration lag,
            Function<? super R, Amount> amountOf,
            Function<StatementReconciliation.Line, ? extends T> resultOf,
            WhenAbsent whenAbsent,
            int maxSends) {
        this.lag = lag;
        this.amountOf = amountOf;
        this.resultOf = resultOf;
        this.whenAbsent = whenAbsent;
        this.maxSends = maxSends;
    }

    /**
     * Settlement by statement with {@link WhenAbsent#SEND_AGAIN} and {@link #DEFAULT_MAX_SENDS}.
     *
     * @param lag how long after a send the remote books it at the latest: a claim is absent only when
     *     the statements applied cover its send plus this (plus at least the effect's lease, so that no
     *     send is judged absent while its call may still be running), with no line of its reference. Too short,
     *     and a late booking shows up as a double payment (flagged); too long, and an absent payment
     *     waits longer
     * @param amountOf the amount and currency a request pays: a line of its reference showing another
     *     is flagged as a mismatch for an operator, not settled
     * @param resultOf the effect's result for the line that settles a claim (e.g. the bank's entry id)
     * @param <R> the effect's request
     * @param <T> the effect's result
     * @return the settlement
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code lag} is negative or longer than {@link #LONGEST_LAG}
     */
    public static <R, T> StatementSettlement<R, T> of(
            Duration lag,
            Function<? super R, Amount> amountOf,
            Function<StatementReconciliation.Line, ? extends T> resultOf) {
        Objects.requireNonNull(lag, "lag must not be null");
        if (lag.isNegative() || lag.compareTo(LONGEST_LAG) > 0) {
            throw new IllegalArgumentException("lag must be between 0 and " + LONGEST_LAG + ", was " + lag);
        }
        return new StatementSettlement<>(
                lag,
                Objects.requireNonNull(amountOf, "amountOf must not be null"),
                Objects.requireNonNull(resultOf, "resultOf must not be null"),
                WhenAbsent.SEND_AGAIN,
                DEFAULT_MAX_SENDS);
    }

    /**
     * {@return this settlement with {@code whenAbsent}}
     *
     * @param whenAbsent what a claim found absent gets
     * @throws NullPointerException if it is null
     */
    public StatementSettlement<R, T> whenAbsent(WhenAbsent whenAbsent) {
        return new StatementSettlement<>(
                lag, amountOf, resultOf, Objects.requireNonNull(whenAbsent, "whenAbsent must not be null"), maxSends);
    }

    /**
     * {@return this settlement with at most {@code maxSends} sends of one claim} After the last, a claim
     * found absent goes to an operator.
     *
     * @param maxSends 1 (never sent again) to 10
     * @throws IllegalArgumentException if out of range
     */
    public StatementSettlement<R, T> maxSends(int maxSends) {
        if (maxSends < 1 || maxSends > 10) {
            throw new IllegalArgumentException("maxSends must be between 1 and 10, was " + maxSends);
        }
        return new StatementSettlement<>(lag, amountOf, resultOf, whenAbsent, maxSends);
    }

    /**
     * {@return the reference a claim of effect {@code name} settled by statement sends} ({@link
     * Remote.Intent#downstreamKey()} of such an effect), for matching the claim table with the bank's
     * own records: 32 characters of RFC 4648 base32 (A-Z, 2-7: a bank's character set, its
     * upper-casing and camt.053's 35-character {@code EndToEndId} keep it whole), the first 3 the
     * same for every claim of the effect, the rest from SHA-256 of the effect, scope, key and the
     * claim's start in epoch microseconds. Lines of a statement whose reference (ignoring case and
     * spaces) does not start with the effect's 3 are another's, and are not recorded.
     *
     * @param name the effect's name
     * @param scope the claim's scope
     * @param key the claim's key
     * @param claimedAt when the claim began (its {@code created_at}), to the microsecond
     * @throws NullPointerException if an argument is null
     */
    public static String reference(
            String name,
            io.github.idemtx.core.Scope scope,
            io.github.idemtx.core.IdempotencyKey key,
            java.time.Instant claimedAt) {
        Objects.requireNonNull(name, "name must not be null");
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(claimedAt, "claimedAt must not be null");
        return io.github.idemtx.jooq.internal.store.Digests.statementReference(
                name, scope.value(), key.value(), claimedAt);
    }

    /** {@return how long after a send the remote books it at the latest} */
    public Duration lag() {
        return lag;
    }

    /** {@return what a claim found absent gets} */
    public WhenAbsent whenAbsent() {
        return whenAbsent;
    }

    /** {@return how many sends a claim gets at most} */
    public int maxSends() {
        return maxSends;
    }

    /**
     * {@return the amount a request pays}
     *
     * @param request the request
     */
    public Amount amountOf(R request) {
        return Objects.requireNonNull(amountOf.apply(request), "amountOf returned null");
    }

    /**
     * {@return the result recorded for the line that settles a claim}
     *
     * @param line the line
     */
    public T resultOf(StatementReconciliation.Line line) {
        return resultOf.apply(line);
    }
}
