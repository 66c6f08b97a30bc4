package io.github.idemtx.jooq.internal.flow.effect;

import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.LOG;
import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.verdict;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow.Settled;
import io.github.idemtx.jooq.internal.flow.effect.ShortTransactions.LocalWrites;
import io.github.idemtx.jooq.internal.flow.effect.ShortTransactions.SqlUnit;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.EffectSettlements;
import io.github.idemtx.jooq.internal.store.EffectTransition.Answer;
import io.github.idemtx.jooq.internal.store.EffectTransition.Commit;
import io.github.idemtx.jooq.internal.store.EffectTransition.RecordFenced;
import io.github.idemtx.jooq.internal.store.EffectTransition.RecordLate;
import io.github.idemtx.jooq.internal.store.FailureEncoding;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Phase 3: the remote's definite answer recorded with the local writes that go with it, in one
 * transaction, fenced, or late while the claim is unsettled; an answer that can no longer be
 * recorded is compared with the one that was ({@link LateAnswers}).
 */
final class Recording<R, T> {

    private final EffectContext<R, T> context;
    private final ShortTransactions transactions;
    private final EffectSettlements settlements;
    private final Releasing<R, T> releasing;
    private final LateAnswers<R, T> lateAnswers;

    Recording(
            EffectContext<R, T> context,
            ShortTransactions transactions,
            EffectSettlements settlements,
            Releasing<R, T> releasing) {
        this.context = context;
        this.transactions = transactions;
        this.settlements = settlements;
        this.releasing = releasing;
        this.lateAnswers = new LateAnswers<>(context, releasing);
    }

    /** The remote applied it, with {@code result}: recorded with {@code after}; {@code how} says how it was learnt. */
    Settlement<T> applied(HeldClaim<R> hold, @Nullable T result, Settled how) {
        Intent<R> intent = hold.intent();
        byte[] stored;
        try {
            stored = context.results.encode(intent.scope(), intent.key(), result);
        } catch (RuntimeException e) {
            // the remote applied it and this will never be storable: an operator must settle it
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: the result of " + context.effect + " could not be stored;"
                            + " the claim needs reconciliation",
                    e);
            return releasing.toOperator(hold, "the result could not be stored: " + e.getMessage());
        }
        return record(
                hold,
                new Answer(ClaimState.SUCCEEDED, stored),
                tx -> context.remote.after(tx, intent, result),
                at -> new Outcome.Executed<>(result),
                how);
    }

    /** The remote refused it: recorded with {@code refused}. */
    Settlement<T> refused(HeldClaim<R> hold, Failure failure) {
        return record(
                hold,
                new Answer(ClaimState.FAILED, FailureEncoding.encode(failure)),
                tx -> context.remote.refused(tx, hold.intent(), failure),
                at -> new Outcome.Rejected<>(failure, at, false),
                Settled.REFUSED);
    }

    /**
     * The fenced record and the local writes that go with it, in one transaction; once more on
     * another connection when the connection was lost with its COMMIT in flight. If it fails (the
     * local writes throw, the database is unreachable), the remote's answer is not lost: the claim
     * stays in flight, the failure counts as an unanswered lookup, and after the schedule it waits
     * for an operator; the caller gets {@code Unknown}. A COMMIT whose outcome is still unknown after
     * that (or one the synchronous standby never confirmed) is thrown as
     * {@link CommitOutcomeUnknownException}, the claim left as it is.
     */
    private Settlement<T> record(
            HeldClaim<R> hold,
            Answer answer,
            LocalWrites writes,
            Function<Instant, RemoteOutcome<T>> outcome,
            Settled how) {
        Intent<R> intent = hold.intent();
        RecordUnit unit = new RecordUnit(hold, answer, writes);
        Recorded recorded;
        LateAnswers.Try attempt = LateAnswers.Try.ONCE;
        try {
            try {
                recorded = transactions.run(intent.scope(), intent.key(), unit);
            } catch (CommitOutcomeUnknownException e) {
                if (!SqlStates.isLostInCommit(e) || unit.localWritesCommittedAlone) {
                    throw e; // local writes that committed by themselves would run, and commit, again
                }
                // the connection was lost with the COMMIT in flight, and the answer is in hand: recorded
                // again on another connection. If the first COMMIT landed, the fence no longer matches and
                // the claim records this answer already (LateAnswers reads it, the local writes with it)
                LOG.log(
                        System.Logger.Level.DEBUG,
                        () -> "idemtx: " + context.effect + " " + context.describe(intent)
                                + ": the connection was lost with the record's COMMIT in flight; recording again",
                        e);
                attempt = LateAnswers.Try.AGAIN_AFTER_LOST_COMMIT;
                try {
                    recorded = transactions.run(intent.scope(), intent.key(), unit);
                } catch (RuntimeException second) {
                    second.addSuppressed(e); // the first loss
                    throw second;
                }
            }
        } catch (CommitOutcomeUnknownException e) {
            // recorded on this server only (releasing the claim would wait for the standby too), or the
            // connection was lost again: the claim stays as it is, a retry replays it or takes it over
            throw e;
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: recording the answer of " + context.effect + " (" + verdict(answer.state()) + ") for "
                            + context.describe(intent) + " failed; it is looked up again",
                    e);
            return releasing.counted(hold, "recording the answer failed: " + e);
        }
        if (recorded == null) {
            return lateAnswers.unrecorded(hold, answer, attempt);
        }
        if (recorded.by() == By.LATE) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemtx: " + context.effect + " " + context.describe(intent) + ": the remote's answer ("
                            + verdict(answer.state()) + ") came after this holder's lease (fence "
                            + intent.fence() + ") was taken over; the claim was unsettled, so it is recorded");
        }
        return new Settlement<>(outcome.apply(recorded.at()), how);
    }

    /** An answer recorded: when, and under the fence or late. */
    private record Recorded(Instant at, By by) {}

    /** Who recorded an answer: this holder under its fence, or this holder late, its fence lost. */
    private enum By {
        FENCE,
        LATE
    }

    /**
     * What the first try of the record left: the answer recorded (committed), or the transaction
     * rolled back because the fence was lost, because the local writes or the record failed, or
     * because the local writes ended their own transaction past the guard.
     */
    private sealed interface FirstTry {
        record Done(Recorded recorded) implements FirstTry {}

        record FenceLost() implements FirstTry {}

        record LocalWritesFailed(Exception failure) implements FirstTry {}

        /** What they wrote before ending it is committed without the record: never run them again. */
        record LocalWritesCommittedAlone() implements FirstTry {}
    }

    /**
     * One run of the record's transaction, the same again after a lost COMMIT: it remembers, across
     * runs, that the local writes committed by themselves, so that they never run twice.
     */
    private final class RecordUnit implements SqlUnit<@Nullable Recorded> {
        private final HeldClaim<R> hold;
        private final Answer answer;
        private final LocalWrites writes;
        boolean localWritesCommittedAlone;

        RecordUnit(HeldClaim<R> hold, Answer answer, LocalWrites writes) {
            this.hold = hold;
            this.answer = answer;
            this.writes = writes;
        }

        @Override
        public @Nullable Recorded apply(Connection c) throws SQLException {
            FirstTry first = localThenRecord(c, hold, answer, writes);
            if (first instanceof FirstTry.Done done) {
                return done.recorded();
            }
            if (first instanceof FirstTry.LocalWritesCommittedAlone) {
                localWritesCommittedAlone = true; // by themselves: never run again
            }
            // the older order: the record first, under the claim's row lock, then the local writes
            Instant fenced = first instanceof FirstTry.FenceLost
                    ? null // a lost fence does not come back
                    : settlements.apply(c, new RecordFenced(hold.fenced(), answer, context.policy.ttl(), Commit.LATER));
            Recorded recorded;
            if (fenced != null) {
                recorded = new Recorded(fenced, By.FENCE);
            } else {
                // the fence was lost, the answer is still definite: the remote applied (or refused)
                // this downstream key. While the claim is unsettled nobody has a better answer, and
                // whoever holds it now can only record the same (the remote deduplicates the key)
                // or learn this one: state 3/4 under the row lock lets exactly one record and its
                // local writes commit
                Intent<R> intent = hold.intent();
                Instant late = settlements.apply(
                        c,
                        new RecordLate(intent.scope(), intent.key(), hold.claimedAt(), answer, context.policy.ttl()));
                if (late == null) {
                    return null;
                }
                recorded = new Recorded(late, By.LATE);
            }
            if (!(first instanceof FirstTry.LocalWritesCommittedAlone)) {
                try {
                    transactions.localWrites(
                            c, writes, hold.intent().scope(), hold.intent().key());
                } catch (RuntimeException e) {
                    if (first instanceof FirstTry.LocalWritesFailed failed) {
                        e.addSuppressed(failed.failure()); // what the first run met
                    }
                    throw e;
                }
            }
            return recorded;
        }
    }

    /**
     * The usual case in one round trip fewer: the local writes, then the fenced record with the
     * COMMIT. When that did not commit (the fence was lost, or the local writes failed, perhaps
     * because the claim was settled while they ran) the transaction is rolled back, and the caller
     * records first, fenced or late, and runs the local writes again after it, as the row lock
     * decides. A lost connection, an interrupt, and local writes the guard stopped before they ended
     * their transaction are thrown as they are. Local writes that did end it (past the guard) have
     * committed what they wrote so far without the record: running them again would write it twice,
     * so the caller records the answer alone, as the order before this one committed it with them,
     * and an error is logged.
     */
    private FirstTry localThenRecord(Connection c, HeldClaim<R> hold, Answer answer, LocalWrites writes)
            throws SQLException {
        Intent<R> intent = hold.intent();
        Exception failure;
        try {
            transactions.localWritesFirst(c, writes, intent.scope(), intent.key());
            Instant at = settlements.apply(
                    c, new RecordFenced(hold.fenced(), answer, context.policy.ttl(), Commit.WITH_STATEMENT));
            if (at != null) {
                return new FirstTry.Done(new Recorded(at, By.FENCE));
            }
            Jdbc.rollback(c);
            return new FirstTry.FenceLost();
        } catch (WorkEndedTransactionException e) {
            if (!e.committedByWork()) {
                throw e;
            }
            Jdbc.rollback(c); // whatever it opened after its COMMIT
            LOG.log(
                    System.Logger.Level.ERROR,
                    "idemtx: " + context.effect + " " + context.describe(intent)
                            + ": the local writes after the remote's answer ended their own transaction, so what"
                            + " they wrote before that is committed without the answer; the answer is recorded"
                            + " alone, the local writes are not run again: check them",
                    e);
            return new FirstTry.LocalWritesCommittedAlone();
        } catch (SQLException | RuntimeException e) {
            if (SqlStates.isConnectionLoss(e) || interrupted(e)) {
                throw e;
            }
            failure = e;
        }
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> "idemtx: " + context.effect + " " + context.describe(intent)
                        + ": the local writes before the record failed (" + failure
                        + "); rolled back, recording first and running them again");
        Jdbc.rollback(c);
        return new FirstTry.LocalWritesFailed(failure);
    }

    /** Whether {@code e} stopped on an interrupt, which running the local writes again would ignore. */
    private static boolean interrupted(Throwable e) {
        if (Thread.currentThread().isInterrupted()) {
            return true;
        }
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof InterruptedException) {
                return true;
            }
        }
        return false;
    }
}
