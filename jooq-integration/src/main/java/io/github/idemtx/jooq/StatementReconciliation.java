package io.github.idemtx.jooq;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow;
import io.github.idemtx.jooq.internal.store.StatementSettlements;
import io.github.idemtx.jooq.internal.store.StatementViews;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The reconciliation of an effect {@link StatementSettlement settled by statement} with the
 * remote's statements ({@link ExternalEffect#statements()}). {@link #apply} takes a statement (its
 * period and lines, parsed from whatever the remote serves: ISO 20022 camt.053, a CSV export) and
 * records each line once, by the remote's entry id:
 *
 * <ul>
 *   <li>the first line of a claim's reference settles the claim <b>applied</b> (in flight, sent, or
 *       at an operator) with {@link StatementSettlement#resultOf} and the effect's {@link
 *       Remote#after} local writes, in one transaction; a claim the call's reply settled already is
 *       <b>confirmed</b>;
 *   <li>a second line of one reference is a <b>duplicate</b>: a double payment, for an operator;
 *   <li>a line whose amount or currency differs from the claim's, or that shows a payment the claim
 *       recorded as refused, is a <b>mismatch</b>: the claim, if unsettled, goes to an operator;
 *   <li>a line with the effect's reference prefix that no claim sent is <b>unmatched</b>; a line
 *       whose reference is not this effect's ({@link StatementSettlement#reference}: another effect's
 *       on a shared account, a fee) is counted {@code OTHER} and not recorded.
 * </ul>
 *
 * A statement that contradicts what was applied is refused whole, before anything is written: a
 * period that has not ended by the database's clock, an id applied before with another period, an
 * entry id recorded before with another reference, amount or currency.
 *
 * Once every line of a statement is in, its period counts: a sent claim that no line names, in
 * statements that together cover its send plus the {@link StatementSettlement#lag() lag}, is
 * <b>absent</b>, and is sent again or handed to an operator ({@link StatementSettlement.WhenAbsent}).
 * Applying a statement again, or statements that overlap, counts nothing twice. Thread-safe; several
 * instances may apply statements at once (each reference's lines take turns).
 *
 * @param <R> the effect's request
 * @param <T> the effect's result
 */
public final class StatementReconciliation<R, T> {

    /** The most lines or claims a listing returns. */
    public static final int MAX_LIMIT = 10_000;

    private static final Instant EARLIEST = Instant.parse("1970-01-01T00:00:00Z");
    private static final Instant LATEST = Instant.parse("9999-12-31T00:00:00Z");

    /**
     * One line of a statement: a booked debit.
     *
     * @param entryId the remote's unique id of the entry (camt.053 {@code AcctSvcrRef}): a line is
     *     recorded once by it
     * @param reference the reference the payment carried (what the effect sent, {@link
     *     Remote.Intent#downstreamKey()})
     * @param amount the amount booked, positive
     * @param currency the ISO 4217 code
     * @param bookingDate the day it was booked
     */
    public record Line(String entryId, String reference, BigDecimal amount, String currency, LocalDate bookingDate) {
        /**
         * Checks the line.
         *
         * @throws NullPointerException if an argument is null
         * @throws IllegalArgumentException if the entry id or reference is blank or longer than 255
         *     characters, the amount not positive, or the currency not three letters
         */
        public Line {
            entryId = text("entryId", entryId);
            reference = text("reference", reference);
            Objects.requireNonNull(amount, "amount must not be null");
            Objects.requireNonNull(currency, "currency must not be null");
            Objects.requireNonNull(bookingDate, "bookingDate must not be null");
            if (bookingDate.getYear() < 1970 || bookingDate.getYear() > 9999) {
                throw new IllegalArgumentException(
                        "bookingDate must be between 1970 and 9999, was " + bookingDate + " (entry " + entryId + ")");
            }
            StatementSettlement.Amount checked = new StatementSettlement.Amount(amount, currency);
            currency = checked.currency();
        }
    }

    /**
     * A statement: the period it covers (every entry booked in {@code [from, to)} is in it) and its
     * lines.
     *
     * @param id the remote's id of the statement (camt.053 {@code Stmt/Id}); applying it again is a no-op
     * @param from the period's start (kept to the microsecond, as the database keeps it)
     * @param to the period's end, after {@code from} (likewise)
     * @param lines its lines, each entry id once; copied
     */
    public record Statement(String id, Instant from, Instant to, List<Line> lines) {
        /**
         * Checks the statement and copies its lines.
         *
         * @throws NullPointerException if an argument or a line is null
         * @throws IllegalArgumentException if the id is blank or too long, the period empty, or an
         *     entry id appears twice
         */
        public Statement {
            id = text("id", id);
            Objects.requireNonNull(from, "from must not be null");
            Objects.requireNonNull(to, "to must not be null");
            if (from.isBefore(EARLIEST) || to.isAfter(LATEST)) {
                throw new IllegalArgumentException("a statement's period must lie between " + EARLIEST + " and "
                        + LATEST + ", was " + from + " to " + to);
            }
            from = from.truncatedTo(java.time.temporal.ChronoUnit.MICROS); // as the database keeps it
            to = to.truncatedTo(java.time.temporal.ChronoUnit.MICROS);
            if (!from.isBefore(to)) {
                throw new IllegalArgumentException(
                        "a statement's period must end after it starts, was " + from + " to " + to);
            }
            Objects.requireNonNull(lines, "lines must not be null");
            for (Line line : lines) {
                if (line == null) {
                    throw new NullPointerException("lines must not contain null (statement " + id + ")");
                }
            }
            lines = List.copyOf(lines);
            Set<String> seen = new HashSet<>();
            for (Line line : lines) {
                if (!seen.add(line.entryId())) {
                    throw new IllegalArgumentException("statement " + id + " lists entry " + line.entryId() + " twice");
                }
            }
        }
    }

    /** What a line was found to be. */
    public enum Verdict {
        /** It settled its claim, or confirmed the answer recorded. */
        MATCHED,
        /** A second line of one reference: a double payment. */
        DUPLICATE,
        /** It disagrees with its claim (amount, currency, a recorded refusal). */
        MISMATCH,
        /** No claim of the effect sent its reference. */
        UNMATCHED
    }

    /**
     * What {@link #apply} did.
     *
     * @param lines how many lines ended each way: {@code SEEN} (recorded before), {@code SETTLED},
     *     {@code CONFIRMED}, {@code DUPLICATE}, {@code MISMATCH}, {@code UNMATCHED}, {@code FAILED},
     *     {@code OTHER} (not this effect's reference, not recorded); ways
     *     that did not occur are absent
     * @param sentAgain sent claims found absent and made due to be sent again
     * @param toOperator sent claims found absent and handed to an operator
     * @param periodRecorded whether the statement's period now counts toward absent decisions (only
     *     when every line was recorded)
     * @param problems what failed, line by line (logged too); applying the statement again retries them
     */
    public record Report(
            Map<String, Integer> lines, int sentAgain, int toOperator, boolean periodRecorded, List<String> problems) {
        /** Copies the map and list. */
        public Report {
            lines = Map.copyOf(lines);
            problems = List.copyOf(problems);
        }

        /**
         * {@return how many lines ended {@code how}}
         *
         * @param how one of the names of {@link #lines()}
         */
        public int count(String how) {
            return lines.getOrDefault(how, 0);
        }
    }

    /**
     * A claim sent and awaiting a statement.
     *
     * @param scope its scope
     * @param key its key
     * @param request its request, or null when it no longer decodes
     * @param reference the reference sent
     * @param sentAt when it was last sent (the database's clock)
     * @param sends how many times it was sent
     * @param <R> the effect's request
     */
    public record Awaiting<R>(
            Scope scope, IdempotencyKey key, @Nullable R request, String reference, Instant sentAt, int sends) {}

    /**
     * A line as recorded.
     *
     * @param entryId the remote's id of the entry
     * @param statementId the statement that brought it first
     * @param reference its reference
     * @param amount its amount
     * @param currency its currency
     * @param bookingDate its booking date
     * @param verdict what it was found to be
     * @param scope the scope of the claim it names, or null
     * @param key the key of the claim it names, or null
     * @param detail why (e.g. the amounts that differ)
     * @param appliedAt when it was recorded
     * @param workedAt when an operator handled it ({@link #work}), or null
     * @param workedBy who did
     * @param note what they noted
     */
    public record Entry(
            String entryId,
            String statementId,
            String reference,
            BigDecimal amount,
            String currency,
            LocalDate bookingDate,
            Verdict verdict,
            @Nullable String scope,
            @Nullable String key,
            @Nullable String detail,
            Instant appliedAt,
            @Nullable Instant workedAt,
            @Nullable String workedBy,
            @Nullable String note) {}

    private final String effect;
    private final EffectFlow<R, T> flow;

    StatementReconciliation(String effect, EffectFlow<R, T> flow) {
        this.effect = effect;
        this.flow = flow;
    }

    /**
     * Applies a statement: each new line recorded and its claim settled or the line flagged, then,
     * when all are in, its period recorded and the sent claims it shows absent decided. A line whose
     * transaction fails (its local writes threw, the database went away) is reported and retried
     * when the statement is applied again; its statement's period then does not count yet.
     *
     * @param statement the statement
     * @return what it did
     * @throws NullPointerException if {@code statement} is null
     * @throws IllegalArgumentException if the statement contradicts what was applied (see the class
     *     documentation): nothing written
     */
    public Report apply(Statement statement) {
        Objects.requireNonNull(statement, "statement must not be null");
        return flow.reconcile(statement);
    }

    /**
     * {@return up to {@code limit} claims sent and awaiting a statement, oldest send first}
     *
     * @param limit from 1 to {@value #MAX_LIMIT}
     */
    public List<Awaiting<R>> awaiting(int limit) {
        checkLimit(limit);
        return awaiting(flow.awaitingStatement(limit));
    }

    /**
     * {@return up to {@code limit} claims recorded applied (the remote's reply said it took them) that
     * the statements do not show although they cover the send plus the lag: taken, never booked, or
     * booked under another reference; for an operator to check with the remote, oldest send first}
     * A claim settled with a statement reference keeps its request until it expires, for this
     * comparison: it is shown.
     *
     * @param limit from 1 to {@value #MAX_LIMIT}
     */
    public List<Awaiting<R>> unconfirmed(int limit) {
        checkLimit(limit);
        return awaiting(flow.unconfirmed(limit));
    }

    /** Sent claims as an operator sees them: their requests decoded (null when one no longer decodes). */
    private List<Awaiting<R>> awaiting(List<StatementSettlements.SentClaim> claims) {
        return claims.stream()
                .map(s -> new Awaiting<>(
                        s.scope(),
                        s.key(),
                        flow.decodeRequest(s.scope(), s.key(), s.request()).request(),
                        s.reference(),
                        s.sentAt(),
                        s.sends()))
                .toList();
    }

    /**
     * {@return up to {@code limit} flagged lines of {@code verdict} that no operator handled yet,
     * oldest first} The double payments are {@code flagged(Verdict.DUPLICATE, n)}.
     *
     * @param verdict {@link Verdict#DUPLICATE}, {@link Verdict#MISMATCH} or {@link Verdict#UNMATCHED}
     * @param limit from 1 to {@value #MAX_LIMIT}
     * @throws IllegalArgumentException for {@link Verdict#MATCHED}, which flags nothing
     */
    public List<Entry> flagged(Verdict verdict, int limit) {
        Objects.requireNonNull(verdict, "verdict must not be null");
        if (verdict == Verdict.MATCHED) {
            throw new IllegalArgumentException("matched lines flag nothing; list a reference's lines with lines()");
        }
        checkLimit(limit);
        return entries(flow.statementLines(StatementSettlements.Verdict.valueOf(verdict.name()), false, null, limit));
    }

    /**
     * {@return every recorded line of {@code reference}, handled or not, oldest first} (at most
     * {@value #MAX_LIMIT}).
     *
     * @param reference the reference sent
     */
    public List<Entry> lines(String reference) {
        return entries(flow.statementLines(null, true, text("reference", reference), MAX_LIMIT));
    }

    /**
     * Records that an operator handled a flagged line (a double payment recalled, a mismatch
     * explained): it leaves {@link #flagged}. The claim is not changed: settle one at an operator
     * with {@link ClaimAdmin}.
     *
     * @param entryId the line's entry id
     * @param operator who, 1 to 255 characters
     * @param note what was done, 1 to 1000 characters
     * @return false when there is no flagged line of that id not handled yet (nothing written)
     * @throws IllegalArgumentException if an argument is blank or too long
     */
    public boolean work(String entryId, String operator, String note) {
        String by = text("operator", operator);
        Objects.requireNonNull(note, "note must not be null");
        if (note.isBlank() || note.length() > 1000) {
            throw new IllegalArgumentException("note must be 1 to 1000 characters, not blank");
        }
        return flow.workLine(text("entryId", entryId), by, note);
    }

    /** {@return the effect's name} */
    public String effect() {
        return effect;
    }

    /** {@return how long after a send the remote books it at the latest, as the effect was built with} */
    public Duration lag() {
        return flow.statementLag();
    }

    private static List<Entry> entries(List<StatementViews.LineRow> rows) {
        return rows.stream()
                .map(r -> new Entry(
                        r.entryId(),
                        r.statementId(),
                        r.reference(),
                        r.amount(),
                        r.currency(),
                        r.bookedOn(),
                        Verdict.valueOf(r.verdict().name()),
                        r.scope(),
                        r.key(),
                        r.detail(),
                        r.appliedAt(),
                        r.workedAt(),
                        r.workedBy(),
                        r.note()))
                .toList();
    }

    private static void checkLimit(int limit) {
        if (limit < 1 || limit > MAX_LIMIT) {
            throw new IllegalArgumentException("limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
        }
    }

    private static String text(String name, String value) {
        Objects.requireNonNull(value, name + " must not be null");
        if (value.isBlank() || value.length() > 255 || value.chars().anyMatch(Character::isISOControl)) {
            throw new IllegalArgumentException(name + " must be 1 to 255 characters, not blank, without control"
                    + " characters, was '"
                    + (value.length() > 40 ? value.substring(0, 40) + "..." : value).replaceAll("\\p{Cntrl}", "?")
                    + "'");
        }
        return value;
    }
}
