package io.github.idemtx.jooq.effect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimAdminException;
import io.github.idemtx.jooq.ClaimView;
import io.github.idemtx.jooq.EffectRecovery;
import io.github.idemtx.jooq.EffectRecovery.Ending;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.internal.store.StatementKind;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.FakeBank;
import io.github.idemtx.jooq.support.FakeBank.Fault;
import io.github.idemtx.jooq.support.SqlHook;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.jooq.DSLContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The external-effect front door against PostgreSQL and a fake bank, with a fault at every point. */
@DatabaseTest
class ExternalEffectTest {

    static final Duration LEASE = Duration.ofMillis(300);
    static final List<Duration> SCHEDULE = List.of(Duration.ofMillis(20), Duration.ofMillis(40), Duration.ofMillis(80));

    private final FakeBank bank = new FakeBank(Db.SCHEMA);
    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("charge");

    @BeforeAll
    static void tables() {
        FakeBank.createTables(Db.DSL_CONTEXT, Db.SCHEMA);
    }

    private ExternalEffect<Long, String> effect(boolean readAfterWrite) {
        return effect(Db.dsl(), "charge", readAfterWrite, SCHEDULE);
    }

    /** An effect of its own name: its recoverer and its lists see only the claims of the test that made it. */
    private ExternalEffect<Long, String> effect(
            DSLContext dsl, String name, boolean readAfterWrite, List<Duration> schedule) {
        return ExternalEffect.builder(dsl, name, FakeBank.LONGS, ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(100))
                        .build())
                .lease(LEASE)
                .lookupSchedule(schedule)
                .readAfterWrite(readAfterWrite)
                .build();
    }

    private int count(String table, IdempotencyKey key) {
        return Db.rows(table, scope, key);
    }

    private static final ClaimAdmin.Note NOTE = new ClaimAdmin.Note("operator", "the bank's statement says so");

    /** The operator's admin, knowing {@code effect}: where a claim that needs reconciliation is resolved. */
    private static ClaimAdmin admin(ExternalEffect<?, ?> effect) {
        return ClaimAdmin.builder(Db.dsl()).schema(Db.SCHEMA).effect(effect).build();
    }

    private int applications() {
        return bank.applications.values().stream()
                .mapToInt(java.util.concurrent.atomic.AtomicInteger::get)
                .max()
                .orElse(0);
    }

    private static void pastTheLease() throws InterruptedException {
        Thread.sleep(LEASE.toMillis() + 50);
    }

    @Test
    void aChargeRunsOnceIsPostedOnceAndItsRetryReplaysIt() {
        ExternalEffect<Long, String> charges = effect(false);
        IdempotencyKey key = Db.freshKey();
        RemoteOutcome<String> first = charges.run(scope, key, fingerprint, 1250L);
        assertThat(first).isInstanceOf(Outcome.Executed.class);
        String charge = ((Outcome.Executed<String>) first).value();
        assertThat(charges.run(scope, key, fingerprint, 1250L))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(charge));
        assertThat(charges.run(scope, key, Db.fingerprint("other"), 99L))
                .isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(bank.calls).hasValue(1);
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.recovery().inFlight(10)).isEmpty();
    }

    @Test
    void aDeclinedChargeIsRejectedWithTheHoldReleasedAndReplayed() {
        bank.limit = 100;
        ExternalEffect<Long, String> charges = effect(false);
        IdempotencyKey key = Db.freshKey();
        assertThat(charges.run(scope, key, fingerprint, 500L)).isInstanceOfSatisfying(Outcome.Rejected.class, r -> {
            assertThat(r.failure().code()).isEqualTo("declined");
            assertThat(r.replayed()).isFalse();
        });
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.run(scope, key, fingerprint, 500L))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isTrue());
        assertThat(bank.calls).hasValue(1);
    }

    @Test
    void localWritesBeforeTheCallThatCommitTheirTransactionAreRefusedAndNothingIsSentOrCommitted() {
        ExternalEffect<Long, String> charges = effect(false);
        for (String how : List.of("Connection.commit()", "a COMMIT statement", "setAutoCommit(true)")) {
            IdempotencyKey key = Db.freshKey();
            bank.inBefore = tx -> {
                try {
                    switch (how) {
                        case "Connection.commit()" -> tx.connection(java.sql.Connection::commit);
                        case "a COMMIT statement" -> tx.execute("commit");
                        default -> tx.connection(c -> c.setAutoCommit(true));
                    }
                } catch (org.jooq.exception.DataAccessException refusedAtOnce) {
                    // a before() that swallows the refusal is refused all the same
                }
            };
            assertThatThrownBy(() -> charges.run(scope, key, fingerprint, 10L))
                    .as(how)
                    .isInstanceOfSatisfying(
                            WorkEndedTransactionException.class,
                            e -> assertThat(e.committedByWork()).isFalse());
            assertThat(count("effect_hold", key))
                    .as(how + ": the hold went with the claim")
                    .isZero();
            assertThat(Db.claims(scope, key))
                    .as(how + ": no claim in flight for a request never sent")
                    .isZero();
        }
        bank.inBefore = null;
        assertThat(bank.calls).as("the bank was never called").hasValue(0);
    }

    @Test
    void aRejectionOfTheLocalWritesNeverCallsTheBank() {
        ExternalEffect<Long, String> charges = effect(false);
        IdempotencyKey key = Db.freshKey();
        assertThat(charges.run(scope, key, fingerprint, -5L))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class,
                        r -> assertThat(r.failure().code()).isEqualTo("invalid-amount"));
        assertThat(bank.calls).hasValue(0);
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.run(scope, key, fingerprint, -5L)).isInstanceOf(Outcome.Rejected.class);
    }

    @Test
    void aTimeoutAfterTheBankAppliedIsUnknownAndTheRetryFindsItWithoutChargingAgain() {
        ExternalEffect<Long, String> charges = effect(false);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        assertThat(charges.run(scope, key, fingerprint, 700L)).isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(count("effect_hold", key))
                .as("the hold stays while the outcome is unknown")
                .isEqualTo(1);
        bank.fault = Fault.NONE;
        assertThat(charges.run(scope, key, fingerprint, 700L)).isInstanceOf(Outcome.Executed.class);
        assertThat(bank.calls).as("looked up, not sent again").hasValue(1);
        assertThat(applications()).isEqualTo(1);
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(count("effect_hold", key)).isZero();
    }

    @Test
    void aFiveHundredBeforeApplyingIsResentOnAbsentOnlyWhereTheBankPromisesReadAfterWrite() {
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.ERROR_BEFORE_APPLY;
        assertThat(effect(false).run(scope, key, fingerprint, 300L)).isInstanceOf(RemoteOutcome.Unknown.class);
        bank.fault = Fault.NONE;
        assertThat(effect(false).run(scope, key, fingerprint, 300L))
                .as("absent is unknown without read-after-write")
                .isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(bank.charges).isEmpty();
        assertThat(effect(true).run(scope, key, fingerprint, 300L)).isInstanceOf(Outcome.Executed.class);
        assertThat(applications()).isEqualTo(1);
        assertThat(count("effect_posting", key)).isEqualTo(1);
    }

    @Test
    void aProcessThatDiesAfterTheClaimBlocksDuplicatesUntilItsLeasePassesThenTheRetryLooksUpAndSends()
            throws Exception {
        ExternalEffect<Long, String> charges = effect(true);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.DIE_BEFORE_CALL;
        assertThatThrownBy(() -> charges.run(scope, key, fingerprint, 40L)).isInstanceOf(FakeBank.Death.class);
        bank.fault = Fault.NONE;
        assertThat(charges.run(scope, key, fingerprint, 40L))
                .as("its lease is live")
                .isInstanceOf(Outcome.InProgress.class);
        pastTheLease();
        assertThat(charges.run(scope, key, fingerprint, 40L)).isInstanceOf(Outcome.Executed.class);
        assertThat(bank.lookups.get()).isEqualTo(1);
        assertThat(applications()).isEqualTo(1);
        assertThat(count("effect_posting", key)).isEqualTo(1);
    }

    @Test
    void aProcessThatDiesAfterTheBankAppliedOrWhileRecordingLeavesAClaimThatIsFoundNotChargedTwice() throws Exception {
        for (Fault f : List.of(Fault.DIE_AFTER_APPLY, Fault.DIE_IN_RECORD)) {
            ExternalEffect<Long, String> charges = effect(true);
            IdempotencyKey key = Db.freshKey();
            bank.fault = f;
            assertThatThrownBy(() -> charges.run(scope, key, fingerprint, 55L))
                    .as(f.name())
                    .isInstanceOf(FakeBank.Death.class);
            bank.fault = Fault.NONE;
            assertThat(count("effect_posting", key)).as(f.name()).isZero();
            pastTheLease();
            assertThat(charges.recovery().recover(100).count(Ending.FOUND))
                    .as(f.name())
                    .isEqualTo(1);
            assertThat(charges.run(scope, key, fingerprint, 55L)).as(f.name()).isInstanceOf(Outcome.Replayed.class);
            assertThat(count("effect_posting", key)).as(f.name()).isEqualTo(1);
            assertThat(count("effect_hold", key)).as(f.name()).isZero();
        }
        assertThat(applications()).isEqualTo(1);
        assertThat(bank.charges).hasSize(2);
    }

    @Test
    void aLaggingLookupShowsWhyAbsentNeedsReadAfterWriteAndTheRecovererFindsItOnceTheIndexCatchesUp() throws Exception {
        ExternalEffect<Long, String> charges = effect(false);
        IdempotencyKey key = Db.freshKey();
        bank.lookupLagMillis = 200;
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        assertThat(charges.run(scope, key, fingerprint, 90L)).isInstanceOf(RemoteOutcome.Unknown.class);
        bank.fault = Fault.NONE;
        // the lookup lags: absent although applied; without read-after-write it is not sent again
        assertThat(charges.run(scope, key, fingerprint, 90L)).isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(bank.calls).hasValue(1);
        Thread.sleep(250);
        assertThat(charges.recovery().recover(100).count(Ending.FOUND)).isEqualTo(1);
        assertThat(charges.run(scope, key, fingerprint, 90L)).isInstanceOf(Outcome.Replayed.class);
        assertThat(applications()).isEqualTo(1);
        assertThat(count("effect_posting", key)).isEqualTo(1);
    }

    @Test
    void lookupsThatNeverAnswerEndInReconciliationWhichAnOperatorResolves() throws Exception {
        ExternalEffect<Long, String> charges = effect(true);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        bank.lookupUnknownRate = 1.0;
        assertThat(charges.run(scope, key, fingerprint, 65L)).isInstanceOf(RemoteOutcome.Unknown.class);
        bank.fault = Fault.NONE;
        // the recoverer: the first lookup at once, then after 20, 40 and 80 ms; the fourth unanswered hands it over
        int reconciled = 0;
        for (int pass = 0; pass < 40 && reconciled == 0; pass++) {
            reconciled = charges.recovery().recover(100).count(Ending.RECONCILIATION);
            Thread.sleep(25);
        }
        assertThat(reconciled).isEqualTo(1);
        assertThat(bank.lookups.get()).isEqualTo(SCHEDULE.size() + 1);
        assertThat(bank.calls).hasValue(1);
        assertThat(charges.run(scope, key, fingerprint, 65L)).isInstanceOf(RemoteOutcome.NeedsReconciliation.class);
        assertThat(charges.recovery().inFlight(10)).isEmpty();
        List<EffectRecovery.Unsettled<Long>> list = charges.recovery().needingReconciliation(10);
        assertThat(list).singleElement().satisfies(u -> {
            assertThat(u.key()).isEqualTo(key);
            assertThat(u.request()).isEqualTo(65L);
            assertThat(u.lookups()).isEqualTo(SCHEDULE.size() + 1);
            assertThat(u.since()).isNotNull();
        });
        // the operator checks the bank's statement and records what it says
        String charge = bank.charges.values().iterator().next().id();
        assertThat(admin(charges)
                        .resolveApplied(charges, scope, key, charge, NOTE)
                        .state())
                .isEqualTo(ClaimView.State.COMPLETED);
        assertThatThrownBy(() -> admin(charges).resolveApplied(charges, scope, key, charge, NOTE))
                .as("only once")
                .isInstanceOf(ClaimAdminException.class);
        assertThat(charges.run(scope, key, fingerprint, 65L))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(charge));
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.recovery().needingReconciliation(10)).isEmpty();
        assertThat(storedRequestBytes(key))
                .as("cleared, as the holder's own record clears it")
                .isZero();
    }

    private int storedRequestBytes(IdempotencyKey key) {
        return Db.DSL_CONTEXT
                .resultQuery(
                        "select coalesce(length(request), 0)::int from " + Db.SCHEMA
                                + ".idempotency_claim where scope = ? and idem_key = ?",
                        scope.value(),
                        key.value())
                .fetchOne(0, Integer.class);
    }

    @Test
    void aHolderThatLostItsLeaseCannotRecordAndLearnsTheNewHoldersAnswer() throws Exception {
        ExternalEffect<Long, String> charges = effect(true);
        IdempotencyKey key = Db.freshKey();
        CountDownLatch gate = new CountDownLatch(1);
        bank.gate = gate;
        ExecutorService slow = Executors.newSingleThreadExecutor();
        try {
            Future<RemoteOutcome<String>> late = slow.submit(() -> charges.run(scope, key, fingerprint, 120L));
            pastTheLease();
            bank.gate = null; // the new holder's calls go through
            RemoteOutcome<String> newHolder = charges.run(scope, key, fingerprint, 120L);
            assertThat(newHolder).isInstanceOf(Outcome.Executed.class);
            gate.countDown(); // the old holder's call now reaches the bank, which deduplicates it
            RemoteOutcome<String> old = late.get(10, TimeUnit.SECONDS);
            assertThat(old)
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class,
                            r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<String>) newHolder).value()));
        } finally {
            slow.shutdownNow();
        }
        assertThat(applications()).isEqualTo(1);
        assertThat(count("effect_posting", key)).isEqualTo(1);
    }

    @Test
    void manyRetriesRacingThroughATakeoverLetExactlyOneLookUpAndChargeOnce() throws Exception {
        ExternalEffect<Long, String> charges = effect(true);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.DIE_BEFORE_CALL;
        assertThatThrownBy(() -> charges.run(scope, key, fingerprint, 77L)).isInstanceOf(FakeBank.Death.class);
        bank.fault = Fault.NONE;
        pastTheLease();
        List<io.github.idemtx.db.testing.Concurrently.Result<RemoteOutcome<String>>> results =
                io.github.idemtx.db.testing.Concurrently.times(12, () -> charges.run(scope, key, fingerprint, 77L));
        assertThat(results)
                .extracting(io.github.idemtx.db.testing.Concurrently.Result::error)
                .containsOnlyNulls();
        List<RemoteOutcome<String>> outcomes = results.stream()
                .map(io.github.idemtx.db.testing.Concurrently.Result::value)
                .toList();
        assertThat(outcomes)
                .filteredOn(o -> o instanceof Outcome.Executed)
                .as("one takeover settles it")
                .hasSize(1);
        assertThat(outcomes)
                .allSatisfy(o -> assertThat(o)
                        .isInstanceOfAny(Outcome.Executed.class, Outcome.Replayed.class, Outcome.InProgress.class));
        assertThat(bank.lookups.get()).as("only the winner looked it up").isEqualTo(1);
        assertThat(applications()).isEqualTo(1);
        assertThat(count("effect_posting", key)).isEqualTo(1);
    }

    @Test
    void theScheduledRecovererSettlesAnUnknownOutcomeWithoutAnyRetry() throws Exception {
        ExternalEffect<Long, String> charges = effect(false);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        assertThat(charges.run(scope, key, fingerprint, 88L)).isInstanceOf(RemoteOutcome.Unknown.class);
        bank.fault = Fault.NONE;
        java.util.concurrent.LinkedBlockingQueue<EffectRecovery.Pass> passes =
                new java.util.concurrent.LinkedBlockingQueue<>();
        try (AutoCloseable recovering = charges.recovery().schedule(Duration.ofMillis(20), 10, passes::add)) {
            EffectRecovery.Pass pass = passes.poll(10, TimeUnit.SECONDS);
            assertThat(pass).isNotNull();
            assertThat(pass.count(Ending.FOUND)).isEqualTo(1);
        }
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(charges.run(scope, key, fingerprint, 88L)).isInstanceOf(Outcome.Replayed.class);
        assertThatThrownBy(() -> charges.recovery().schedule(Duration.ZERO, 10, null))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private long postedAmount(IdempotencyKey key) {
        return Db.DSL_CONTEXT
                .resultQuery(
                        "select coalesce(sum(amount), -1)::bigint from " + Db.SCHEMA
                                + ".effect_posting where scope = ? and idem_key = ?",
                        scope.value(),
                        key.value())
                .fetchOne(0, Long.class);
    }

    @Test
    void anOperatorsResolutionRunsTheLocalWritesWithTheClaimsOwnRequest() throws Exception {
        ExternalEffect<Long, String> charges = effect(true);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        bank.lookupUnknownRate = 1.0;
        charges.run(scope, key, fingerprint, 4321L);
        for (int pass = 0;
                pass < 40 && charges.recovery().needingReconciliation(10).isEmpty();
                pass++) {
            charges.recovery().recover(10);
            Thread.sleep(25);
        }
        assertThat(admin(charges)
                        .resolveApplied(charges, scope, key, "ch_by_hand", NOTE)
                        .state())
                .isEqualTo(ClaimView.State.COMPLETED);
        assertThat(postedAmount(key)).as("the posting has the request's amount").isEqualTo(4321L);
    }

    @Test
    void whenTheLocalWritesAfterTheChargeFailTheAnswerIsKeptAndRecordedOnceTheyWork() throws Exception {
        ExternalEffect<Long, String> charges = effect(true);
        IdempotencyKey key = Db.freshKey();
        bank.afterThrows = true;
        RemoteOutcome<String> first = charges.run(scope, key, fingerprint, 61L);
        assertThat(first)
                .as("not an exception: the bank charged, the ledger could not post yet")
                .isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(count("effect_hold", key)).isEqualTo(1);
        bank.afterThrows = false;
        Thread.sleep(SCHEDULE.get(0).toMillis() + 10);
        assertThat(charges.recovery().recover(10).count(Ending.FOUND)).isEqualTo(1);
        assertThat(postedAmount(key)).isEqualTo(61L);
        assertThat(applications()).isEqualTo(1);
        assertThat(bank.calls).as("found by lookup, not sent again").hasValue(1);
    }

    @Test
    void aResultThatCanNeverBeStoredGoesToAnOperatorInsteadOfBeingLookedUpForever() {
        ExternalEffect<Long, String> charges = ExternalEffect.builder(
                        Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(LEASE)
                .lookupSchedule(SCHEDULE)
                .policy(IdempotencyPolicy.builder().maxResultBytes(8).build())
                .build(); // the request fits (8 bytes), no charge id does
        IdempotencyKey key = Db.freshKey();
        assertThat(charges.run(scope, key, fingerprint, 12L)).isInstanceOf(RemoteOutcome.NeedsReconciliation.class);
        assertThat(charges.recovery().needingReconciliation(10))
                .extracting(EffectRecovery.Unsettled::key)
                .contains(key);
        assertThat(charges.recovery().recover(10).total())
                .as("never taken over again")
                .isZero();
    }

    @Test
    void aKeyUsedAgainAfterItsClaimExpiredIsANewChargeNotTheOldOneReplayedByTheBank() {
        ExternalEffect<Long, String> charges = effect(false);
        IdempotencyKey key = Db.freshKey();
        String first = ((Outcome.Executed<String>) charges.run(scope, key, fingerprint, 70L)).value();
        Db.expire(scope, key);
        Db.DSL_CONTEXT.execute(
                "delete from " + Db.SCHEMA + ".effect_posting where scope = ? and idem_key = ?",
                scope.value(),
                key.value());
        RemoteOutcome<String> second = charges.run(scope, key, fingerprint, 70L);
        assertThat(second).isInstanceOf(Outcome.Executed.class);
        assertThat(((Outcome.Executed<String>) second).value()).isNotEqualTo(first);
        assertThat(bank.charges).hasSize(2);
    }

    @Test
    void aKeyOfAnotherEffectOrOfATransactionIsNotThisEffectsAnswer() {
        IdempotencyKey key = Db.freshKey();
        assertThat(effect(false).run(scope, key, fingerprint, 5L)).isInstanceOf(Outcome.Executed.class);
        ExternalEffect<Long, String> refunds = ExternalEffect.builder(
                        Db.dsl(), "refund", FakeBank.LONGS, ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(LEASE)
                .build();
        assertThat(refunds.run(scope, key, fingerprint, 5L)).isInstanceOf(Outcome.FingerprintMismatch.class);
        IdempotencyKey txKey = Db.freshKey();
        Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build().run(scope, txKey, fingerprint, tx -> "tx");
        assertThat(effect(false).run(scope, txKey, fingerprint, 5L)).isInstanceOf(Outcome.FingerprintMismatch.class);
    }

    @Test
    void insideACallersTransactionItIsRefusedBeforeAnything() {
        IdempotencyKey key = Db.freshKey();
        assertThatThrownBy(() -> Db.dsl()
                        .transaction(cfg -> ExternalEffect.builder(
                                        cfg.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                                .schema(Db.SCHEMA)
                                .build()
                                .run(scope, key, fingerprint, 10L)))
                .isInstanceOf(TransactionOwnershipException.class)
                .hasMessageContaining("external effect");
        assertThat(bank.calls).hasValue(0);
        assertThat(count("effect_hold", key)).isZero();
    }

    @Test
    void badInputIsRefusedBeforeAnySql() {
        assertThatThrownBy(
                        () -> ExternalEffect.builder(Db.dsl(), "Charge Card", FakeBank.LONGS, ResultCodec.utf8(), bank))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name");
        assertThatThrownBy(() -> ExternalEffect.builder(Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                        .lease(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lease");
        assertThatThrownBy(() -> ExternalEffect.builder(Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                        .lookupSchedule(List.of(Duration.ofSeconds(-1))))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> effect(false).run(scope, Db.freshKey(), fingerprint, null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("request");
        assertThatThrownBy(() -> effect(false).recovery().recover(0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(Db.claims(scope)).isZero();
    }

    @Test
    @SuppressWarnings("removal") // the deprecated bridge is what this tests
    void theDeprecatedRecoveryMethodsDelegateToTheEffectsRecovery() throws Exception {
        ExternalEffect<Long, String> charges = effect(Db.dsl(), "charge-bridge", true, List.of());
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.ERROR_BEFORE_APPLY;
        bank.lookupUnknownRate = 1.0;
        assertThat(charges.run(scope, key, fingerprint, 31L)).isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(charges.inFlight(10))
                .isEqualTo(charges.recovery().inFlight(10))
                .hasSize(1);
        pastTheLease();
        ExternalEffect.Recovery pass = charges.recover(10, () -> false);
        assertThat(pass.counts()).isEqualTo(java.util.Map.of("reconciliation", 1));
        assertThat(pass.count("reconciliation")).isEqualTo(pass.total()).isEqualTo(1);
        assertThat(charges.recover(10).total()).as("never taken over again").isZero();
        assertThat(charges.needingReconciliation(10))
                .isEqualTo(charges.recovery().needingReconciliation(10))
                .extracting(EffectRecovery.Unsettled::key)
                .containsExactly(key);
        assertThatThrownBy(() -> charges.scheduleRecovery(Duration.ZERO, 10, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("every");
        assertThat(ExternalEffect.SHORTEST_RECOVERY_INTERVAL).isEqualTo(EffectRecovery.SHORTEST_INTERVAL);
        assertThat(ExternalEffect.LONGEST_RECOVERY_INTERVAL).isEqualTo(EffectRecovery.LONGEST_INTERVAL);
    }

    @Test
    void aResolvedRefusalReleasesTheHoldAndIsReplayedAsRejected() throws Exception {
        ExternalEffect<Long, String> charges = ExternalEffect.builder(
                        Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(LEASE)
                .lookupSchedule(List.of())
                .build();
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.ERROR_BEFORE_APPLY;
        bank.lookupUnknownRate = 1.0;
        assertThat(charges.run(scope, key, fingerprint, 30L)).isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(charges.recovery().recover(10).count(Ending.RECONCILIATION)).isEqualTo(1);
        assertThat(admin(charges)
                        .resolveRefused(scope, key, new Failure("not-charged", "the statement shows no charge"), NOTE)
                        .state())
                .isEqualTo(ClaimView.State.FAILED);
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.run(scope, key, fingerprint, 30L))
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class,
                        r -> assertThat(r.failure().code()).isEqualTo("not-charged"));
        assertThat(storedRequestBytes(key)).isZero();
    }

    @Test
    void settingsOutsideTheirLimitsAreRefusedAtOnceNamingTheSettingAndTheLimit() {
        ExternalEffect<Long, String> charges = effect(false);
        assertThatThrownBy(() -> charges.recovery().schedule(Duration.ofNanos(500_000), 10, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("every")
                .hasMessageContaining("1 ms");
        assertThatThrownBy(() -> charges.recovery().schedule(Duration.ofSeconds(Long.MAX_VALUE), 10, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("every")
                .hasMessageContaining("1 day");
        assertThatThrownBy(() -> ExternalEffect.builder(Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                        .lookupSchedule(List.of(Duration.ofDays(400_000_000))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lookup schedule")
                .hasMessageContaining("30 days");
        assertThatThrownBy(() -> ExternalEffect.builder(Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                        .lookupSchedule(java.util.Arrays.asList(Duration.ofSeconds(1), null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lookup schedule")
                .hasMessageContaining("null");
        assertThat(ExternalEffect.builder(Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                        .lookupSchedule(List.of(Duration.ofMillis(1), ExternalEffect.LONGEST_LOOKUP_PAUSE))
                        .build())
                .isNotNull();
    }

    /**
     * Without local writes before the call, the in-flight claim's INSERT carries its COMMIT (one
     * round trip less); with them (the hold), the COMMIT follows the writes. Either way the claim is
     * committed before the bank is called, a duplicate meanwhile finds it in flight, and the retry
     * replays.
     */
    @Test
    void theClaimCarriesItsCommitWhenNothingIsWrittenBeforeTheCall() throws Exception {
        java.util.List<String> claims = new java.util.concurrent.CopyOnWriteArrayList<>();
        SqlHook seen = new SqlHook() {
            @Override
            public void before(Sql sql) {
                if (io.github.idemtx.jooq.internal.store.StatementKind.of(sql.sql())
                        == io.github.idemtx.jooq.internal.store.StatementKind.EFFECT_CLAIM) {
                    claims.add(sql.sql());
                }
            }
        };
        DSLContext dsl = SqlHook.around(Db.dsl(), seen);
        ExternalEffect<Long, String> bare = ExternalEffect.builder(
                        dsl, "charge", FakeBank.LONGS, ResultCodec.utf8(), bank.withoutHolds())
                .schema(Db.SCHEMA)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(100))
                        .build())
                .lease(LEASE)
                .lookupSchedule(SCHEDULE)
                .build();
        ExternalEffect<Long, String> holding = ExternalEffect.builder(
                        dsl, "charge", FakeBank.LONGS, ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(LEASE)
                .lookupSchedule(SCHEDULE)
                .build();

        IdempotencyKey key = Db.freshKey();
        bank.gate = new CountDownLatch(1);
        ExecutorService first = Executors.newSingleThreadExecutor();
        try {
            Future<RemoteOutcome<String>> charge = first.submit(() -> bare.run(scope, key, fingerprint, 700L));
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (count("idempotency_claim", key) == 0 && System.nanoTime() < until) {
                Thread.sleep(5); // the claim is committed while the bank has not answered yet
            }
            assertThat(count("idempotency_claim", key))
                    .as("committed before the call")
                    .isEqualTo(1);
            assertThat(bare.run(scope, key, fingerprint, 700L))
                    .as("a duplicate meanwhile")
                    .isInstanceOf(Outcome.InProgress.class);
            bank.gate.countDown();
            assertThat(charge.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
        } finally {
            bank.gate.countDown();
            first.shutdownNow();
        }
        assertThat(bare.run(scope, key, fingerprint, 700L)).isInstanceOf(Outcome.Replayed.class);
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(bank.calls).hasValue(1);
        assertThat(claims).isNotEmpty().allSatisfy(sql -> assertThat(sql).endsWith("; commit"));

        claims.clear();
        IdempotencyKey held = Db.freshKey();
        assertThat(holding.run(scope, held, fingerprint, 300L)).isInstanceOf(Outcome.Executed.class);
        assertThat(claims).hasSize(1).allSatisfy(sql -> assertThat(sql).doesNotContain("commit"));
        assertThat(count("effect_hold", held)).isZero();
        assertThat(count("effect_posting", held)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ phase 1 with local writes before the call

    /**
     * The holder's before() runs longer than the lease. Whenever the holder touches its lease (the
     * hook below runs before each of its lease statements), a recoverer tries to take the claim
     * over: it must find nothing to take, so the holder sends, rather than the recoverer finding a
     * passed lease at the COMMIT, looking up a request nobody sent and handing it to an operator.
     */
    @Test
    void aBeforeThatOutlastsTheLeaseLeavesTheHolderItsWholeLeaseSoItSendsAndNobodyTakesItOver() {
        ExternalEffect<Long, String> recoverer = effect(Db.dsl(), "charge-slow-before", false, List.of());
        List<EffectRecovery.Pass> passes = new CopyOnWriteArrayList<>();
        SqlHook recoverBeforeEachLeaseStatement = new SqlHook() {
            @Override
            public void before(Sql sql) {
                if (StatementKind.of(sql.sql()) == StatementKind.EFFECT_TAKEOVER) {
                    passes.add(recoverer.recovery().recover(10));
                }
            }
        };
        ExternalEffect<Long, String> holder = effect(
                SqlHook.around(Db.dsl(), recoverBeforeEachLeaseStatement), "charge-slow-before", false, List.of());
        bank.inBefore = tx -> sleep(LEASE.toMillis() + 100);
        IdempotencyKey key = Db.freshKey();

        RemoteOutcome<String> outcome = holder.run(scope, key, fingerprint, 410L);

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(bank.calls).as("the holder sent it").hasValue(1);
        assertThat(passes)
                .allSatisfy(p -> assertThat(p.total())
                        .as("nothing to take over: " + p.counts())
                        .isZero());
        assertThat(recoverer.recovery().needingReconciliation(10)).isEmpty();
        assertThat(holder.run(scope, key, fingerprint, 410L)).isInstanceOf(Outcome.Replayed.class);
    }

    /**
     * The holder's claim is not committed while its before() runs, so a duplicate's INSERT waits on
     * the row; that wait ends at the duplicate's duplicateWait (the holder is still held in before()
     * when the duplicate answers), and the holder's own before() runs with lock_timeout as it was.
     */
    @Test
    void aDuplicateWaitsNoLongerThanDuplicateWaitWhileTheHolderIsStillInBefore() throws Exception {
        CountDownLatch inBefore = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        List<String> lockTimeoutsInBefore = new CopyOnWriteArrayList<>();
        bank.inBefore = tx -> {
            lockTimeoutsInBefore.add(Db.lockTimeout(tx));
            inBefore.countDown();
            try {
                letGo.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        ExternalEffect<Long, String> charges = ExternalEffect.builder(
                        Db.dsl(), "charge-bounded-wait", FakeBank.LONGS, ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(LEASE)
                .policy(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(50))
                        .build())
                .build();
        IdempotencyKey key = Db.freshKey();
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<RemoteOutcome<String>> holder = threads.submit(() -> charges.run(scope, key, fingerprint, 20L));
            assertThat(inBefore.await(10, TimeUnit.SECONDS)).isTrue();
            Future<RemoteOutcome<String>> duplicate = threads.submit(() -> charges.run(scope, key, fingerprint, 20L));
            // the holder stays in before() until letGo: an unbounded wait would not answer here
            assertThat(duplicate.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.InProgress.class);
            assertThat(letGo.getCount())
                    .as("answered while the holder is still in before()")
                    .isEqualTo(1);
            letGo.countDown();
            assertThat(holder.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
        } finally {
            letGo.countDown();
            threads.shutdownNow();
        }
        assertThat(lockTimeoutsInBefore)
                .as("before() waits as the session was set")
                .containsExactly("0");
        assertThat(charges.run(scope, key, fingerprint, 20L)).isInstanceOf(Outcome.Replayed.class);
        assertThat(bank.calls).hasValue(1);
    }

    // ------------------------------------------------------------------ recovery that never gets stuck or goes silent

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - until).as("waiting for " + what).isNegative();
            Thread.sleep(10);
        }
    }

    /**
     * A remote that is down: every call fails (5xx, nothing applied) and every lookup answers
     * absent, so with read-after-write the recoverer resends each time. More claims are due than
     * the batch limit, so the scheduled recoverer catches up in passes one after another: each
     * resend must count as an attempt, so each claim is tried once per step of the schedule and then
     * handed to an operator, and closing the recoverer returns.
     */
    @Test
    void resendsThatKeepFailingAreCountedAndReachReconciliationOnScheduleWithoutSpinning() throws Exception {
        ExternalEffect<Long, String> charges = effect(Db.dsl(), "charge-outage", true, SCHEDULE);
        bank.fault = Fault.ERROR_BEFORE_APPLY;
        int claims = 12;
        for (int i = 0; i < claims; i++) {
            assertThat(charges.run(scope, Db.freshKey(), fingerprint, 100L + i))
                    .isInstanceOf(RemoteOutcome.Unknown.class);
        }
        AutoCloseable recovering = charges.recovery().schedule(Duration.ofMillis(10), 5, pass -> {});
        try {
            await(
                    "every claim handed to an operator",
                    () -> charges.recovery().needingReconciliation(100).size() == claims);
        } finally {
            CompletableFuture<Void> closing = CompletableFuture.runAsync(() -> {
                try {
                    recovering.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            closing.get(20, TimeUnit.SECONDS); // a spinning pass kept close() waiting its full minute
        }
        int attempts = SCHEDULE.size() + 1; // the first lookup at once, then one after each pause
        assertThat(charges.recovery().needingReconciliation(100))
                .allSatisfy(u -> assertThat(u.lookups()).isEqualTo(attempts));
        assertThat(bank.lookups).as("one lookup per attempt").hasValue(claims * attempts);
        assertThat(bank.calls).as("the first call and one resend per attempt").hasValue(claims * (1 + attempts));
        assertThat(charges.recovery().inFlight(100)).isEmpty();
    }

    /**
     * The request's stored form no longer decodes (its class changed in a deploy). The lookup needs
     * only the downstream key, so a claim the remote applied is still found and recorded; the list of
     * claims in flight shows the row instead of failing for all; one whose lookups never answer
     * reaches reconciliation and an operator resolves it; the other claims are not held up.
     */
    @Test
    void aStoredRequestThatNoLongerDecodesIsStillLookedUpListedAndResolvableWithoutBlockingTheOthers()
            throws Exception {
        ExternalEffect<Long, String> charges = effect(Db.dsl(), "charge-old-request", false, SCHEDULE);
        IdempotencyKey applied = Db.freshKey();
        IdempotencyKey silent = Db.freshKey();
        IdempotencyKey fine = Db.freshKey();
        bank.silentKeys.add(silent.value());
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        for (IdempotencyKey key : List.of(applied, silent, fine)) {
            assertThat(charges.run(scope, key, fingerprint, 33L)).isInstanceOf(RemoteOutcome.Unknown.class);
        }
        bank.fault = Fault.NONE;
        for (IdempotencyKey key : List.of(applied, silent)) {
            Db.DSL_CONTEXT.execute(
                    "update " + Db.SCHEMA + ".idempotency_claim set request = '\\x0102'::bytea"
                            + " where scope = ? and idem_key = ?",
                    scope.value(),
                    key.value()); // 2 bytes: no long decodes from them
        }

        List<EffectRecovery.Unsettled<Long>> inFlight = charges.recovery().inFlight(10);
        assertThat(inFlight).hasSize(3);
        assertThat(inFlight).filteredOn(u -> !u.key().equals(fine)).allSatisfy(u -> {
            assertThat(u.request()).isNull();
            assertThat(u.undecodable()).contains("no longer decodes");
        });
        assertThat(inFlight)
                .filteredOn(u -> u.key().equals(fine))
                .singleElement()
                .satisfies(u -> {
                    assertThat(u.request()).isEqualTo(33L);
                    assertThat(u.undecodable()).isNull();
                });

        EffectRecovery.Pass first = charges.recovery().recover(10);
        assertThat(first.count(Ending.FOUND))
                .as("the applied one and the fine one: " + first.counts())
                .isEqualTo(2);
        assertThat(first.count(Ending.FAILED)).isZero();
        assertThat(charges.run(scope, applied, fingerprint, 33L)).isInstanceOf(Outcome.Replayed.class);
        assertThat(count("effect_posting", applied)).isEqualTo(1);
        assertThat(count("effect_hold", applied)).isZero();

        await("the silent one handed to an operator", () -> {
            charges.recovery().recover(10);
            return !charges.recovery().needingReconciliation(10).isEmpty();
        });
        assertThat(charges.recovery().needingReconciliation(10)).singleElement().satisfies(u -> {
            assertThat(u.key()).isEqualTo(silent);
            assertThat(u.request()).isNull();
            assertThat(u.undecodable()).contains("no longer decodes");
        });
        assertThat(admin(charges)
                        .resolveRefused(
                                scope, silent, new Failure("not-charged", "the statement shows no charge"), NOTE)
                        .state())
                .isEqualTo(ClaimView.State.FAILED);
        assertThat(count("effect_hold", silent)).isZero();
        assertThat(charges.run(scope, silent, fingerprint, 33L)).isInstanceOf(Outcome.Rejected.class);
        assertThat(charges.recovery().inFlight(10)).isEmpty();
        assertThat(bank.calls).as("nothing sent again").hasValue(3);
    }

    /**
     * Starts a charge on {@code thread} whose call waits at the bank's gate, and returns once its
     * claim is committed and its lease has passed; from then on the key's lookups go unanswered.
     */
    private Future<RemoteOutcome<String>> heldInItsCallPastItsLease(
            ExecutorService thread, ExternalEffect<Long, String> charges, IdempotencyKey key, long amount)
            throws InterruptedException {
        Future<RemoteOutcome<String>> late = thread.submit(() -> charges.run(scope, key, fingerprint, amount));
        await("the claim committed", () -> count("idempotency_claim", key) == 1);
        Thread.sleep(LEASE.toMillis() + 50);
        bank.silentKeys.add(key.value());
        return late;
    }

    /**
     * {@link #heldInItsCallPastItsLease}, then the recoverer hands the claim to reconciliation (its
     * lookups unanswered) and an operator settles it as refused, while the holder still waits at the
     * bank's gate.
     */
    private Future<RemoteOutcome<String>> refusedByAnOperatorWhileHeldInItsCall(
            ExecutorService thread, ExternalEffect<Long, String> charges, IdempotencyKey key, long amount)
            throws InterruptedException {
        Future<RemoteOutcome<String>> late = heldInItsCallPastItsLease(thread, charges, key, amount);
        assertThat(charges.recovery().recover(10).count(Ending.RECONCILIATION)).isEqualTo(1);
        assertThat(admin(charges)
                        .resolveRefused(scope, key, new Failure("not-charged", "the statement shows none yet"), NOTE)
                        .state())
                .isEqualTo(ClaimView.State.FAILED);
        return late;
    }

    /**
     * A holder whose call the bank applied only after its lease had passed and a retry had taken the
     * claim over (its lookup went unanswered, so the claim is still unsettled): the late holder's
     * definite answer is recorded, with its posting, rather than thrown away.
     */
    @Test
    void aLateHoldersDefiniteAnswerIsRecordedWhileTheClaimIsStillUnsettled() throws Exception {
        ExternalEffect<Long, String> charges = effect(Db.dsl(), "charge-late", false, SCHEDULE);
        IdempotencyKey key = Db.freshKey();
        CountDownLatch gate = new CountDownLatch(1);
        bank.gate = gate;
        ExecutorService slow = Executors.newSingleThreadExecutor();
        try {
            Future<RemoteOutcome<String>> late = heldInItsCallPastItsLease(slow, charges, key, 140L);
            assertThat(charges.run(scope, key, fingerprint, 140L))
                    .as("the retry's lookup went unanswered")
                    .isInstanceOf(RemoteOutcome.Unknown.class);
            gate.countDown(); // the late holder's call now applies
            RemoteOutcome<String> answer = late.get(10, TimeUnit.SECONDS);
            assertThat(answer).isInstanceOf(Outcome.Executed.class);
            String charge = ((Outcome.Executed<String>) answer).value();
            assertThat(bank.charges.values()).extracting(FakeBank.Charge::id).containsExactly(charge);
            assertThat(charges.run(scope, key, fingerprint, 140L))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(charge));
        } finally {
            gate.countDown();
            slow.shutdownNow();
        }
        assertThat(count("effect_posting", key)).isEqualTo(1);
        assertThat(count("effect_hold", key)).isZero();
        assertThat(charges.recovery().inFlight(10)).isEmpty();
    }

    /**
     * The same late answer after an operator had already settled the claim the other way: it cannot
     * be recorded, so it is logged as an error naming scope, key and downstream key for the operator.
     */
    @Test
    void aLateDefiniteAnswerThatContradictsTheSettledClaimIsLoggedForTheOperator() throws Exception {
        ExternalEffect<Long, String> charges = effect(Db.dsl(), "charge-late-settled", false, List.of());
        IdempotencyKey key = Db.freshKey();
        List<LogRecord> logged = new CopyOnWriteArrayList<>();
        Logger jul = Logger.getLogger("io.github.idemtx");
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                logged.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(handler);
        CountDownLatch gate = new CountDownLatch(1);
        bank.gate = gate;
        ExecutorService slow = Executors.newSingleThreadExecutor();
        try {
            Future<RemoteOutcome<String>> late = refusedByAnOperatorWhileHeldInItsCall(slow, charges, key, 150L);
            gate.countDown();
            assertThat(late.get(10, TimeUnit.SECONDS)).as("the claim's answer").isInstanceOf(Outcome.Rejected.class);
        } finally {
            gate.countDown();
            slow.shutdownNow();
            jul.removeHandler(handler);
        }
        String downstreamKey = bank.charges.values().iterator().next().downstreamKey();
        List<String> errors = new ArrayList<>();
        for (LogRecord r : logged) {
            if (r.getLevel() == java.util.logging.Level.SEVERE) {
                errors.add(r.getMessage());
            }
        }
        assertThat(errors)
                .singleElement()
                .asString()
                .contains(scope.value(), key.value(), downstreamKey, "applied", "refusal");
    }

    /**
     * The same late holder when reading the settled claim fails too (its connection is killed): the
     * caller gets Unknown, as when its own record fails, never an exception after the remote's
     * definite answer; a retry then reads the claim's answer.
     */
    @Test
    void aLateHolderThatCannotReadTheSettledClaimAnswersUnknownAndARetryGetsTheAnswer() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean failReads = new java.util.concurrent.atomic.AtomicBoolean();
        DSLContext dsl = SqlHook.around(Db.dsl(), new SqlHook() {
            @Override
            public void before(Sql sql) throws java.sql.SQLException {
                if (failReads.get()
                        && io.github.idemtx.jooq.internal.store.StatementKind.of(sql.sql())
                                == io.github.idemtx.jooq.internal.store.StatementKind.EFFECT_READ) {
                    throw new java.sql.SQLException("terminating connection due to administrator command", "57P01");
                }
            }
        });
        ExternalEffect<Long, String> charges = effect(dsl, "charge-late-unread", false, List.of());
        IdempotencyKey key = Db.freshKey();
        CountDownLatch gate = new CountDownLatch(1);
        bank.gate = gate;
        ExecutorService slow = Executors.newSingleThreadExecutor();
        try {
            Future<RemoteOutcome<String>> late = refusedByAnOperatorWhileHeldInItsCall(slow, charges, key, 160L);
            failReads.set(true);
            gate.countDown();
            assertThat(late.get(10, TimeUnit.SECONDS))
                    .as("the late holder's answer")
                    .isInstanceOfSatisfying(
                            RemoteOutcome.Unknown.class,
                            u -> assertThat(u.reason()).contains("reading it failed"));
        } finally {
            gate.countDown();
            slow.shutdownNow();
        }
        failReads.set(false);
        assertThat(charges.run(scope, key, fingerprint, 160L))
                .as("the retry reads the claim's answer")
                .isInstanceOf(Outcome.Rejected.class);
    }

    /**
     * A lookup that never answers (a socket without a timeout) is given four fifths of the lease and
     * counted unknown: the recoverer's pass ends and the claim keeps its schedule, rather than the
     * pass, and every claim behind it, hanging for good.
     */
    @Test
    void aLookupThatHangsIsCountedUnknownWithinTheLease() throws Exception {
        ExternalEffect<Long, String> charges = effect(Db.dsl(), "charge-hung-lookup", false, SCHEDULE);
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        assertThat(charges.run(scope, key, fingerprint, 45L)).isInstanceOf(RemoteOutcome.Unknown.class);
        bank.fault = Fault.NONE;
        pastTheLease();
        CountDownLatch hang = new CountDownLatch(1);
        bank.lookupGate = hang;
        ExecutorService pass = Executors.newSingleThreadExecutor();
        try {
            Future<EffectRecovery.Pass> recovery =
                    pass.submit(() -> charges.recovery().recover(10));
            assertThat(recovery.get(20, TimeUnit.SECONDS).count(Ending.UNKNOWN))
                    .as("the hung lookup counted, the pass over")
                    .isEqualTo(1);
            assertThat(charges.recovery().inFlight(10)).singleElement().satisfies(u -> {
                assertThat(u.lookups()).isEqualTo(1);
                assertThat(u.nextLookupAt()).isNotNull();
            });
        } finally {
            hang.countDown();
            bank.lookupGate = null;
            pass.shutdownNow();
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
