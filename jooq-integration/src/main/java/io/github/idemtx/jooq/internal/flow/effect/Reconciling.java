package io.github.idemtx.jooq.internal.flow.effect;

import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.LOG;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.StatementReconciliation.Line;
import io.github.idemtx.jooq.StatementReconciliation.Report;
import io.github.idemtx.jooq.StatementReconciliation.Statement;
import io.github.idemtx.jooq.StatementSettlement;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.Digests;
import io.github.idemtx.jooq.internal.store.EffectSettlements;
import io.github.idemtx.jooq.internal.store.EffectTransition.AbsentByStatement;
import io.github.idemtx.jooq.internal.store.EffectTransition.Answer;
import io.github.idemtx.jooq.internal.store.EffectTransition.MismatchToOperator;
import io.github.idemtx.jooq.internal.store.EffectTransition.SettleByStatement;
import io.github.idemtx.jooq.internal.store.StatementSettlements;
import io.github.idemtx.jooq.internal.store.StatementSettlements.Named;
import io.github.idemtx.jooq.internal.store.StatementSettlements.NewLine;
import io.github.idemtx.jooq.internal.store.StatementSettlements.SentClaim;
import io.github.idemtx.jooq.internal.store.StatementSettlements.Verdict;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * A statement applied to the claims of an effect settled by statement (docs/claim-protocol.md,
 * "Settled by statement"): each line once, in a transaction of its own under its reference's lock,
 * settling the claim it names or flagged; then the statement's period recorded; then the sent claims
 * that the statements now show absent, sent again or handed to an operator.
 */
final class Reconciling<R, T> {

    /** What happened to each line, and to the claims found absent. */
    enum LineEnding {
        /** Recorded before (the same entry in an earlier or overlapping statement): nothing done. */
        SEEN,
        /** Settled its claim applied, with the local writes. */
        SETTLED,
        /** Its claim was settled applied already (by the call's reply): confirmed. */
        CONFIRMED,
        /** A second line of one reference: a double payment, flagged. */
        DUPLICATE,
        /** Its claim disagrees (amount, currency, a recorded refusal, a request that no longer decodes): flagged. */
        MISMATCH,
        /** No claim of the effect sent its reference: flagged. */
        UNMATCHED,
        /** Its transaction failed (logged): applying the statement again retries it. */
        FAILED,
        /**
         * Its reference is not one this effect sends (another effect's on a shared account, a fee, a
         * transfer of another system): not recorded.
         */
        OTHER
    }

    /** The sent claims an application found absent: made due to be sent again, or handed to an operator. */
    private record Absences(int sentAgain, int toOperator) {}

    private final EffectContext<R, T> context;
    private final ShortTransactions transactions;
    private final StatementSettlements sql;
    private final StatementSettlement<R, T> terms;

    Reconciling(
            EffectContext<R, T> context,
            ShortTransactions transactions,
            StatementSettlements sql,
            StatementSettlement<R, T> terms) {
        this.context = context;
        this.transactions = transactions;
        this.sql = sql;
        this.terms = terms;
    }

    Report apply(Statement statement) {
        Map<String, Integer> counts = new TreeMap<>();
        List<String> problems = new ArrayList<>();
        String prefix = Digests.statementPrefix(context.effect);
        List<Line> ours = new ArrayList<>(); // with their references as the effect sent them
        for (Line line : statement.lines()) {
            String reference = normalized(line.reference());
            if (reference.startsWith(prefix)) {
                ours.add(new Line(line.entryId(), reference, line.amount(), line.currency(), line.bookingDate()));
            } else {
                count(counts, LineEnding.OTHER); // not this effect's: another's, or no claim's
            }
        }
        refuseConflicts(statement, ours);
        for (Line line : ours) {
            LineEnding ending;
            try {
                ending = transactions.run(null, null, c -> line(c, statement.id(), line));
            } catch (RuntimeException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + context.effect + ": applying statement line " + line.entryId() + " of statement "
                                + statement.id() + " failed; applying the statement again retries it",
                        e);
                problems.add("line " + line.entryId() + ": " + e);
                ending = LineEnding.FAILED;
            }
            count(counts, ending);
        }
        boolean recorded = false;
        if (problems.isEmpty()) {
            // only a statement all of whose lines are in counts toward absent decisions
            recorded = transactions.run(
                    null,
                    null,
                    c -> sql.statementApplied(
                            c,
                            context.effect,
                            statement.id(),
                            statement.from(),
                            statement.to(),
                            statement.lines().size()));
            if (!recorded) {
                problems.add("statement " + statement.id()
                        + " was applied before with another period: its lines are recorded, its period is not");
            }
        }
        Absences absent = decideAbsent(problems);
        return new Report(counts, absent.sentAgain(), absent.toOperator(), recorded, problems);
    }

    private static void count(Map<String, Integer> counts, LineEnding ending) {
        counts.merge(ending.name(), 1, Integer::sum);
    }

    /**
     * Refuses, before anything is written, a statement that contradicts what was applied: a period
     * that has not ended by the database's clock (an intraday report would make fresh sends look
     * absent), an id applied before with another period, an entry id recorded before with another
     * reference, amount or currency (a bank, or a parser, that reuses entry ids would hide a payment).
     */
    private void refuseConflicts(Statement statement, List<Line> ours) {
        transactions.run(null, null, ShortTransactions.readOnly(c -> {
            StatementSettlements.Period before = sql.period(c, context.effect, statement.id());
            if (statement.to().isAfter(before.now())) {
                throw new IllegalArgumentException("statement " + statement.id() + " ends at " + statement.to()
                        + ", after the database's clock (" + before.now() + "): only a period that has ended is"
                        + " a statement (an intraday report would make fresh payments look absent)");
            }
            if (before.from() != null
                    && (!before.from().equals(statement.from())
                            || !statement.to().equals(before.to()))) {
                throw new IllegalArgumentException("statement " + statement.id() + " was applied before for "
                        + before.from() + " to " + before.to() + ", not " + statement.from() + " to " + statement.to()
                        + ": nothing written");
            }
            Map<String, NewLine> recorded = sql.recorded(
                    c, context.effect, ours.stream().map(Line::entryId).toList());
            for (Line line : ours) {
                NewLine was = recorded.get(line.entryId());
                if (was != null && !same(was, line)) {
                    throw new IllegalArgumentException("statement " + statement.id() + " shows entry "
                            + line.entryId() + " as " + describe(line.reference(), line.amount(), line.currency())
                            + ", recorded before as " + describe(was.reference(), was.amount(), was.currency())
                            + ": an entry id names one payment; nothing written");
                }
            }
            return null;
        }));
    }

    private static boolean same(NewLine was, Line line) {
        return was.reference().equals(line.reference())
                && was.amount().compareTo(line.amount()) == 0
                && was.currency().equals(line.currency());
    }

    /** How a line, or a line as recorded, is named in messages: reference, amount, currency. */
    private static String describe(String reference, java.math.BigDecimal amount, String currency) {
        return reference + " " + amount.toPlainString() + " " + currency;
    }

    /** A reference as the bank may show it (upper- or lower-case, spaces inserted), as the effect sent it. */
    static String normalized(String reference) {
        return reference.replaceAll("\\s+", "").toUpperCase(java.util.Locale.ROOT);
    }

    /** One line, under its reference's lock: recorded with its verdict, its claim settled or flagged. */
    private LineEnding line(Connection c, String statementId, Line line) throws SQLException {
        String effect = context.effect;
        sql.lockReference(c, effect, line.reference());
        NewLine was = sql.recorded(c, effect, List.of(line.entryId())).get(line.entryId());
        if (was != null) {
            if (!same(was, line)) {
                // recorded meanwhile by another importer, with other content
                throw new IllegalStateException("entry " + line.entryId() + " shows "
                        + describe(line.reference(), line.amount(), line.currency()) + ", recorded as "
                        + describe(was.reference(), was.amount(), was.currency()));
            }
            return LineEnding.SEEN;
        }
        Named named = sql.named(c, effect, line.reference());
        if (named == null) {
            record(c, statementId, line, Verdict.UNMATCHED, null, "no claim of " + effect + " sent this reference");
            return LineEnding.UNMATCHED;
        }
        int prior = sql.priorLines(c, effect, line.reference());
        if (prior > 0) {
            record(
                    c,
                    statementId,
                    line,
                    Verdict.DUPLICATE,
                    named,
                    "a double payment: line " + (prior + 1) + " of this reference");
            return LineEnding.DUPLICATE;
        }
        if (named.state() == ClaimState.SUCCEEDED) {
            String differs = differs(context.decodeRequest(named.scope(), named.key(), named.request()), line);
            if (differs != null) {
                return mismatch(c, statementId, line, named, differs);
            }
            record(c, statementId, line, Verdict.MATCHED, named, "confirms the applied answer recorded");
            return LineEnding.CONFIRMED;
        }
        if (named.state() == ClaimState.FAILED || named.state() == ClaimState.RUNNING) {
            // a refusal recorded (the call's definite answer), yet the bank booked it
            return mismatch(
                    c,
                    statementId,
                    line,
                    named,
                    "the claim recorded " + named.state().name().toLowerCase(java.util.Locale.ROOT)
                            + ", yet the statement shows it paid");
        }
        return settle(c, statementId, line, named); // in flight, sent, or at an operator
    }

    /** Why the line disagrees with the claim's request (its amount, its currency, no request to compare), or null. */
    private @Nullable String differs(EffectFlow.DecodedRequest<R> decoded, Line line) {
        R request = decoded.request();
        if (request == null) {
            return decoded.problem() != null ? decoded.problem() : "the claim carries no request to compare";
        }
        StatementSettlement.Amount expected = terms.amountOf(request);
        if (expected.value().compareTo(line.amount()) != 0
                || !expected.currency().equalsIgnoreCase(line.currency())) {
            return "the claim pays " + expected.value().toPlainString() + " " + expected.currency()
                    + ", the line shows " + line.amount().toPlainString() + " " + line.currency();
        }
        return null;
    }

    private LineEnding settle(Connection c, String statementId, Line line, Named named) throws SQLException {
        Scope scope = named.scope();
        IdempotencyKey key = named.key();
        EffectFlow.DecodedRequest<R> decoded = context.decodeRequest(scope, key, named.request());
        String differs = differs(decoded, line);
        if (differs != null) {
            return mismatch(c, statementId, line, named, differs);
        }
        R request = Objects.requireNonNull(decoded.request()); // differs() found it there
        T result = terms.resultOf(line);
        Answer answer = new Answer(ClaimState.SUCCEEDED, context.results.encode(scope, key, result));
        EffectSettlements.Resolved settled = sql.apply(
                c, new SettleByStatement(scope, key, context.effect, line.reference(), answer, context.policy.ttl()));
        Objects.requireNonNull(settled, "the claim changed under its reference's lock");
        record(c, statementId, line, Verdict.MATCHED, named, "settled the claim applied");
        Intent<R> intent = context.intent(scope, key, request, named.fence(), settled.createdAt());
        transactions.localWrites(c, tx -> context.remote.after(tx, intent, result), scope, key);
        return LineEnding.SETTLED;
    }

    /** Flagged; a claim still unsettled goes to an operator, so that nothing sends it again meanwhile. */
    private LineEnding mismatch(Connection c, String statementId, Line line, Named named, String detail)
            throws SQLException {
        if (named.state() == ClaimState.IN_FLIGHT || named.state() == ClaimState.SENT) {
            sql.apply(c, new MismatchToOperator(named.scope(), named.key(), context.effect));
        }
        record(c, statementId, line, Verdict.MISMATCH, named, detail);
        return LineEnding.MISMATCH;
    }

    private void record(
            Connection c, String statementId, Line line, Verdict verdict, @Nullable Named named, String detail)
            throws SQLException {
        NewLine row = new NewLine(line.entryId(), line.reference(), line.amount(), line.currency(), line.bookingDate());
        sql.insertLine(
                c,
                context.effect,
                statementId,
                row,
                verdict,
                named == null ? null : named.scope(),
                named == null ? null : named.key(),
                detail);
    }

    /** The sent claims the statements show absent, each in a transaction of its own: sent again, or to an operator. */
    private Absences decideAbsent(List<String> problems) {
        // a send is absent only once its call cannot be running any more (its deadline is inside the
        // lease) and the bank's booking lag passed: the longer of the two
        java.time.Duration window = Lifecycle.absentWindow(terms.lag(), context.lease);
        int sentAgain = 0;
        int toOperator = 0;
        while (true) {
            List<SentClaim> absent = transactions.run(
                    null, null, ShortTransactions.readOnly(c -> sql.absentCandidates(c, context.effect, window, 200)));
            int decided = 0;
            for (SentClaim claim : absent) {
                ClaimState to = Lifecycle.whenAbsent(
                        terms.whenAbsent(),
                        claim.sends(),
                        terms.maxSends(),
                        context.decodeRequest(claim.scope(), claim.key(), claim.request())
                                .problem());
                AbsentByStatement decision =
                        new AbsentByStatement(claim.scope(), claim.key(), context.effect, claim.sentAt(), window, to);
                try {
                    boolean changed = transactions.run(claim.scope(), claim.key(), c -> {
                        sql.lockReference(c, context.effect, claim.reference());
                        return sql.apply(c, decision);
                    });
                    if (changed) {
                        decided++;
                        if (to == ClaimState.IN_FLIGHT) {
                            sentAgain++;
                        } else {
                            toOperator++;
                        }
                    }
                } catch (RuntimeException e) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "idemtx: " + context.effect + ": deciding a claim absent from the statements failed",
                            e);
                    problems.add("absent claim " + claim.reference() + ": " + e);
                }
            }
            if (absent.size() < 200 || decided == 0) {
                return new Absences(sentAgain, toOperator);
            }
        }
    }
}
