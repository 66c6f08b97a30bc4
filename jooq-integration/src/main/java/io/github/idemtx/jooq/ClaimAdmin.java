package io.github.idemtx.jooq;

import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.internal.Listeners;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow;
import io.github.idemtx.jooq.internal.store.AdminStatements;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.ClaimTable;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.tx.Jdbc;
import io.github.idemtx.jooq.internal.tx.TransactionOwnership;
import io.github.idemtx.jooq.internal.tx.Units;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jooq.Configuration;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * What an operator needs to see and settle claims, without Spring: inspect one claim, list the
 * unsettled ones (oldest first, in pages), count the backlog, record the outcome of a claim that
 * needs reconciliation, and forget a settled claim so that the next call with its key runs again.
 *
 * <pre>{@code
 * ClaimAdmin admin = ClaimAdmin.builder(dsl).effect(payouts).build();
 * for (ClaimView claim : admin.list(ClaimView.State.NEEDS_RECONCILIATION, "payout", 50, null).claims()) {
 *     // look claim.downstreamKey() up in the bank's statement, then:
 *     admin.resolveApplied(claim.scope(), claim.key(), bankAnswerJson, new ClaimAdmin.Note("alice", "on statement 2026-12-02"));
 * }
 * }</pre>
 *
 * <p>Every action is refused with a {@link ClaimAdminException} naming the claim's state when the
 * state does not allow it, before anything is written; an action that is taken is recorded with the
 * operator's name and reason in the same transaction (table {@code idempotency_claim_action}), shown
 * by {@link #inspect} afterwards, and told to the listeners ({@link ClaimEvent}). Resolving runs the
 * effect's own local writes ({@link Remote#after} or {@link Remote#refused}) in that transaction, as
 * a holder's record would; it races safely with a late answer of the remote or a recoverer's lookup:
 * one of them records, the other is refused or told the claim is settled. This is the one place
 * where an operator's finding is recorded; a program that reads the remote's answer itself records
 * it typed with {@link #resolveApplied(ExternalEffect, Scope, IdempotencyKey, Object, Note)}. The
 * recovery that hands claims over to reconciliation is the effect's {@link ExternalEffect#recovery()}.
 *
 * <p>Each method owns its transactions; inside a caller's transaction it is refused. Instances are
 * immutable and thread-safe.
 */
public final class ClaimAdmin {

    /** The most claims one page lists. */
    public static final int MAX_PAGE = 1000;

    private final Configuration configuration;
    private final IdempotencyPolicy policy;
    private final AdminStatements sql;
    private final TransactionOwnership ownership;
    private final Map<String, ExternalEffect<?, ?>> effects;
    private final ClaimViewDecoder views;
    private final Listeners listeners;
    private final Jdbc.ServerCheck serverCheck = new Jdbc.ServerCheck();

    private ClaimAdmin(Builder b) {
        this.configuration = b.dsl.configuration();
        this.policy = b.policy;
        this.sql = new AdminStatements(new ClaimTable(b.schema));
        this.ownership = TransactionOwnership.ownOnly(
                b.detectors,
                "an operator's action commits on its own, with its record,",
                "call it outside the transaction");
        this.effects = Map.copyOf(b.effects);
        this.views = new ClaimViewDecoder(effects, b.transactionResults);
        this.listeners = new Listeners(b.listeners);
    }

    /**
     * A builder.
     *
     * @param dsl where the claim table is; each action takes a connection from it for a transaction of its own
     * @return a builder with the default schema and policy and no effects
     * @throws NullPointerException if {@code dsl} is null
     */
    public static Builder builder(DSLContext dsl) {
        return new Builder(dsl);
    }

    /** {@return the names of the effects whose claims this admin can resolve and decode} */
    public Set<String> effects() {
        return effects.keySet();
    }

    /**
     * {@return the claim for ({@code scope}, {@code key}) with its history, or empty when there is
     * none (never made, purged, forgotten, or recorded in a transaction that has not committed)}
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @throws NullPointerException if an argument is null
     */
    public Optional<ClaimView> inspect(Scope scope, IdempotencyKey key) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        return Optional.ofNullable(inTransaction(scope, key, c -> {
            AdminStatements.Row row = sql.read(c, scope, key);
            return row == null ? null : views.view(row, sql.history(c, scope, key));
        }));
    }

    /**
     * {@return the operators' recorded actions on ({@code scope}, {@code key}), newest first, up to
     * 50: what {@link ClaimView#history()} shows, and still there once the claim is forgotten (its
     * forget the newest) or purged; empty when nobody acted on it}
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @throws NullPointerException if an argument is null
     */
    public List<ClaimView.Action> history(Scope scope, IdempotencyKey key) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        return ClaimViewDecoder.actions(inTransaction(scope, key, c -> sql.history(c, scope, key)));
    }

    /**
     * {@return up to {@code limit} claims in {@code state}, oldest first, after the page that
     * {@code after} ended; {@link Page#next()} continues it}
     *
     * @param state {@link ClaimView.State#IN_FLIGHT}, {@link ClaimView.State#NEEDS_RECONCILIATION} or
     *     {@link ClaimView.State#SENT}
     * @param effect only this effect's claims; null for every effect's
     * @param limit from 1 to {@value #MAX_PAGE}
     * @param after null for the first page, or the {@link Page#next()} of the page before
     * @throws NullPointerException if {@code state} is null
     * @throws IllegalArgumentException if {@code state} is a settled one (they are many: look them up by
     *     key), {@code limit} is out of range, or {@code after} is not a page's {@code next}
     */
    public Page list(ClaimView.State state, @Nullable String effect, int limit, @Nullable String after) {
        Objects.requireNonNull(state, "state must not be null");
        ClaimState stored = switch (state) {
            case IN_FLIGHT -> ClaimState.IN_FLIGHT;
            case NEEDS_RECONCILIATION -> ClaimState.NEEDS_RECONCILIATION;
            case SENT -> ClaimState.SENT;
            default ->
                throw new IllegalArgumentException("only in_flight, needs_reconciliation and sent claims are listed,"
                        + " was " + state.tag() + "; look a settled claim up by its scope and key");
        };
        if (limit < 1 || limit > MAX_PAGE) {
            throw new IllegalArgumentException("limit must be between 1 and " + MAX_PAGE + ", was " + limit);
        }
        PageCursor from = after == null ? null : PageCursor.parse(after);
        List<AdminStatements.Row> rows = inTransaction(
                null,
                null,
                c -> sql.page(
                        c,
                        stored,
                        effect,
                        from == null ? null : from.createdAt(),
                        from == null ? null : from.scope(),
                        from == null ? null : from.key(),
                        limit));
        List<ClaimView> views = new ArrayList<>(rows.size());
        for (AdminStatements.Row row : rows) {
            views.add(this.views.view(row, List.of()));
        }
        AdminStatements.Row last = rows.size() == limit ? rows.get(rows.size() - 1) : null;
        return new Page(
                views,
                last == null
                        ? null
                        : new PageCursor(
                                        last.createdAt(),
                                        last.scope().value(),
                                        last.key().value())
                                .format());
    }

    /** {@return how many claims are in flight and how many need reconciliation, with the oldest of each} */
    public Backlog backlog() {
        AdminStatements.Backlog b = inTransaction(null, null, sql::backlog);
        return new Backlog(b.inFlight(), b.needingReconciliation(), b.oldestInFlight(), b.oldestNeeding());
    }

    /**
     * Records that the remote applied a claim that needs reconciliation, with {@code answer} as its
     * result, and runs the effect's {@link Remote#after} (the local writes that follow a success) in
     * the same transaction. Retries then replay it.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param answer the result in the stored form of the effect's result codec, as text (the JSON for
     *     a JSON codec); null for a null result
     * @param note who, and why
     * @return the claim as it is now
     * @throws NullPointerException if {@code scope}, {@code key} or {@code note} is null
     * @throws ClaimAdminException if there is no such claim, it does not need reconciliation, its
     *     effect is not known here, or the answer does not decode; nothing was written
     * @throws io.github.idemtx.core.CommitOutcomeUnknownException if the connection was lost while its
     *     COMMIT was in flight, or the synchronous standby never confirmed it: {@link #inspect} tells
     *     whether it was recorded
     */
    public ClaimView resolveApplied(Scope scope, IdempotencyKey key, @Nullable String answer, Note note) {
        return resolve(
                scope,
                key,
                null,
                AdminStatements.RESOLVED_APPLIED,
                note,
                (effect, also) -> decodeAndResolve(effect.flow(), scope, key, answer, also));
    }

    /**
     * Records that the remote applied a claim of {@code effect} that needs reconciliation, with
     * {@code result} as it is (for a program that read the remote's answer, such as a reconciler
     * matching a bank statement), and runs {@code effect}'s {@link Remote#after} in the same
     * transaction, as {@link #resolveApplied(Scope, IdempotencyKey, String, Note)} does with an answer
     * in its stored form. {@code effect} need not have been given to {@link Builder#effect}; its
     * schema should be this admin's.
     *
     * @param <T> the effect's result type
     * @param effect the effect that wrote the claim
     * @param scope the claim's scope
     * @param key the claim's key
     * @param result what the remote applied; may be null
     * @param note who, and why
     * @return the claim as it is now
     * @throws NullPointerException if {@code effect}, {@code scope}, {@code key} or {@code note} is null
     * @throws ClaimAdminException if there is no such claim, it does not need reconciliation, or
     *     another effect wrote it ({@link ClaimAdminException.Reason#UNKNOWN_EFFECT}); nothing was written
     * @throws io.github.idemtx.core.CommitOutcomeUnknownException if the connection was lost while its
     *     COMMIT was in flight, or the synchronous standby never confirmed it: {@link #inspect} tells
     *     whether it was recorded
     * @throws RuntimeException what {@link Remote#after} threw, or the database's failure: nothing is
     *     recorded, and the resolution can be tried again
     */
    public <T> ClaimView resolveApplied(
            ExternalEffect<?, T> effect, Scope scope, IdempotencyKey key, @Nullable T result, Note note) {
        Objects.requireNonNull(effect, "effect must not be null");
        return resolve(
                scope,
                key,
                effect,
                AdminStatements.RESOLVED_APPLIED,
                note,
                (e, also) -> effect.flow().resolve(scope, key, result, null, also));
    }

    /**
     * Records that the remote did not apply a claim that needs reconciliation, for {@code failure},
     * and runs the effect's {@link Remote#refused} (releasing what was held) in the same
     * transaction. Retries then get it as {@code Rejected}.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param failure why the remote did not apply it
     * @param note who, and why
     * @return the claim as it is now
     * @throws NullPointerException if an argument is null
     * @throws ClaimAdminException if there is no such claim, it does not need reconciliation or its
     *     effect is not known here; nothing was written
     * @throws io.github.idemtx.core.CommitOutcomeUnknownException if the connection was lost while its
     *     COMMIT was in flight, or the synchronous standby never confirmed it: {@link #inspect} tells
     *     whether it was recorded
     */
    public ClaimView resolveRefused(Scope scope, IdempotencyKey key, Failure failure, Note note) {
        Objects.requireNonNull(failure, "failure must not be null");
        return resolve(
                scope,
                key,
                null,
                AdminStatements.RESOLVED_REFUSED,
                note,
                (effect, also) -> effect.flow().resolve(scope, key, null, failure, also));
    }

    /**
     * Deletes a settled claim (completed or failed), so that the next call with its key runs again:
     * for an answer a bug produced, or a key a client must reuse. What it held is kept in its
     * history. A claim in flight or needing reconciliation cannot be forgotten: that could repeat the
     * remote action; resolve it first.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param note who, and why
     * @return the claim as it was
     * @throws NullPointerException if an argument is null
     * @throws ClaimAdminException if there is no such claim, it is not settled, or it was made again
     *     (forgotten or purged, and run again) since this action read it; nothing was written
     * @throws CommitOutcomeUnknownException if the connection was lost while its COMMIT was in flight,
     *     or the synchronous standby never confirmed it: {@link #inspect} tells whether the claim is
     *     still there; repeat the forget only if it is (a call with the key may have run since)
     */
    public ClaimView forget(Scope scope, IdempotencyKey key, Note note) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(note, "note must not be null");
        ClaimView before = existing(scope, key);
        if (before.state() != ClaimView.State.COMPLETED && before.state() != ClaimView.State.FAILED) {
            throw ClaimAdminRefusals.cannotForget(before);
        }
        boolean gone;
        try {
            gone = inTransaction(
                    scope,
                    key,
                    c -> sql.forget(
                            c, scope, key, before.createdAt(), before.completedAt(), note.operator(), note.reason()));
        } catch (RuntimeException e) {
            throw ClaimAdminRefusals.inDoubt(scope, key, "forget", e); // forgotten or not: inspect tells
        }
        if (!gone) {
            // forgotten, purged or made again by someone else between the read and the delete: explain
            // from what it is now
            ClaimView now = existing(scope, key);
            if (now.createdAt().equals(before.createdAt())) {
                throw ClaimAdminRefusals.cannotForget(now);
            }
            throw ClaimAdminRefusals.madeAgain(before, now);
        }
        tell(ClaimEvent.Kind.FORGOTTEN, before, note);
        return before;
    }

    /** How a resolution records its finding with the effect's local writes: true if it did. */
    @FunctionalInterface
    private interface Finding {
        boolean record(ExternalEffect<?, ?> effect, EffectFlow.InSameTransaction also);
    }

    /**
     * Checks that the claim needs reconciliation and was written by {@code given} (null: by an effect
     * this admin knows), then records {@code finding} with the operator's {@code action} and note in
     * one transaction.
     */
    private ClaimView resolve(
            Scope scope,
            IdempotencyKey key,
            @Nullable ExternalEffect<?, ?> given,
            String action,
            Note note,
            Finding finding) {
        Objects.requireNonNull(scope, "scope must not be null");
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(note, "note must not be null");
        ClaimView claim = existing(scope, key);
        String name = claim.effect();
        if (name == null) {
            throw ClaimAdminRefusals.notAnEffect(claim);
        }
        ExternalEffect<?, ?> effect = given != null ? given : effects.get(name);
        if (given != null && !given.name().equals(name)) {
            throw ClaimAdminRefusals.otherEffect(claim, given.name());
        }
        if (effect == null) {
            throw ClaimAdminRefusals.unknownEffect(claim, effects.keySet());
        }
        if (claim.state() != ClaimView.State.NEEDS_RECONCILIATION) {
            throw ClaimAdminRefusals.cannotResolve(claim);
        }
        boolean resolved;
        try {
            resolved = finding.record(
                    effect,
                    c -> sql.record(
                            c, scope, key, action, note.operator(), note.reason(), ClaimState.NEEDS_RECONCILIATION));
        } catch (CommitOutcomeUnknownException e) {
            // the effect's in-doubt answer is a caller's; an operator gets the same cause with an operator's advice
            throw ClaimAdminRefusals.inDoubt(
                    scope,
                    key,
                    "resolution",
                    e.getCause() instanceof RuntimeException r && SqlStates.isCommitInDoubt(r) ? r : e);
        }
        if (!resolved) {
            // settled meanwhile (a late answer, a recoverer) or gone: explain from what it is now
            throw ClaimAdminRefusals.cannotResolve(existing(scope, key));
        }
        // committed: it is told before the read back, which can fail (the event's fields are the same)
        tell(ClaimEvent.Kind.RESOLVED, claim, note);
        try {
            return existing(scope, key);
        } catch (ClaimAdminException e) {
            throw e; // forgotten or purged since: what is there now
        } catch (RuntimeException e) {
            throw new DataAccessException(
                    "the resolution was recorded (committed), but reading the claim back failed: " + e.getMessage(), e);
        }
    }

    /** Decodes an operator's answer with the effect's result codec, then records it. */
    private static <R, T> boolean decodeAndResolve(
            EffectFlow<R, T> flow,
            Scope scope,
            IdempotencyKey key,
            @Nullable String answer,
            EffectFlow.InSameTransaction also) {
        T result;
        try {
            result = flow.decodeResult(scope, key, answer == null ? null : answer.getBytes(StandardCharsets.UTF_8));
        } catch (RuntimeException e) {
            throw ClaimAdminRefusals.badAnswer(scope, key, e);
        }
        return flow.resolve(scope, key, result, null, also);
    }

    private ClaimView existing(Scope scope, IdempotencyKey key) {
        return inspect(scope, key).orElseThrow(() -> ClaimAdminRefusals.notFound(scope, key));
    }

    private void tell(ClaimEvent.Kind kind, ClaimView claim, Note note) {
        if (listeners.any()) {
            listeners.claimChanged(ClaimEvent.byOperator(
                    kind, claim.operation(), claim.scope(), claim.key(), note.operator(), note.reason()));
        }
    }

    // ------------------------------------------------------------------ transactions

    @FunctionalInterface
    private interface SqlUnit<V extends @Nullable Object> {
        V apply(Connection connection) throws SQLException;
    }

    private <V extends @Nullable Object> V inTransaction(
            @Nullable Scope scope, @Nullable IdempotencyKey key, SqlUnit<V> unit) {
        TransactionOwnership.Detected detected = ownership.detect(configuration);
        return Jdbc.onConnection(configuration, connection -> {
            serverCheck.check(connection);
            ownership.decide(configuration, detected, connection, scope, key);
            return Units.retrying(connection, policy, scope, key, boundary -> {
                try {
                    V v = unit.apply(connection);
                    Jdbc.commit(connection);
                    return v;
                } catch (SQLException e) {
                    throw SqlStates.storeFailure("an operator's statement failed", e, sql.schema());
                }
            });
        });
    }

    // ------------------------------------------------------------------ values

    /**
     * Who takes an action, and why: recorded with it.
     *
     * @param operator who (a person's or a tool's name): 1 to 255 characters, no line breaks
     * @param reason why, in their words: 1 to 1000 characters, no line breaks
     */
    public record Note(String operator, String reason) {
        /**
         * Checks both.
         *
         * @throws NullPointerException if either is null
         * @throws IllegalArgumentException if either is blank, too long, or holds a control character
         */
        public Note {
            check("operator", operator, 255);
            check("reason", reason, 1000);
        }

        private static void check(String what, String value, int max) {
            Objects.requireNonNull(value, what + " must not be null");
            if (value.isBlank()) {
                throw new IllegalArgumentException(what + " must not be blank");
            }
            if (value.length() > max) {
                throw new IllegalArgumentException(
                        what + " must be at most " + max + " characters, was " + value.length());
            }
            if (value.chars()
                    .anyMatch(c -> Character.isISOControl(c)
                            || Character.getType(c) == Character.LINE_SEPARATOR
                            || Character.getType(c) == Character.PARAGRAPH_SEPARATOR)) {
                throw new IllegalArgumentException(what + " must be one line without control characters");
            }
        }
    }

    /**
     * One page of a listing.
     *
     * @param claims the claims, oldest first
     * @param next what to pass as {@code after} for the next page; null when this page is the last
     */
    public record Page(List<ClaimView> claims, @Nullable String next) {
        /** Copies {@code claims}. */
        public Page {
            claims = List.copyOf(claims);
        }
    }

    /**
     * The claims waiting on something: the reconciliation backlog and what is in flight.
     *
     * @param inFlight effect claims in flight (a call running, or an unknown outcome waiting for its lookup)
     * @param needingReconciliation effect claims waiting for an operator
     * @param oldestInFlight when the oldest claim in flight began; null when none is
     * @param oldestNeedingReconciliation when the claim waiting longest for an operator was handed over; null when none is
     */
    public record Backlog(
            long inFlight,
            long needingReconciliation,
            @Nullable Instant oldestInFlight,
            @Nullable Instant oldestNeedingReconciliation) {

        /**
         * {@return how long the oldest claim in flight has been in flight at {@code now}; zero when none is}
         *
         * @param now the time to measure at
         */
        public Duration oldestInFlightAge(Instant now) {
            return oldestInFlight == null || oldestInFlight.isAfter(now)
                    ? Duration.ZERO
                    : Duration.between(oldestInFlight, now);
        }
    }

    /** Builds a {@link ClaimAdmin}. Not thread-safe; each setter validates at once. */
    public static final class Builder {
        private final DSLContext dsl;
        private String schema = IdempotencySchema.DEFAULT_SCHEMA;
        private IdempotencyPolicy policy = IdempotencyPolicy.defaults();
        private final Map<String, ExternalEffect<?, ?>> effects = new LinkedHashMap<>();
        private @Nullable ResultCodec<?> transactionResults;
        private final List<TransactionDetector> detectors = new ArrayList<>();
        private final List<IdempotencyListener<?>> listeners = new ArrayList<>();

        private Builder(DSLContext dsl) {
            this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
        }

        /**
         * Sets the claim table's schema; default {@value IdempotencySchema#DEFAULT_SCHEMA}.
         *
         * @param schema a plain PostgreSQL identifier
         * @return this builder
         * @throws NullPointerException if {@code schema} is null
         * @throws IllegalArgumentException if it is not a plain identifier
         */
        public Builder schema(String schema) {
            this.schema = IdempotencySchema.requireSchemaName(schema);
            return this;
        }

        /**
         * Sets the policy whose attempts on serialization failures the actions use; default
         * {@link IdempotencyPolicy#defaults()}.
         *
         * @param policy the policy
         * @return this builder
         * @throws NullPointerException if {@code policy} is null
         */
        public Builder policy(IdempotencyPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy must not be null");
            return this;
        }

        /**
         * Adds an effect whose claims this admin resolves (with the effect's local writes) and decodes.
         * Its schema should be this admin's.
         *
         * @param effect the effect
         * @return this builder
         * @throws NullPointerException if {@code effect} is null
         * @throws IllegalArgumentException if an effect of the same name was added
         */
        public Builder effect(ExternalEffect<?, ?> effect) {
            Objects.requireNonNull(effect, "effect must not be null");
            if (effects.putIfAbsent(effect.name(), effect) != null) {
                throw new IllegalArgumentException("an effect named '" + effect.name() + "' was added already");
            }
            return this;
        }

        /**
         * Sets the codec that decodes {@link IdempotentTransaction}'s stored results for display; default
         * none (they are shown as text, {@link ClaimView#answerText()}).
         *
         * @param codec the codec
         * @return this builder
         * @throws NullPointerException if {@code codec} is null
         */
        public Builder transactionResults(ResultCodec<?> codec) {
            this.transactionResults = Objects.requireNonNull(codec, "codec must not be null");
            return this;
        }

        /**
         * Adds a transaction detector, used to refuse actions inside a caller's transaction.
         *
         * @param detector the detector
         * @return this builder
         * @throws NullPointerException if {@code detector} is null
         */
        public Builder detector(TransactionDetector detector) {
            detectors.add(Objects.requireNonNull(detector, "detector must not be null"));
            return this;
        }

        /**
         * Adds a listener, told of every resolution and forget ({@link IdempotencyListener#claimChanged}).
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder listener(IdempotencyListener<?> listener) {
            listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
            return this;
        }

        /** {@return the admin} */
        public ClaimAdmin build() {
            return new ClaimAdmin(this);
        }
    }
}
