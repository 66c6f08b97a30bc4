package io.github.idemtx.jooq.internal.flow.effect;

import static io.github.idemtx.jooq.internal.flow.effect.EffectContext.LOG;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.StatementReconciliation;
import io.github.idemtx.jooq.StatementReconciliation.Statement;
import io.github.idemtx.jooq.StatementSettlement;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.EffectSettlements;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import io.github.idemtx.jooq.internal.store.EffectTransition.Answer;
import io.github.idemtx.jooq.internal.store.EffectTransition.Resolve;
import io.github.idemtx.jooq.internal.store.FailureEncoding;
import io.github.idemtx.jooq.internal.store.StatementSettlements;
import io.github.idemtx.jooq.internal.store.StatementViews;
import io.github.idemtx.jooq.internal.store.StoredValues;
import io.github.idemtx.jooq.internal.tx.TransactionOwnership;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.jooq.Configuration;
import org.jspecify.annotations.Nullable;

/**
 * The external-effect protocol (docs/claim-protocol.md, "External effects"), the one door {@code
 * ExternalEffect} and {@code ClaimAdmin} use: phase 1 commits the claim in flight with the caller's
 * local writes ({@link Claiming}); phase 2 calls the remote outside any transaction, or looks a
 * claim taken over up first ({@link Calling}); phase 3 records the answer with the local writes
 * after it, only while the fencing token is the claim's ({@link Recording}), or the hold is released
 * ({@link Releasing}); the recoverer settles stuck claims ({@link Recovering}). The lifecycle's
 * decisions are {@link Lifecycle}, its statements {@link
 * io.github.idemtx.jooq.internal.store.EffectTransition}. Thread-safe.
 */
public final class EffectFlow<R, T> {

    private final EffectContext<R, T> context;
    private final ShortTransactions transactions;
    private final EffectSettlements settlements;
    private final EffectStatements holds;
    private final Claiming<R, T> claiming;
    private final Recovering<R, T> recovering;
    private final @Nullable Reconciling<R, T> reconciling;

    public EffectFlow(
            Configuration configuration,
            IdempotencyPolicy policy,
            TransactionOwnership ownership,
            EffectStatements sql,
            String effect,
            ResultCodec<R> requestCodec,
            ResultCodec<T> resultCodec,
            Remote<R, T> remote,
            Duration lease,
            List<Duration> lookupSchedule,
            Absent absent,
            @Nullable StatementSettlement<R, T> statement,
            Listeners listeners) {
        this.context = new EffectContext<>(
                effect,
                policy,
                remote,
                new StoredValues<>(requestCodec, policy.maxResultBytes()),
                new StoredValues<>(resultCodec, policy.maxResultBytes()),
                lease,
                lookupSchedule,
                absent,
                statement,
                listeners);
        this.transactions = new ShortTransactions(configuration, policy, ownership, sql.schema());
        this.holds = sql;
        this.settlements = sql.settlements();
        Calling<R, T> calling = new Calling<>(context, transactions, sql);
        this.claiming = new Claiming<>(context, transactions, sql, calling);
        this.recovering = new Recovering<>(context, transactions, sql, calling);
        this.reconciling =
                statement == null ? null : new Reconciling<>(context, transactions, sql.statements(), statement);
    }

    /**
     * What a recovery pass did with a claim it took over; {@code HANDED_BACK}: not settled because
     * the pass was asked to stop, its lease ended at once for another pass.
     */
    public enum Settled {
        FOUND,
        REFUSED,
        RESENT,
        UNKNOWN,
        RECONCILIATION,
        LOST_FENCE,
        FAILED,
        HANDED_BACK,
        AWAITING_STATEMENT
    }

    /**
     * A stored request as decoded, or why it no longer decodes (a deploy changed its class): then
     * {@code request} is null, and what needs only the downstream key (a lookup, a record, an
     * operator's resolution) still works.
     */
    public record DecodedRequest<R>(
            @Nullable R request, @Nullable String problem) {}

    /** A statement run in the transaction of an operator's resolution, after it (its record). */
    @FunctionalInterface
    public interface InSameTransaction {
        void run(Connection connection) throws SQLException;
    }

    /** One call of the effect: claim, call, record; or the answer, the wait or the takeover of the claim there. */
    public RemoteOutcome<T> run(Scope scope, IdempotencyKey key, Fingerprint fingerprint, R request) {
        return claiming.run(scope, key, fingerprint, request);
    }

    /**
     * Takes over up to {@code limit} stuck claims and settles each, one after the other: what
     * happened to each, in order. Once {@code stop} says so, the claims not settled yet are handed
     * back (their lease ends at once) instead. Every unanswered attempt of the pass (a lookup, a
     * resend, a record) is counted, so each claim is due again only on the lookup schedule.
     */
    public List<Settled> recover(int limit, BooleanSupplier stop) {
        return recovering.recover(limit, stop);
    }

    /**
     * A statement applied to the effect's claims: its counts, what failed, and whether its period now
     * counts toward absent decisions.
     *
     * @throws IllegalStateException if the effect is not settled by statement
     */
    public StatementReconciliation.Report reconcile(Statement statement) {
        if (reconciling == null) {
            throw new IllegalStateException("the effect " + context.effect + " is not settled by statement");
        }
        return reconciling.apply(statement);
    }

    /** The settlement lag of an effect settled by statement; zero for one that is not. */
    public Duration statementLag() {
        return context.statement == null ? Duration.ZERO : context.statement.lag();
    }

    /** Up to {@code limit} claims of the effect awaiting a statement, oldest send first. */
    public List<StatementSettlements.SentClaim> awaitingStatement(int limit) {
        return transactions.run(
                null,
                null,
                ShortTransactions.readOnly(c -> holds.statements().views().sent(c, context.effect, limit)));
    }

    /**
     * Up to {@code limit} claims recorded applied that the statements, covering their send plus the
     * absent window, do not show: the remote answered that it took them and never booked them.
     */
    public List<StatementSettlements.SentClaim> unconfirmed(int limit) {
        Duration window = Lifecycle.absentWindow(statementLag(), context.lease);
        return transactions.run(
                null,
                null,
                ShortTransactions.readOnly(
                        c -> holds.statements().views().unconfirmed(c, context.effect, window, limit)));
    }

    /** Up to {@code limit} statement lines of the effect; see {@link StatementViews#lines}. */
    public List<StatementViews.LineRow> statementLines(
            StatementSettlements.@Nullable Verdict verdict, boolean worked, @Nullable String reference, int limit) {
        return transactions.run(
                null,
                null,
                ShortTransactions.readOnly(
                        c -> holds.statements().views().lines(c, context.effect, verdict, worked, reference, limit)));
    }

    /** An operator's handling of a flagged line; false when there is no such line not worked yet. */
    public boolean workLine(String entryId, String operator, String note) {
        return transactions.run(
                null, null, c -> holds.statements().views().work(c, context.effect, entryId, operator, note));
    }

    /** The stored request decoded, or why it no longer decodes; never throws for the codec's sake. */
    public DecodedRequest<R> decodeRequest(Scope scope, IdempotencyKey key, byte @Nullable [] stored) {
        return context.decodeRequest(scope, key, stored);
    }

    public List<EffectStatements.Stuck> unsettled(ClaimState state, int limit) {
        return transactions.run(null, null, c -> holds.unsettled(c, context.effect, state, limit));
    }

    /** The stored result decoded by the effect's codec (an operator's view); throws what the codec throws. */
    public @Nullable T decodeResult(Scope scope, IdempotencyKey key, byte @Nullable [] stored) {
        return context.results.decode(scope, key, stored);
    }

    /** The stored form of a result, as the effect's codec writes it. */
    public byte @Nullable [] encodeResult(Scope scope, IdempotencyKey key, @Nullable T result) {
        return context.results.encode(scope, key, result);
    }

    /**
     * An operator's outcome for a claim needing reconciliation, with the local writes it implies and
     * then {@code also}, in one transaction; false if it is not one (nothing written).
     */
    public boolean resolve(
            Scope scope,
            IdempotencyKey key,
            @Nullable T result,
            @Nullable Failure failure,
            @Nullable InSameTransaction also) {
        Answer answer = failure != null
                ? new Answer(ClaimState.FAILED, FailureEncoding.encode(failure))
                : new Answer(ClaimState.SUCCEEDED, context.results.encode(scope, key, result));
        Resolve resolve = new Resolve(scope, key, context.effect, answer, context.policy.ttl());
        return transactions.run(scope, key, c -> {
            EffectSettlements.Resolved resolved = settlements.apply(c, resolve);
            if (resolved == null) {
                return false;
            }
            DecodedRequest<R> request = decodeRequest(scope, key, resolved.request());
            if (request.problem() != null) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "idemtx: " + context.effect + " " + context.describe(scope, key, resolved.createdAt())
                                + " resolved by an operator: " + request.problem()
                                + "; the local writes get no request");
            }
            Intent<R> intent = context.intent(scope, key, request.request(), 0, resolved.createdAt());
            if (failure != null) {
                transactions.localWrites(c, tx -> context.remote.refused(tx, intent, failure), scope, key);
            } else {
                transactions.localWrites(c, tx -> context.remote.after(tx, intent, result), scope, key);
            }
            if (also != null) {
                also.run(c);
            }
            return true;
        });
    }
}
