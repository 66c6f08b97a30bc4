package io.github.idemtx.jooq.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimAdminException;
import io.github.idemtx.jooq.ClaimView;
import io.github.idemtx.jooq.EffectRecovery.Ending;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.internal.store.StatementKind;
import io.github.idemtx.jooq.support.CuttingProxy;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.FakeBank;
import io.github.idemtx.jooq.support.FakeBank.Fault;
import io.github.idemtx.jooq.support.Faults;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.jooq.ConnectionProvider;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jooq.impl.DataSourceConnectionProvider;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The operators' API against every state a claim can be in, each refusal, the record of each
 * action, the listener's events, and an operator's resolution racing the remote's late answer.
 */
@DatabaseTest
class ClaimAdminTest {

    /** Charge ids start with "ch_": anything else is an answer the codec refuses. */
    static final ResultCodec<String> CHARGE_IDS = new ResultCodec<>() {
        @Override
        public byte[] encode(String value) {
            return value.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String decode(byte[] bytes) {
            String s = new String(bytes, StandardCharsets.UTF_8);
            if (!s.startsWith("ch_")) {
                throw new IllegalArgumentException("not a charge id: " + s);
            }
            return s;
        }
    };

    static final Duration LEASE = Duration.ofMillis(300);
    static final ClaimAdmin.Note NOTE = new ClaimAdmin.Note("alice", "checked the bank's statement of 2026-12-02");

    private final FakeBank bank = new FakeBank(Db.SCHEMA);
    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("charge");
    private final List<ClaimEvent> events = new CopyOnWriteArrayList<>();
    private final IdempotencyListener<Void> listener = new IdempotencyListener<>() {
        @Override
        public void callFinished(CallEvent event, @Nullable Void context) {}

        @Override
        public void claimChanged(ClaimEvent event) {
            events.add(event);
        }
    };

    /** Cuts an operator's COMMIT on its way (AmbiguousCommitTest's proxy); a pool of its own through it. */
    private static CuttingProxy proxy;

    private static DSLContext throughProxy;

    @BeforeAll
    static void tables() throws Exception {
        FakeBank.createTables(Db.DSL_CONTEXT, Db.SCHEMA);
        proxy = CuttingProxy.toTestDatabase();
        throughProxy = DSL.using(proxy.newPool("admin-through-cutting-proxy"), SQLDialect.POSTGRES);
    }

    @AfterAll
    static void stopProxy() throws Exception {
        if (proxy != null) {
            proxy.close(); // and its pool
        }
    }

    /** An effect of its own name, so that listings see only this test's claims. */
    private ExternalEffect<Long, String> effect(String name) {
        return effect(name, Db.dsl());
    }

    private ExternalEffect<Long, String> effect(String name, DSLContext dsl) {
        return ExternalEffect.builder(dsl, name, FakeBank.LONGS, CHARGE_IDS, bank)
                .schema(Db.SCHEMA)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(100))
                        .build())
                .lease(LEASE)
                .lookupSchedule(List.of())
                .listener(listener)
                .build();
    }

    private ClaimAdmin admin(ExternalEffect<?, ?>... effects) {
        return admin(Db.dsl(), effects);
    }

    private ClaimAdmin admin(DSLContext dsl, ExternalEffect<?, ?>... effects) {
        ClaimAdmin.Builder b = ClaimAdmin.builder(dsl).schema(Db.SCHEMA).transactionResults(ResultCodec.utf8());
        for (ExternalEffect<?, ?> e : effects) {
            b.effect(e);
        }
        return b.listener(listener).build();
    }

    private int count(String table, IdempotencyKey key) {
        return Db.rows(table, scope, key);
    }

    /** A claim handed to reconciliation: its answer lost, its only lookup unanswered. */
    private IdempotencyKey needingReconciliation(ExternalEffect<Long, String> charges, long amount) {
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        bank.silentKeys.add(key.value());
        try {
            assertThat(charges.run(scope, key, fingerprint, amount)).isInstanceOf(RemoteOutcome.Unknown.class);
        } finally {
            bank.fault = Fault.NONE;
        }
        await("handed to reconciliation", () -> {
            charges.recovery().recover(100);
            return charges.recovery().needingReconciliation(100).stream()
                    .anyMatch(u -> u.key().equals(key));
        });
        return key;
    }

    private static ClaimAdminException refusal(Runnable action) {
        try {
            action.run();
        } catch (ClaimAdminException e) {
            return e;
        }
        throw new AssertionError("the action was not refused");
    }

    @Test
    void aKeyNobodyClaimedIsEmptyAndEveryActionOnItIsNotFound() {
        ClaimAdmin admin = admin();
        IdempotencyKey key = Db.freshKey();
        assertThat(admin.inspect(scope, key)).isEmpty();
        assertThat(refusal(() -> admin.forget(scope, key, NOTE)).reason())
                .isEqualTo(ClaimAdminException.Reason.NOT_FOUND);
        ClaimAdminException e = refusal(() -> admin.resolveApplied(scope, key, "ch_1", NOTE));
        assertThat(e.reason()).isEqualTo(ClaimAdminException.Reason.NOT_FOUND);
        assertThat(e).hasMessageContaining("no claim for this key").hasMessageContaining(key.value());
        assertThat(events).isEmpty();
    }

    @Test
    void aCompletedTransactionIsShownCannotBeResolvedAndOnceForgottenItsKeyRunsAgain() {
        IdempotentTransaction<String> tx = Db.builder(Db.dsl(), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .listener(listener)
                .build();
        IdempotencyKey key = Db.freshKey();
        assertThat(tx.run(scope, key, fingerprint, t -> "receipt-1")).isInstanceOf(Outcome.Executed.class);
        assertThat(events).singleElement().satisfies(e -> {
            assertThat(e.kind()).isEqualTo(ClaimEvent.Kind.CREATED);
            assertThat(e.operation()).isEqualTo("transaction");
            assertThat(e.scope()).isEqualTo(scope);
            assertThat(e.key()).isEqualTo(key);
        });
        assertThat(tx.run(scope, key, fingerprint, t -> "receipt-2")).isInstanceOf(Outcome.Replayed.class);
        assertThat(events).as("a replay creates nothing").hasSize(1);

        ClaimAdmin admin = admin();
        ClaimView view = admin.inspect(scope, key).orElseThrow();
        assertThat(view.state()).isEqualTo(ClaimView.State.COMPLETED);
        assertThat(view.operation()).isEqualTo("transaction");
        assertThat(view.effect()).isNull();
        assertThat(view.answer()).isEqualTo("receipt-1");
        assertThat(view.answerText()).isEqualTo("receipt-1");
        assertThat(view.fingerprint()).hasSize(64);
        assertThat(view.expiresAt()).isAfter(view.createdAt());
        assertThat(view.expired()).isFalse();
        assertThat(view.downstreamKey()).isNull();
        assertThat(view.history()).isEmpty();

        ClaimAdminException e = refusal(() -> admin.resolveApplied(scope, key, "ch_1", NOTE));
        assertThat(e.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE);
        assertThat(e).hasMessageContaining("IdempotentTransaction").hasMessageContaining("completed");

        ClaimView forgotten = admin.forget(scope, key, new ClaimAdmin.Note("bob", "receipt-1 came from bug #123"));
        assertThat(forgotten.answer()).isEqualTo("receipt-1");
        assertThat(admin.inspect(scope, key)).isEmpty();
        assertThat(events).last().satisfies(ev -> {
            assertThat(ev.kind()).isEqualTo(ClaimEvent.Kind.FORGOTTEN);
            assertThat(ev.operator()).isEqualTo("bob");
            assertThat(ev.reason()).isEqualTo("receipt-1 came from bug #123");
        });
        assertThat(tx.run(scope, key, fingerprint, t -> "receipt-2"))
                .as("the key runs again")
                .isInstanceOfSatisfying(
                        Outcome.Executed.class, x -> assertThat(x.value()).isEqualTo("receipt-2"));
        assertThat(admin.inspect(scope, key).orElseThrow().history())
                .singleElement()
                .satisfies(a -> {
                    assertThat(a.action()).isEqualTo("forgotten");
                    assertThat(a.operator()).isEqualTo("bob");
                    assertThat(a.reason()).isEqualTo("receipt-1 came from bug #123");
                });
        String kept = Db.DSL_CONTEXT
                .resultQuery(
                        "select convert_from(result, 'UTF8') from " + Db.SCHEMA
                                + ".idempotency_claim_action where scope = ? and idem_key = ?",
                        scope.value(),
                        key.value())
                .fetchOne(0, String.class);
        assertThat(kept).as("what was forgotten is kept with the action").isEqualTo("receipt-1");
    }

    @Test
    void aFailedTransactionShowsItsFailureAndCanBeForgotten() {
        IdempotentTransaction<String> tx = Db.builder(Db.dsl(), ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .listener(listener)
                .build();
        IdempotencyKey key = Db.freshKey();
        assertThat(tx.run(scope, key, fingerprint, t -> {
                    throw new Rejection("insufficient-funds", "balance 10 < 20");
                }))
                .isInstanceOf(Outcome.Rejected.class);
        assertThat(events).extracting(ClaimEvent::kind).containsExactly(ClaimEvent.Kind.CREATED);
        ClaimAdmin admin = admin();
        ClaimView view = admin.inspect(scope, key).orElseThrow();
        assertThat(view.state()).isEqualTo(ClaimView.State.FAILED);
        assertThat(view.failure()).isEqualTo(new Failure("insufficient-funds", "balance 10 < 20"));
        assertThat(view.answer()).isNull();
        admin.forget(scope, key, NOTE);
        assertThat(admin.inspect(scope, key)).isEmpty();
    }

    @Test
    void aClaimInFlightIsListedAndNeitherResolvedNorForgotten() {
        ExternalEffect<Long, String> charges = effect("admin-in-flight");
        ClaimAdmin admin = admin(charges);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        assertThat(charges.run(scope, key, fingerprint, 70L)).isInstanceOf(RemoteOutcome.Unknown.class);
        bank.fault = Fault.NONE;
        assertThat(events).extracting(ClaimEvent::kind).containsExactly(ClaimEvent.Kind.CREATED);
        assertThat(events.get(0).operation()).isEqualTo("effect:admin-in-flight");

        ClaimView view = admin.inspect(scope, key).orElseThrow();
        assertThat(view.state()).isEqualTo(ClaimView.State.IN_FLIGHT);
        assertThat(view.effect()).isEqualTo("admin-in-flight");
        assertThat(view.request()).isEqualTo(70L);
        assertThat(view.fence()).isEqualTo(1L);
        assertThat(view.leaseUntil()).isNotNull();
        assertThat(view.expiresAt()).as("never, while unsettled").isNull();
        assertThat(view.downstreamKey())
                .isEqualTo(ExternalEffect.downstreamKey("admin-in-flight", scope, key, view.createdAt()))
                .isEqualTo(bank.charges.values().iterator().next().downstreamKey());

        assertThat(admin.list(ClaimView.State.IN_FLIGHT, "admin-in-flight", 10, null)
                        .claims())
                .extracting(ClaimView::key)
                .containsExactly(key);
        assertThat(admin.list(ClaimView.State.NEEDS_RECONCILIATION, "admin-in-flight", 10, null)
                        .claims())
                .isEmpty();
        ClaimAdmin.Backlog backlog = admin.backlog();
        assertThat(backlog.inFlight()).isPositive();
        assertThat(backlog.oldestInFlight()).isBeforeOrEqualTo(view.createdAt());
        assertThat(backlog.oldestInFlightAge(Instant.now()).isNegative()).isFalse();

        ClaimAdminException resolve = refusal(() -> admin.resolveApplied(scope, key, "ch_1", NOTE));
        assertThat(resolve.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE);
        assertThat(resolve).hasMessageContaining("in flight");
        ClaimAdminException forget = refusal(() -> admin.forget(scope, key, NOTE));
        assertThat(forget.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE);
        assertThat(forget).hasMessageContaining("in flight").hasMessageContaining("send the remote request again");
        assertThat(admin.inspect(scope, key).orElseThrow().state()).isEqualTo(ClaimView.State.IN_FLIGHT);
        assertThat(events).as("nothing but the creation").hasSize(1);
    }

    @Test
    void aClaimNeedingReconciliationIsResolvedAsAppliedOnceWithItsPostingAndItsRecord() {
        ExternalEffect<Long, String> charges = effect("admin-applied");
        ClaimAdmin admin = admin(charges);
        IdempotencyKey key = needingReconciliation(charges, 80L);
        ClaimView waiting = admin.inspect(scope, key).orElseThrow();
        assertThat(waiting.state()).isEqualTo(ClaimView.State.NEEDS_RECONCILIATION);
        assertThat(waiting.completedAt()).as("handed over at").isNotNull();
        assertThat(waiting.lookups()).isPositive();
        assertThat(admin.list(ClaimView.State.NEEDS_RECONCILIATION, "admin-applied", 10, null)
                        .claims())
                .extracting(ClaimView::key)
                .containsExactly(key);
        assertThat(admin.backlog().needingReconciliation()).isPositive();
        assertThat(admin.backlog().oldestNeedingReconciliation()).isNotNull();

        ClaimAdminException forget = refusal(() -> admin.forget(scope, key, NOTE));
        assertThat(forget).hasMessageContaining("needs reconciliation").hasMessageContaining("resolve it");
        ClaimAdminException bad = refusal(() -> admin.resolveApplied(scope, key, "<script>", NOTE));
        assertThat(bad.reason()).isEqualTo(ClaimAdminException.Reason.BAD_INPUT);
        assertThat(bad).hasMessageContaining("does not decode");
        ClaimAdminException unknown = refusal(() -> admin().resolveApplied(scope, key, "ch_1", NOTE));
        assertThat(unknown.reason()).isEqualTo(ClaimAdminException.Reason.UNKNOWN_EFFECT);
        assertThat(unknown).hasMessageContaining("'admin-applied'");
        assertThat(admin.inspect(scope, key).orElseThrow().state())
                .as("nothing written by the refusals")
                .isEqualTo(ClaimView.State.NEEDS_RECONCILIATION);
        assertThat(count("idempotency_claim_action", key)).isZero();

        String charge = bank.charges.get(waiting.downstreamKey()).id();
        ClaimView resolved = admin.resolveApplied(scope, key, charge, NOTE);
        assertThat(resolved.state()).isEqualTo(ClaimView.State.COMPLETED);
        assertThat(resolved.answer()).isEqualTo(charge);
        assertThat(resolved.request())
                .as("cleared, as a holder's record clears it")
                .isNull();
        assertThat(resolved.history()).singleElement().satisfies(a -> {
            assertThat(a.action()).isEqualTo("resolved_applied");
            assertThat(a.operator()).isEqualTo("alice");
            assertThat(a.reason()).isEqualTo(NOTE.reason());
        });
        assertThat(events).last().satisfies(e -> {
            assertThat(e.kind()).isEqualTo(ClaimEvent.Kind.RESOLVED);
            assertThat(e.operation()).isEqualTo("effect:admin-applied");
            assertThat(e.key()).isEqualTo(key);
        });
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.run(scope, key, fingerprint, 80L))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(charge));

        ClaimAdminException again = refusal(() -> admin.resolveRefused(scope, key, new Failure("x", "y"), NOTE));
        assertThat(again.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE);
        assertThat(again).hasMessageContaining("settled already");
        assertThat(count("effect_posting", key)).isEqualTo(1);
    }

    @Test
    void aTypedResolutionRecordsTheEffectsOwnResultAndRefusesAnotherEffectsClaim() {
        ExternalEffect<Long, String> charges = effect("admin-typed");
        ExternalEffect<Long, String> other = effect("admin-typed-other");
        ClaimAdmin admin = admin(); // the typed resolution needs no effect given to the builder
        IdempotencyKey key = needingReconciliation(charges, 85L);

        ClaimAdminException wrong = refusal(() -> admin.resolveApplied(other, scope, key, "ch_1", NOTE));
        assertThat(wrong.reason()).isEqualTo(ClaimAdminException.Reason.UNKNOWN_EFFECT);
        assertThat(wrong).hasMessageContaining("'admin-typed'").hasMessageContaining("'admin-typed-other'");
        assertThat(count("idempotency_claim_action", key)).as("nothing written").isZero();
        assertThat(count("effect_posting", key)).isZero();

        String charge = bank.charges
                .get(admin.inspect(scope, key).orElseThrow().downstreamKey())
                .id();
        ClaimView resolved = admin.resolveApplied(charges, scope, key, charge, NOTE);
        assertThat(resolved.state()).isEqualTo(ClaimView.State.COMPLETED);
        assertThat(resolved.answerText()).isEqualTo(charge);
        assertThat(resolved.history()).extracting(ClaimView.Action::action).containsExactly("resolved_applied");
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.run(scope, key, fingerprint, 85L))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(charge));
        ClaimAdminException again = refusal(() -> admin.resolveApplied(charges, scope, key, charge, NOTE));
        assertThat(again.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE);
    }

    @Test
    void aClaimNeedingReconciliationIsResolvedAsRefusedWithItsHoldReleased() {
        ExternalEffect<Long, String> charges = effect("admin-refused");
        ClaimAdmin admin = admin(charges);
        IdempotencyKey key = needingReconciliation(charges, 90L);
        assertThat(count("effect_hold", key)).isEqualTo(1);
        Failure none = new Failure("not-charged", "the statement shows no charge");
        ClaimView resolved = admin.resolveRefused(scope, key, none, NOTE);
        assertThat(resolved.state()).isEqualTo(ClaimView.State.FAILED);
        assertThat(resolved.failure()).isEqualTo(none);
        assertThat(resolved.history()).extracting(ClaimView.Action::action).containsExactly("resolved_refused");
        assertThat(count("effect_hold", key)).isZero();
        assertThat(count("effect_posting", key)).isZero();
        assertThat(charges.run(scope, key, fingerprint, 90L))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.failure()).isEqualTo(none));
    }

    @Test
    void listingsPageOldestFirstWithoutGapsOrRepeats() {
        ExternalEffect<Long, String> charges = effect("admin-pages");
        ClaimAdmin admin = admin(charges);
        List<IdempotencyKey> made = new ArrayList<>();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        try {
            for (int i = 0; i < 5; i++) {
                IdempotencyKey key = Db.freshKey();
                made.add(key);
                assertThat(charges.run(scope, key, fingerprint, 10L + i)).isInstanceOf(RemoteOutcome.Unknown.class);
            }
        } finally {
            bank.fault = Fault.NONE;
        }
        List<IdempotencyKey> seen = new ArrayList<>();
        String after = null;
        int pages = 0;
        do {
            ClaimAdmin.Page page = admin.list(ClaimView.State.IN_FLIGHT, "admin-pages", 2, after);
            page.claims().forEach(c -> seen.add(c.key()));
            after = page.next();
            pages++;
        } while (after != null && pages < 10);
        assertThat(seen).containsExactlyElementsOf(made);
        assertThat(pages).isEqualTo(3);
        assertThat(admin.list(ClaimView.State.IN_FLIGHT, "no-such-effect", 2, null)
                        .claims())
                .isEmpty();

        assertThatThrownBy(() -> admin.list(ClaimView.State.COMPLETED, null, 10, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("look a settled claim up by its scope and key");
        assertThatThrownBy(() -> admin.list(ClaimView.State.IN_FLIGHT, null, 0, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit");
        assertThatThrownBy(() -> admin.list(ClaimView.State.IN_FLIGHT, null, 10, "not a cursor"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("after");
    }

    @Test
    void notesAreCheckedBeforeAnythingIsWritten() {
        assertThatThrownBy(() -> new ClaimAdmin.Note(" ", "why"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("operator");
        assertThatThrownBy(() -> new ClaimAdmin.Note("alice", "two\nlines"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reason");
        assertThatThrownBy(() -> new ClaimAdmin.Note("alice", "a\u2028b"))
                .as("a Unicode line separator is a line break too")
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("one line");
        assertThatThrownBy(() -> new ClaimAdmin.Note("alice", "x".repeat(1001)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1000");
        ExternalEffect<Long, String> charges = effect("admin-twice");
        assertThatThrownBy(() -> ClaimAdmin.builder(Db.dsl()).effect(charges).effect(charges))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("admin-twice");
    }

    @Test
    void anActionInsideACallersTransactionIsRefused() {
        IdempotencyKey key = Db.freshKey();
        assertThatThrownBy(() -> Db.dsl()
                        .transaction(cfg -> ClaimAdmin.builder(cfg.dsl())
                                .schema(Db.SCHEMA)
                                .build()
                                .inspect(scope, key)))
                .isInstanceOf(TransactionOwnershipException.class)
                .hasMessageContaining("operator");
    }

    /**
     * Two operators settle the same claim at once, one each way: one of them records, the other is
     * told it is settled, and the books hold one outcome.
     */
    @Test
    void twoOperatorsResolvingAtOnceLeaveOneAnswer() throws Exception {
        ExternalEffect<Long, String> charges = effect("admin-two-operators");
        ClaimAdmin admin = admin(charges);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 5; round++) {
                IdempotencyKey key = needingReconciliation(charges, 100L + round);
                String charge = bank.charges
                        .get(admin.inspect(scope, key).orElseThrow().downstreamKey())
                        .id();
                CyclicBarrier start = new CyclicBarrier(2);
                Future<ClaimView> applied = pool.submit(() -> {
                    start.await();
                    return admin.resolveApplied(scope, key, charge, new ClaimAdmin.Note("alice", "on the statement"));
                });
                Future<ClaimView> refused = pool.submit(() -> {
                    start.await();
                    return admin.resolveRefused(
                            scope,
                            key,
                            new Failure("not-charged", "not on it"),
                            new ClaimAdmin.Note("bob", "not on it"));
                });
                int wins = wins(applied) + wins(refused);
                assertThat(wins).as("round " + round).isEqualTo(1);
                ClaimView now = admin.inspect(scope, key).orElseThrow();
                assertThat(now.history()).hasSize(1);
                assertThat(count("effect_posting", key) + count("effect_hold", key) + (now.failure() != null ? 1 : 0))
                        .as("a posting, or the hold released and the failure recorded")
                        .isEqualTo(1);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * An operator resolves a claim while the remote's answer, held up past the lease, comes back
     * definite: the holder's late record and the operator's resolution race under the row's lock. One
     * answer is kept; the other side learns it, and the posting is made once.
     */
    @Test
    void anOperatorRacingTheRemotesLateAnswerLeavesOneAnswer() throws Exception {
        ExternalEffect<Long, String> charges = effect("admin-late");
        ClaimAdmin admin = admin(charges);
        Set<String> winners = new HashSet<>();
        for (int round = 0; round < 6; round++) {
            IdempotencyKey key = Db.freshKey();
            CountDownLatch gate = new CountDownLatch(1);
            bank.gate = gate;
            ExecutorService threads = Executors.newFixedThreadPool(2);
            try {
                Future<RemoteOutcome<String>> late = threads.submit(() -> charges.run(scope, key, fingerprint, 7L));
                await("the claim committed", () -> count("idempotency_claim", key) == 1);
                Thread.sleep(LEASE.toMillis() + 50);
                bank.silentKeys.add(key.value());
                assertThat(charges.recovery().recover(10).count(Ending.RECONCILIATION))
                        .isEqualTo(1);
                bank.gate = null;
                CyclicBarrier start = new CyclicBarrier(2);
                Future<ClaimView> operator = threads.submit(() -> {
                    start.await();
                    return admin.resolveRefused(
                            scope,
                            key,
                            new Failure("not-charged", "none yet"),
                            new ClaimAdmin.Note("carol", "none yet"));
                });
                start.await();
                gate.countDown(); // the held call now applies at the bank and records what it got
                RemoteOutcome<String> answer = late.get(20, TimeUnit.SECONDS);
                boolean operatorWon = wins(operator) == 1;
                ClaimView now = admin.inspect(scope, key).orElseThrow();
                if (operatorWon) {
                    winners.add("operator");
                    assertThat(now.state()).isEqualTo(ClaimView.State.FAILED);
                    assertThat(answer).isInstanceOf(Outcome.Rejected.class);
                    assertThat(count("effect_posting", key)).isZero();
                } else {
                    winners.add("late answer");
                    assertThat(now.state()).isEqualTo(ClaimView.State.COMPLETED);
                    assertThat(answer).isInstanceOf(Outcome.Executed.class);
                    assertThat(now.history()).isEmpty();
                    assertThat(count("effect_posting", key)).isEqualTo(1);
                }
                assertThat(count("effect_hold", key)).isZero();
            } finally {
                gate.countDown();
                threads.shutdownNow();
            }
        }
        assertThat(winners)
                .as("either side may win; each round kept exactly one")
                .isNotEmpty();
    }

    /**
     * Operators keep trying to settle claims while a recoverer runs passes over them: a claim in
     * flight is refused (its lookups are still due), and the moment the recoverer hands it over the
     * operator's resolution is the one recorded; each claim ends with one answer, one action, and
     * its hold released once.
     */
    @Test
    void operatorsResolvingWhileTheRecovererRunsLeaveOneAnswerEach() throws Exception {
        ExternalEffect<Long, String> charges = ExternalEffect.builder(
                        Db.dsl(), "admin-with-recovery", FakeBank.LONGS, CHARGE_IDS, bank)
                .schema(Db.SCHEMA)
                .lease(Duration.ofMillis(50))
                .lookupSchedule(List.of(Duration.ofMillis(30), Duration.ofMillis(60)))
                .build();
        ClaimAdmin admin = admin(charges);
        List<IdempotencyKey> keys = new ArrayList<>();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        try {
            for (int i = 0; i < 4; i++) {
                IdempotencyKey key = Db.freshKey();
                bank.silentKeys.add(key.value());
                keys.add(key);
                assertThat(charges.run(scope, key, fingerprint, 200L + i)).isInstanceOf(RemoteOutcome.Unknown.class);
            }
        } finally {
            bank.fault = Fault.NONE;
        }
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        ExecutorService recoverer = Executors.newSingleThreadExecutor();
        Future<?> passes = recoverer.submit(() -> {
            while (!stop.get()) {
                charges.recovery().recover(100);
                Thread.sleep(5);
            }
            return null;
        });
        int refusedWhileInFlight = 0;
        try {
            for (IdempotencyKey key : keys) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (true) {
                    try {
                        admin.resolveRefused(
                                scope, key, new Failure("not-charged", "not on it"), new ClaimAdmin.Note("dan", "x"));
                        break;
                    } catch (ClaimAdminException e) {
                        assertThat(e.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE);
                        assertThat(e).hasMessageContaining("in flight");
                        refusedWhileInFlight++;
                    }
                    assertThat(System.nanoTime()).as("handed over in time").isLessThan(deadline);
                    Thread.sleep(2);
                }
            }
        } finally {
            stop.set(true);
            passes.get(20, TimeUnit.SECONDS);
            recoverer.shutdownNow();
        }
        for (IdempotencyKey key : keys) {
            ClaimView now = admin.inspect(scope, key).orElseThrow();
            assertThat(now.state()).isEqualTo(ClaimView.State.FAILED);
            assertThat(now.history()).hasSize(1);
            assertThat(count("effect_hold", key)).isZero();
            assertThat(count("effect_posting", key)).isZero();
        }
        assertThat(refusedWhileInFlight)
                .as("the first attempt met the claim in flight")
                .isPositive();
    }

    /** Runs {@code action} with the proxy armed to cut the COMMIT after an operator's write; its failure. */
    private static CommitOutcomeUnknownException cutCommit(CuttingProxy.Cut cut, IdempotencyKey key, Runnable action) {
        int cutsBefore = proxy.cuts();
        proxy.arm(cut, sql -> StatementKind.of(sql) == StatementKind.ADMIN_WRITE);
        RuntimeException failure = null;
        boolean stillArmed;
        try {
            action.run();
        } catch (RuntimeException e) {
            failure = e;
        } finally {
            stillArmed = proxy.armed();
            proxy.disarm(); // a failure before the COMMIT must not cut a later test's
        }
        assertThat(stillArmed).as("the proxy saw the COMMIT").isFalse();
        assertThat(proxy.cuts()).isEqualTo(cutsBefore + 1);
        assertThat(failure)
                .as("the COMMIT's outcome is reported unknown")
                .isInstanceOfSatisfying(CommitOutcomeUnknownException.class, e -> {
                    assertThat(e.key()).isEqualTo(key);
                    // an operator's advice, not a caller's "retry with the same key"
                    assertThat(e)
                            .hasMessageContaining("Inspect the claim before")
                            .hasMessageNotContaining("retry");
                })
                .matches(Faults::isConnectionError, "is a connection error");
        return (CommitOutcomeUnknownException) failure;
    }

    @Test
    void aForgetDeletesOnlyTheClaimItReadNotOneMadeAgainSince() {
        IdempotentTransaction<String> tx =
                Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        IdempotencyKey key = Db.freshKey();
        assertThat(tx.run(scope, key, fingerprint, t -> "receipt-1")).isInstanceOf(Outcome.Executed.class);
        // Between the forget's read (its first connection) and its delete (its second), someone else
        // forgets the claim and a retry runs the key again: a new claim, with its own answer
        AtomicInteger acquired = new AtomicInteger();
        AtomicBoolean madeAgain = new AtomicBoolean();
        DSLContext racing = onPool(pool -> {
            if (acquired.incrementAndGet() == 2) {
                Db.dsl()
                        .execute(
                                "delete from " + Db.SCHEMA + ".idempotency_claim where scope = ? and idem_key = ?",
                                scope.value(),
                                key.value());
                assertThat(tx.run(scope, key, fingerprint, t -> "receipt-2")).isInstanceOf(Outcome.Executed.class);
                madeAgain.set(true);
            }
            return pool.get();
        });
        ClaimAdmin admin = admin(racing);

        ClaimAdminException refused = refusal(() -> admin.forget(scope, key, NOTE));

        assertThat(madeAgain)
                .as("the key ran again between the read and the delete")
                .isTrue();
        assertThat(refused.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE);
        assertThat(refused).hasMessageContaining("made again").hasMessageContaining("nothing was deleted");
        assertThat(admin(Db.dsl()).inspect(scope, key))
                .as("the new claim's answer stays")
                .hasValueSatisfying(v -> assertThat(v.answer()).isEqualTo("receipt-2"));
        assertThat(Db.rows("idempotency_claim_action", scope, key))
                .as("nothing recorded")
                .isZero();
        assertThat(events).as("nothing told").isEmpty();
    }

    @Test
    void aLeftoverReadOnlyTransactionWhoseCommitIsLostIsNoDoubtAboutTheForget() {
        IdempotentTransaction<String> tx =
                Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        IdempotencyKey key = Db.freshKey();
        assertThat(tx.run(scope, key, fingerprint, t -> "receipt-1")).isInstanceOf(Outcome.Executed.class);
        // the forget's second connection (its delete's) comes with a read-only transaction a pool left
        // open, whose COMMIT is lost in flight: the forget itself was never sent
        AtomicInteger acquired = new AtomicInteger();
        AtomicBoolean lost = new AtomicBoolean();
        DSLContext leaving = onPool(pool -> {
            java.sql.Connection c = pool.get();
            if (acquired.incrementAndGet() != 2) {
                return c;
            }
            try {
                c.setAutoCommit(false);
                c.createStatement().execute("select 1");
            } catch (java.sql.SQLException e) {
                throw new AssertionError(e);
            }
            return losingOneCommit(c, lost);
        });

        assertThatThrownBy(() -> admin(leaving).forget(scope, key, NOTE))
                .isNotInstanceOf(CommitOutcomeUnknownException.class)
                .hasMessageContaining("nothing of this call was sent");
        assertThat(lost).as("the leftover's COMMIT was lost").isTrue();
        assertThat(admin(Db.dsl()).inspect(scope, key))
                .as("not forgotten")
                .hasValueSatisfying(v -> assertThat(v.answer()).isEqualTo("receipt-1"));
    }

    @Test
    void aResolutionThatCommittedIsToldEvenWhenReadingItBackFails() {
        ExternalEffect<Long, String> charges = effect("admin-read-back");
        IdempotencyKey key = needingReconciliation(charges, 16L);
        events.clear();
        // the database answers until the resolution is in, and never again
        DSLContext vanishing = onPool(pool -> {
            if (Db.rows("idempotency_claim_action", scope, key) > 0) {
                throw new org.jooq.exception.DataAccessException(
                        "the database is unreachable", new java.sql.SQLException("Connection refused", "08001"));
            }
            return pool.get();
        });

        assertThatThrownBy(() -> admin(vanishing, charges).resolveApplied(scope, key, "ch_16", NOTE))
                .isNotInstanceOf(CommitOutcomeUnknownException.class)
                .hasMessageContaining("the resolution was recorded (committed)");

        assertThat(events).as("the resolution is told").singleElement().satisfies(e -> {
            assertThat(e.kind()).isEqualTo(ClaimEvent.Kind.RESOLVED);
            assertThat(e.key()).isEqualTo(key);
        });
        assertThat(admin(charges).inspect(scope, key).orElseThrow().answer()).isEqualTo("ch_16");
    }

    /**
     * A context on the test pool whose every connection is handed out by {@code acquire}, given the
     * pool's: to act between an action's steps, or to hand out another connection in its place
     * ({@link Delegating}, given back to the pool unwrapped).
     */
    private static DSLContext onPool(
            java.util.function.Function<Supplier<java.sql.Connection>, java.sql.Connection> acquire) {
        DataSourceConnectionProvider pool = new DataSourceConnectionProvider(Db.POOL);
        return DSL.using(
                new ConnectionProvider() {
                    @Override
                    public java.sql.Connection acquire() {
                        return acquire.apply(pool::acquire);
                    }

                    @Override
                    public void release(java.sql.Connection connection) {
                        pool.release(connection instanceof Delegating d ? d.delegate() : connection);
                    }
                },
                SQLDialect.POSTGRES);
    }

    /** A connection handed out in place of another ({@link #losingOneCommit}). */
    interface Delegating {
        java.sql.Connection delegate();
    }

    /** {@code real}, whose first COMMIT is rolled back and reported lost in flight (08006). */
    private static java.sql.Connection losingOneCommit(java.sql.Connection real, AtomicBoolean lost) {
        return (java.sql.Connection) java.lang.reflect.Proxy.newProxyInstance(
                ClaimAdminTest.class.getClassLoader(),
                new Class<?>[] {java.sql.Connection.class, Delegating.class},
                (proxy, method, args) -> {
                    if (method.getDeclaringClass() == Delegating.class) {
                        return real;
                    }
                    if (method.getName().equals("commit") && lost.compareAndSet(false, true)) {
                        real.rollback();
                        throw new java.sql.SQLException("An I/O error occurred while sending to the backend.", "08006");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @ParameterizedTest
    @EnumSource(CuttingProxy.Cut.class)
    void aForgetWhoseCommitIsCutIsInDoubtAndInspectTellsWhichWay(CuttingProxy.Cut cut) {
        IdempotentTransaction<String> tx =
                Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        IdempotencyKey key = Db.freshKey();
        assertThat(tx.run(scope, key, fingerprint, t -> "receipt-1")).isInstanceOf(Outcome.Executed.class);
        ClaimAdmin admin = admin(throughProxy);

        cutCommit(cut, key, () -> admin.forget(scope, key, NOTE));

        assertThat(events).as("nothing is told while in doubt").isEmpty();
        if (cut == CuttingProxy.Cut.AFTER_COMMIT) {
            assertThat(admin.inspect(scope, key))
                    .as("the server committed the forget")
                    .isEmpty();
            assertThat(refusal(() -> admin.forget(scope, key, NOTE)).reason())
                    .isEqualTo(ClaimAdminException.Reason.NOT_FOUND);
        } else {
            assertThat(admin.inspect(scope, key))
                    .as("nothing committed")
                    .hasValueSatisfying(v -> assertThat(v.answer()).isEqualTo("receipt-1"));
            admin.forget(scope, key, NOTE);
            assertThat(admin.inspect(scope, key)).isEmpty();
        }
        assertThat(Db.rows("idempotency_claim_action", scope, key))
                .as("one forget recorded")
                .isEqualTo(1);
        assertThat(tx.run(scope, key, fingerprint, t -> "receipt-2"))
                .as("the key runs again")
                .isInstanceOf(Outcome.Executed.class);
    }

    @ParameterizedTest
    @EnumSource(CuttingProxy.Cut.class)
    void aResolutionWhoseCommitIsCutIsInDoubtAndInspectTellsWhichWay(CuttingProxy.Cut cut) {
        ExternalEffect<Long, String> charges = effect(
                "admin-cut-" + cut.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'), throughProxy);
        ClaimAdmin admin = admin(throughProxy, charges);
        IdempotencyKey key = needingReconciliation(charges, 15L);
        events.clear();

        cutCommit(cut, key, () -> admin.resolveApplied(scope, key, "ch_cut", NOTE));

        assertThat(events).as("nothing is told while in doubt").isEmpty();
        if (cut == CuttingProxy.Cut.BEFORE_COMMIT) {
            assertThat(admin.inspect(scope, key).orElseThrow().state())
                    .as("nothing committed")
                    .isEqualTo(ClaimView.State.NEEDS_RECONCILIATION);
            admin.resolveApplied(scope, key, "ch_cut", NOTE);
        }
        ClaimView now = admin.inspect(scope, key).orElseThrow();
        assertThat(now.state()).isEqualTo(ClaimView.State.COMPLETED);
        assertThat(now.answer()).isEqualTo("ch_cut");
        assertThat(now.history()).as("one resolution recorded").hasSize(1);
        assertThat(count("effect_posting", key)).as("its local writes ran once").isEqualTo(1);
        assertThat(charges.run(scope, key, fingerprint, 15L))
                .as("the retry replays the resolution")
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("ch_cut"));
    }

    private static int wins(Future<ClaimView> action) throws Exception {
        try {
            action.get(20, TimeUnit.SECONDS);
            return 1;
        } catch (java.util.concurrent.ExecutionException e) {
            assertThat(e.getCause())
                    .isInstanceOfSatisfying(
                            ClaimAdminException.class,
                            r -> assertThat(r.reason()).isEqualTo(ClaimAdminException.Reason.WRONG_STATE));
            return 0;
        }
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
