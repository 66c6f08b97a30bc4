package io.github.idemtx.jooq.effect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.ClaimView;
import io.github.idemtx.jooq.EffectRecovery;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.StatementReconciliation;
import io.github.idemtx.jooq.StatementReconciliation.Line;
import io.github.idemtx.jooq.StatementReconciliation.Statement;
import io.github.idemtx.jooq.StatementReconciliation.Verdict;
import io.github.idemtx.jooq.StatementSettlement;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.FakeBank;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

/**
 * An effect settled by statement, against a bank that takes no key and answers no lookup: every
 * state change (marked sent, settled by a line, confirmed, absent and sent again, absent to an
 * operator, mismatch, duplicate, unmatched), the kills between send and record, and bad input.
 */
@DatabaseTest
class StatementSettlementTest {

    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("10.00 EUR");
    private final UnkeyedBank bank = new UnkeyedBank();
    private final String name = "pay-" + UUID.randomUUID().toString().substring(0, 8);

    /** Where a send goes wrong. */
    enum Fault {
        NONE,
        /** The bank pays; the answer is lost. */
        TIMEOUT_AFTER_APPLY,
        /** The caller dies after the claim is marked sent, before the request leaves. */
        DIE_BEFORE_SEND,
        /** The caller dies after the bank paid, before anything is recorded. */
        DIE_AFTER_APPLY
    }

    /** A payment as the bank keeps it: every send is one, whatever its reference. */
    record Payment(String entryId, String reference, BigDecimal amount, Instant bookedAt) {}

    /** A bank with neither idempotency key nor lookup; local writes record each settled payout. */
    final class UnkeyedBank implements Remote<String, String> {
        final List<Payment> payments = new CopyOnWriteArrayList<>();
        final AtomicInteger lookups = new AtomicInteger();
        final AtomicInteger afters = new AtomicInteger();
        volatile Fault fault = Fault.NONE;
        volatile boolean declines;
        volatile boolean afterThrows;

        @Override
        public Reply<String> call(Intent<String> intent, Instant deadline) throws Exception {
            Fault now = fault;
            if (now == Fault.DIE_BEFORE_SEND) {
                throw new FakeBank.Death("before the send");
            }
            if (declines) {
                return Reply.refused(new Failure("declined", "the bank declined"));
            }
            String id = "E" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
            payments.add(new Payment(id, intent.downstreamKey(), amountOf(intent.request()), Instant.now()));
            return switch (now) {
                case TIMEOUT_AFTER_APPLY -> throw new java.net.http.HttpTimeoutException("the answer was lost");
                case DIE_AFTER_APPLY -> throw new FakeBank.Death("after the bank paid");
                default -> Reply.applied(id);
            };
        }

        @Override
        public Lookup<String> lookup(Intent<String> intent) {
            lookups.incrementAndGet();
            throw new AssertionError("an effect settled by statement is never looked up");
        }

        @Override
        public void after(DSLContext tx, Intent<String> intent, String entryId) {
            Db.writeEffect(tx, intent.scope(), intent.key(), entryId);
            if (afterThrows) {
                throw new IllegalStateException("the local writes failed");
            }
            afters.incrementAndGet();
        }

        /** The statement of every payment booked in [from, to). */
        Statement statement(String id, Instant from, Instant to) {
            List<Line> lines = new ArrayList<>();
            for (Payment p : payments) {
                if (!p.bookedAt().isBefore(from) && p.bookedAt().isBefore(to)) {
                    lines.add(new Line(
                            p.entryId(),
                            p.reference(),
                            p.amount(),
                            "EUR",
                            LocalDate.ofInstant(p.bookedAt(), ZoneOffset.UTC)));
                }
            }
            return new Statement(id, from, to, lines);
        }
    }

    private static BigDecimal amountOf(String request) {
        return new BigDecimal(request.split(" ")[0]);
    }

    private ExternalEffect<String, String> effect(StatementSettlement<String, String> settlement) {
        return ExternalEffect.builder(Db.dsl(), name, ResultCodec.utf8(), ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(Duration.ofMillis(200))
                .settledByStatement(settlement)
                .build();
    }

    private ExternalEffect<String, String> effect() {
        return effect(settlement(Duration.ofSeconds(1)));
    }

    private static StatementSettlement<String, String> settlement(Duration lag) {
        return StatementSettlement.of(
                lag, (String r) -> new StatementSettlement.Amount(amountOf(r), r.split(" ")[1]), Line::entryId);
    }

    /** A statement of everything booked from an hour ago to {@code to}, or to the database's clock if that is earlier. */
    private Statement statementUntil(Instant to) {
        Instant now = dbNow();
        return bank.statement(
                "S-" + UUID.randomUUID(), Instant.now().minus(Duration.ofHours(1)), to.isAfter(now) ? now : to);
    }

    /** The database's clock: a statement's period must have ended by it. */
    private static Instant dbNow() {
        return Db.dsl()
                .resultQuery("SELECT clock_timestamp()")
                .fetchSingle()
                .get(0, java.time.OffsetDateTime.class)
                .toInstant();
    }

    @Test
    void aDefiniteReplyIsRecordedAndTheStatementConfirmsItThenFlagsASecondLineAsADoublePayment() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey key = Db.freshKey();

        RemoteOutcome<String> first = pay.run(scope, key, fingerprint, "10.00 EUR");

        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(bank.payments).hasSize(1);
        StatementReconciliation.Report report = pay.statements().apply(statementUntil(Instant.now()));
        assertThat(report.count("CONFIRMED")).isEqualTo(1);
        assertThat(report.periodRecorded()).isTrue();
        assertThat(pay.statements().flagged(Verdict.DUPLICATE, 10)).isEmpty();

        // the bank paid the same reference twice (a bank's own fault, or an old send booked late)
        Payment p = bank.payments.get(0);
        bank.payments.add(new Payment("E-dup-" + name, p.reference(), p.amount(), Instant.now()));
        StatementReconciliation.Report second =
                pay.statements().apply(statementUntil(Instant.now().plusMillis(1)));

        assertThat(second.count("DUPLICATE")).isEqualTo(1);
        assertThat(second.count("SEEN")).as("the first line, recorded before").isEqualTo(1);
        List<StatementReconciliation.Entry> doubles = pay.statements().flagged(Verdict.DUPLICATE, 10);
        assertThat(doubles).singleElement().satisfies(e -> {
            assertThat(e.reference()).isEqualTo(p.reference());
            assertThat(e.key()).isEqualTo(key.value());
            assertThat(e.detail()).contains("double payment");
        });
        assertThat(pay.statements().work("E-dup-" + name, "ana", "recalled from the bank"))
                .isTrue();
        assertThat(pay.statements().work("E-dup-" + name, "ana", "again"))
                .as("handled once")
                .isFalse();
        assertThat(pay.statements().flagged(Verdict.DUPLICATE, 10)).isEmpty();
        assertThat(pay.statements().lines(p.reference()))
                .extracting(StatementReconciliation.Entry::verdict)
                .containsExactly(Verdict.MATCHED, Verdict.DUPLICATE);
        assertThat(bank.afters).as("the local writes ran once, with the reply").hasValue(1);
    }

    @Test
    void aSendWhoseAnswerIsLostIsSettledByItsStatementLineNeverSentAgainMeanwhile() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;

        RemoteOutcome<String> first = pay.run(scope, key, fingerprint, "10.00 EUR");

        assertThat(first)
                .isInstanceOfSatisfying(
                        RemoteOutcome.Unknown.class, u -> assertThat(u.reason()).contains("statement"));
        assertThat(state(key)).as("sent").isEqualTo("5");
        bank.fault = Fault.NONE;
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR"))
                .as("a retry is told to wait for the statement, nothing sent")
                .isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(pay.recovery().recover(10).total())
                .as("the recoverer never takes a sent claim")
                .isZero();
        assertThat(bank.payments).hasSize(1);
        assertThat(pay.statements().awaiting(10)).singleElement().satisfies(a -> {
            assertThat(a.key()).isEqualTo(key);
            assertThat(a.sends()).isEqualTo(1);
            assertThat(a.request()).isEqualTo("10.00 EUR");
        });
        assertThat(ClaimAdmin.builder(Db.dsl()).schema(Db.SCHEMA).build().inspect(scope, key))
                .hasValueSatisfying(v -> assertThat(v.state()).isEqualTo(ClaimView.State.SENT));

        StatementReconciliation.Report report = pay.statements().apply(statementUntil(Instant.now()));

        assertThat(report.count("SETTLED")).isEqualTo(1);
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat(r.value())
                                .isEqualTo(bank.payments.get(0).entryId()));
        assertThat(Db.effects(scope, key))
                .as("the local writes, with the settlement")
                .isEqualTo(1);
        assertThat(pay.statements().awaiting(10)).isEmpty();
        assertThat(bank.lookups).hasValue(0);
    }

    @Test
    void aProcessKilledAfterTheBankPaidLeavesTheClaimSentAndTheStatementSettlesIt() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.DIE_AFTER_APPLY;

        assertThatThrownBy(() -> pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(FakeBank.Death.class);

        bank.fault = Fault.NONE;
        assertThat(state(key)).isEqualTo("5");
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(pay.statements().apply(statementUntil(Instant.now())).count("SETTLED"))
                .isEqualTo(1);
        assertThat(bank.payments).as("paid once").hasSize(1);
        assertThat(state(key)).isEqualTo("1");
    }

    @Test
    void aSendThatNeverLeftIsAbsentFromAStatementCoveringItsLagAndIsSentAgainWithTheSameReference()
            throws InterruptedException {
        ExternalEffect<String, String> pay = effect(settlement(Duration.ofMillis(50)));
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.DIE_BEFORE_SEND;
        assertThatThrownBy(() -> pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(FakeBank.Death.class);
        bank.fault = Fault.NONE;

        StatementReconciliation.Report early = pay.statements()
                .apply(bank.statement(
                        "S-early-" + name,
                        Instant.now().minusSeconds(3600),
                        Instant.now().minusSeconds(1800)));
        assertThat(early.sentAgain())
                .as("a statement that does not cover the send decides nothing")
                .isZero();
        assertThat(state(key)).isEqualTo("5");

        Thread.sleep(400); // the window (the lease, 200 ms, longer than the lag) passes with margin
        StatementReconciliation.Report report = pay.statements().apply(statementUntil(Instant.now()));

        assertThat(report.sentAgain()).isEqualTo(1);
        assertThat(state(key)).as("in flight again, due at once").isEqualTo("3");
        EffectRecovery.Pass pass = pay.recovery().recover(10);
        assertThat(pass.count(EffectRecovery.Ending.RESENT)).isEqualTo(1);
        assertThat(bank.payments)
                .singleElement()
                .satisfies(p -> assertThat(p.reference())
                        .isEqualTo(StatementSettlement.reference(name, scope, key, createdAt(key))));
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(Outcome.Replayed.class);
        assertThat(sends(key)).isEqualTo(2);
    }

    @Test
    void aSendBookedLaterThanTheLagIsSentAgainAndTheStatementRevealsTheDoublePayment() throws InterruptedException {
        ExternalEffect<String, String> pay = effect(settlement(Duration.ofMillis(50)));
        IdempotencyKey lost = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        pay.run(scope, lost, fingerprint, "10.00 EUR");
        bank.fault = Fault.NONE;
        // the bank has it, but books it only after the first statement's period: later than the window
        Instant late = Instant.now().plusMillis(1000);
        bank.payments.replaceAll(p -> new Payment(p.entryId(), p.reference(), p.amount(), late));
        Thread.sleep(400);
        Statement first = statementUntil(Instant.now());

        assertThat(pay.statements().apply(first).sentAgain()).isEqualTo(1);
        assertThat(pay.recovery().recover(10).count(EffectRecovery.Ending.RESENT))
                .isEqualTo(1);
        assertThat(bank.payments).as("the bank has it twice now").hasSize(2);
        Thread.sleep(1000); // until the late booking is in the past

        StatementReconciliation.Report later =
                pay.statements().apply(bank.statement("S-later-" + name, first.to(), dbNow()));

        assertThat(later.count("CONFIRMED")).isEqualTo(1);
        assertThat(later.count("DUPLICATE")).isEqualTo(1);
        assertThat(pay.statements().flagged(Verdict.DUPLICATE, 10))
                .singleElement()
                .satisfies(e -> assertThat(e.key()).isEqualTo(lost.value()));
        assertThat(bank.afters).as("the local writes ran once").hasValue(1);
    }

    @Test
    void absentWithNoSendsLeftOrThePolicyOperatorGoesToAnOperatorAndIsNeverSentAgain() throws InterruptedException {
        ExternalEffect<String, String> pay =
                effect(settlement(Duration.ofMillis(20)).whenAbsent(StatementSettlement.WhenAbsent.OPERATOR));
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.DIE_BEFORE_SEND;
        assertThatThrownBy(() -> pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(FakeBank.Death.class);
        bank.fault = Fault.NONE;
        Thread.sleep(400);

        StatementReconciliation.Report report = pay.statements().apply(statementUntil(Instant.now()));

        assertThat(report.toOperator()).isEqualTo(1);
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(RemoteOutcome.NeedsReconciliation.class);
        assertThat(pay.recovery().recover(10).total()).isZero();
        assertThat(bank.payments).isEmpty();
    }

    @Test
    void aLineWithAnotherAmountIsAMismatchAndItsClaimGoesToAnOperator() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        pay.run(scope, key, fingerprint, "10.00 EUR");
        bank.fault = Fault.NONE;
        Payment p = bank.payments.remove(0);
        bank.payments.add(new Payment(p.entryId(), p.reference(), new BigDecimal("100.00"), p.bookedAt()));

        StatementReconciliation.Report report = pay.statements().apply(statementUntil(Instant.now()));

        assertThat(report.count("MISMATCH")).isEqualTo(1);
        assertThat(state(key)).isEqualTo("4");
        assertThat(pay.statements().flagged(Verdict.MISMATCH, 10))
                .singleElement()
                .satisfies(e -> assertThat(e.detail()).contains("10.00 EUR").contains("100.00 EUR"));
        assertThat(Db.effects(scope, key)).isZero();
    }

    @Test
    void aLineNoClaimSentIsUnmatchedAndAStatementAppliedTwiceCountsNothingTwice() {
        ExternalEffect<String, String> pay = effect();
        String nobodys = StatementSettlement.reference(name, scope, Db.freshKey(), Instant.now());
        Statement statement = new Statement(
                "S-unmatched-" + name,
                Instant.now().minusSeconds(60),
                Instant.now(),
                List.of(new Line("E-stranger-" + name, nobodys, new BigDecimal("5"), "eur", LocalDate.now())));

        assertThat(pay.statements().apply(statement).count("UNMATCHED")).isEqualTo(1);
        StatementReconciliation.Report again = pay.statements().apply(statement);

        assertThat(again.count("SEEN")).isEqualTo(1);
        assertThat(again.count("UNMATCHED")).isZero();
        assertThat(pay.statements().flagged(Verdict.UNMATCHED, 10)).hasSize(1);
    }

    @Test
    void aRefusalRecordedByTheReplyThatTheStatementShowsPaidIsAMismatch() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey key = Db.freshKey();
        bank.declines = true;
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(Outcome.Rejected.class);
        String reference = StatementSettlement.reference(name, scope, key, createdAt(key));
        bank.payments.add(new Payment("E-refused-" + name, reference, new BigDecimal("10.00"), Instant.now()));

        assertThat(pay.statements()
                        .apply(statementUntil(Instant.now().plusMillis(1)))
                        .count("MISMATCH"))
                .isEqualTo(1);
        assertThat(pay.statements().flagged(Verdict.MISMATCH, 10))
                .singleElement()
                .satisfies(e -> assertThat(e.detail()).contains("failed"));
    }

    @Test
    void badInputIsRefusedWithItsReasonAndNothingIsWritten() {
        ExternalEffect<String, String> pay = effect();
        Instant now = Instant.now();
        assertThatThrownBy(() -> new Statement("S", now, now, List.of()))
                .hasMessageContaining("period must end after it starts");
        Line line = new Line("E1", "r", BigDecimal.ONE, "EUR", LocalDate.now());
        assertThatThrownBy(() -> new Statement("S", now.minusSeconds(1), now, List.of(line, line)))
                .hasMessageContaining("entry E1 twice");
        assertThatThrownBy(() -> new Line("E1", "r", BigDecimal.ONE, "EURO", LocalDate.now()))
                .hasMessageContaining("three letters");
        assertThatThrownBy(() -> new Line("E1", "r", BigDecimal.ZERO, "EUR", LocalDate.now()))
                .hasMessageContaining("positive");
        assertThatThrownBy(() -> new Line(" ", "r", BigDecimal.ONE, "EUR", LocalDate.now()))
                .hasMessageContaining("entryId");
        assertThatThrownBy(() -> pay.statements().flagged(Verdict.MATCHED, 10)).hasMessageContaining("flag nothing");
        assertThatThrownBy(() -> pay.statements().awaiting(0)).hasMessageContaining("limit");
        assertThatThrownBy(() -> settlement(Duration.ofSeconds(-1))).hasMessageContaining("lag");
        assertThatThrownBy(() -> settlement(Duration.ZERO).maxSends(0)).hasMessageContaining("maxSends");
        assertThatThrownBy(() -> ExternalEffect.builder(Db.dsl(), name, ResultCodec.utf8(), ResultCodec.utf8(), bank)
                        .readAfterWrite(true)
                        .settledByStatement(settlement(Duration.ZERO))
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("readAfterWrite");
        assertThatThrownBy(() -> ExternalEffect.builder(Db.dsl(), name, ResultCodec.utf8(), ResultCodec.utf8(), bank)
                        .build()
                        .statements())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("not settled by statement");
        assertThat(pay.statements().lines("r")).isEmpty();
    }

    @Test
    void localWritesThatFailLeaveTheLineUnrecordedAndThePeriodUncountedUntilTheStatementIsAppliedAgain()
            throws InterruptedException {
        ExternalEffect<String, String> pay = effect(settlement(Duration.ofMillis(20)));
        IdempotencyKey paid = Db.freshKey();
        IdempotencyKey neverSent = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        pay.run(scope, paid, fingerprint, "10.00 EUR");
        bank.fault = Fault.DIE_BEFORE_SEND;
        assertThatThrownBy(() -> pay.run(scope, neverSent, fingerprint, "10.00 EUR"))
                .isInstanceOf(FakeBank.Death.class);
        bank.fault = Fault.NONE;
        bank.afterThrows = true;
        Thread.sleep(400);
        Statement statement = statementUntil(Instant.now());

        StatementReconciliation.Report failed = pay.statements().apply(statement);

        assertThat(failed.count("FAILED")).isEqualTo(1);
        assertThat(failed.problems()).singleElement().asString().contains("the local writes failed");
        assertThat(failed.periodRecorded()).isFalse();
        assertThat(failed.sentAgain())
                .as("no period counts yet: nothing is absent")
                .isZero();
        assertThat(state(paid)).as("rolled back with its local writes").isEqualTo("5");
        assertThat(pay.statements().lines(bank.payments.get(0).reference())).isEmpty();

        bank.afterThrows = false;
        StatementReconciliation.Report again = pay.statements().apply(statement);

        assertThat(again.count("SETTLED")).isEqualTo(1);
        assertThat(again.periodRecorded()).isTrue();
        assertThat(again.sentAgain()).isEqualTo(1);
        assertThat(state(paid)).isEqualTo("1");
        assertThat(Db.effects(scope, paid)).isEqualTo(1);
    }

    @Test
    void aConnectionLostWhileALineIsAppliedLeavesItForTheNextApplicationAndNothingHalfWritten() {
        java.util.concurrent.atomic.AtomicBoolean cut = new java.util.concurrent.atomic.AtomicBoolean(true);
        DSLContext dsl =
                io.github.idemtx.jooq.support.SqlHook.around(Db.dsl(), new io.github.idemtx.jooq.support.SqlHook() {
                    @Override
                    public void before(Sql sql) throws java.sql.SQLException {
                        // the settlement of the claim: after the line's lock, before its insert
                        if (sql.sql().contains("update")
                                && io.github.idemtx.jooq.internal.store.StatementKind.of(sql.sql())
                                        == io.github.idemtx.jooq.internal.store.StatementKind.STATEMENT_APPLY
                                && cut.getAndSet(false)) {
                            throw new java.sql.SQLException(
                                    "terminating connection due to administrator command", "57P01");
                        }
                    }
                });
        ExternalEffect<String, String> pay = ExternalEffect.builder(
                        dsl, name, ResultCodec.utf8(), ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .settledByStatement(settlement(Duration.ofSeconds(1)))
                .build();
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        pay.run(scope, key, fingerprint, "10.00 EUR");
        bank.fault = Fault.NONE;
        Statement statement = statementUntil(Instant.now());

        StatementReconciliation.Report lost = pay.statements().apply(statement);

        assertThat(lost.count("FAILED")).isEqualTo(1);
        assertThat(lost.periodRecorded()).isFalse();
        assertThat(state(key)).isEqualTo("5");
        assertThat(pay.statements().lines(bank.payments.get(0).reference())).isEmpty();
        assertThat(Db.effects(scope, key)).isZero();

        StatementReconciliation.Report again = pay.statements().apply(statement);

        assertThat(again.count("SETTLED")).isEqualTo(1);
        assertThat(again.periodRecorded()).isTrue();
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void reconcilersApplyingOverlappingStatementsAtOnceSettleEachClaimOnceAndFlagOnlyRealDoublePayments()
            throws Exception {
        ExternalEffect<String, String> pay = effect();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        List<IdempotencyKey> keys = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            IdempotencyKey key = Db.freshKey();
            keys.add(key);
            pay.run(scope, key, fingerprint, "10.00 EUR");
        }
        bank.fault = Fault.NONE;
        Payment twice = bank.payments.get(3);
        bank.payments.add(new Payment("E-twice-" + name, twice.reference(), twice.amount(), Instant.now()));
        Thread.sleep(2);
        Instant to = dbNow();
        List<Statement> statements = List.of(
                bank.statement("S-a-" + name, to.minusSeconds(3600), to),
                bank.statement("S-b-" + name, to.minusSeconds(1800), to),
                bank.statement("S-c-" + name, to.minusSeconds(900), to));
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(3);
        try {
            List<java.util.concurrent.Future<StatementReconciliation.Report>> reports = new ArrayList<>();
            for (Statement s : statements) {
                reports.add(pool.submit(() -> pay.statements().apply(s)));
            }
            int settled = 0;
            int duplicates = 0;
            for (var r : reports) {
                StatementReconciliation.Report report = r.get(30, java.util.concurrent.TimeUnit.SECONDS);
                assertThat(report.problems()).isEmpty();
                settled += report.count("SETTLED");
                duplicates += report.count("DUPLICATE");
            }
            assertThat(settled).isEqualTo(20);
            assertThat(duplicates).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
        for (IdempotencyKey key : keys) {
            assertThat(state(key)).isEqualTo("1");
            assertThat(Db.effects(scope, key)).isEqualTo(1);
        }
        assertThat(bank.afters).hasValue(20);
        assertThat(pay.statements().flagged(Verdict.DUPLICATE, 10))
                .singleElement()
                .satisfies(e -> assertThat(e.reference()).isEqualTo(twice.reference()));
    }

    @Test
    void aSendWhoseMarkFailedWasNeverSentAndARetrySendsItWithoutALookup() {
        java.util.concurrent.atomic.AtomicBoolean failMark = new java.util.concurrent.atomic.AtomicBoolean(true);
        DSLContext dsl =
                io.github.idemtx.jooq.support.SqlHook.around(Db.dsl(), new io.github.idemtx.jooq.support.SqlHook() {
                    @Override
                    public void before(Sql sql) throws java.sql.SQLException {
                        if (io.github.idemtx.jooq.internal.store.StatementKind.of(sql.sql())
                                        == io.github.idemtx.jooq.internal.store.StatementKind.EFFECT_SENT
                                && failMark.getAndSet(false)) {
                            throw new java.sql.SQLException("the mark failed", "57P01");
                        }
                    }
                });
        ExternalEffect<String, String> pay = ExternalEffect.builder(
                        dsl, name, ResultCodec.utf8(), ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .settledByStatement(settlement(Duration.ofSeconds(1)))
                .build();
        IdempotencyKey key = Db.freshKey();

        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR"))
                .isInstanceOfSatisfying(
                        RemoteOutcome.Unknown.class, u -> assertThat(u.reason()).contains("not sent"));
        assertThat(state(key)).as("in flight, its lease ended").isEqualTo("3");
        assertThat(bank.payments).isEmpty();

        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(Outcome.Executed.class);
        assertThat(bank.payments).hasSize(1);
        assertThat(bank.lookups).hasValue(0);
    }

    @Test
    void aPayoutTheReplySaidWasTakenButNoStatementShowsIsListedUnconfirmedUntilItsLineCame()
            throws InterruptedException {
        ExternalEffect<String, String> pay = effect(settlement(Duration.ofMillis(20)));
        IdempotencyKey key = Db.freshKey();
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(Outcome.Executed.class);
        Payment taken = bank.payments.remove(0); // the bank said it took it, and never booked it
        Thread.sleep(400);

        pay.statements().apply(statementUntil(Instant.now()));

        assertThat(pay.statements().unconfirmed(10)).singleElement().satisfies(u -> {
            assertThat(u.key()).isEqualTo(key);
            assertThat(u.reference()).isEqualTo(taken.reference());
            assertThat(u.request()).as("kept: a later line is compared with it").isEqualTo("10.00 EUR");
        });
        bank.payments.add(taken); // booked after all
        pay.statements().apply(bank.statement("S-late-" + name, Instant.now().minusSeconds(60), dbNow()));
        assertThat(pay.statements().unconfirmed(10)).isEmpty();
    }

    @Test
    void theReferenceIsTheEffectsBase32AndALineMatchesItInAnyCaseWithSpacesWhileAnotherEffectsIsNotRecorded() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey key = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        pay.run(scope, key, fingerprint, "10.00 EUR");
        bank.fault = Fault.NONE;
        Payment p = bank.payments.get(0);
        assertThat(p.reference())
                .matches("[A-Z2-7]{32}")
                .isEqualTo(StatementSettlement.reference(name, scope, key, createdAt(key)));
        String mangled = p.reference().toLowerCase(java.util.Locale.ROOT).substring(0, 16) + " "
                + p.reference().substring(16);
        String others = StatementSettlement.reference("another-" + name, scope, key, createdAt(key));
        Statement statement = new Statement(
                "S-case-" + name,
                Instant.now().minusSeconds(60),
                Instant.now(),
                List.of(
                        new Line(p.entryId(), mangled, p.amount(), "EUR", LocalDate.now()),
                        new Line("E-other-" + name, others, BigDecimal.ONE, "EUR", LocalDate.now())));

        StatementReconciliation.Report report = pay.statements().apply(statement);

        assertThat(report.count("SETTLED")).isEqualTo(1);
        assertThat(report.count("OTHER")).isEqualTo(1);
        assertThat(pay.statements().lines(others)).isEmpty();
        assertThat(pay.statements().lines(p.reference()))
                .singleElement()
                .satisfies(e -> assertThat(e.reference()).isEqualTo(p.reference()));
    }

    @Test
    void aStatementThatContradictsWhatWasAppliedIsRefusedWholeBeforeAnythingIsWritten() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey a = Db.freshKey();
        IdempotencyKey b = Db.freshKey();
        bank.fault = Fault.TIMEOUT_AFTER_APPLY;
        pay.run(scope, a, fingerprint, "10.00 EUR");
        pay.run(scope, b, fingerprint, "10.00 EUR");
        bank.fault = Fault.NONE;
        Payment pa = bank.payments.get(0);
        Payment pb = bank.payments.get(1);
        Instant t0 = Instant.now().minusSeconds(60);
        Instant t1 = Instant.now();
        pay.statements()
                .apply(new Statement(
                        "S1-" + name,
                        t0,
                        t1,
                        List.of(new Line("X1-" + name, pa.reference(), pa.amount(), "EUR", LocalDate.now()))));

        // a reused entry id would hide b's payment, and make it absent and paid again
        assertThatThrownBy(() -> pay.statements()
                        .apply(new Statement(
                                "S2-" + name,
                                t0,
                                t1,
                                List.of(new Line("X1-" + name, pb.reference(), pb.amount(), "EUR", LocalDate.now())))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("entry X1-" + name)
                .hasMessageContaining("nothing written");
        assertThatThrownBy(() -> pay.statements().apply(new Statement("S1-" + name, t0, t1.minusSeconds(1), List.of())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("applied before");
        assertThatThrownBy(() -> pay.statements()
                        .apply(new Statement(
                                "S-future-" + name,
                                t0,
                                Instant.now().plus(Duration.ofDays(3)),
                                List.of(new Line("X2-" + name, pb.reference(), pb.amount(), "EUR", LocalDate.now())))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("after the database's clock");
        assertThat(pay.statements().lines(pb.reference())).isEmpty();
        assertThat(state(b)).as("still sent, nothing decided").isEqualTo("5");
    }

    @Test
    void aLineWhoseAmountDiffersFromAPayoutTheReplySettledIsAMismatch() {
        ExternalEffect<String, String> pay = effect();
        IdempotencyKey key = Db.freshKey();
        assertThat(pay.run(scope, key, fingerprint, "10.00 EUR")).isInstanceOf(Outcome.Executed.class);
        Payment p = bank.payments.get(0);

        StatementReconciliation.Report report = pay.statements()
                .apply(new Statement(
                        "S-other-amount-" + name,
                        Instant.now().minusSeconds(60),
                        Instant.now(),
                        List.of(new Line(
                                p.entryId(), p.reference(), new BigDecimal("99.99"), "USD", LocalDate.now()))));

        assertThat(report.count("MISMATCH")).isEqualTo(1);
        assertThat(state(key)).as("the reply's answer stands").isEqualTo("1");
        assertThat(pay.statements().flagged(Verdict.MISMATCH, 10))
                .singleElement()
                .satisfies(e -> assertThat(e.detail()).contains("10.00 EUR").contains("99.99 USD"));
    }

    @Test
    void valuesTheDatabaseCannotHoldAreRefusedByName() {
        Instant now = Instant.now();
        assertThatThrownBy(() -> new Statement("S", now, Instant.MAX, List.of()))
                .hasMessageContaining("period");
        assertThatThrownBy(() -> new Line("E1", "r", BigDecimal.ONE, "EUR", LocalDate.MAX))
                .hasMessageContaining("bookingDate");
        assertThatThrownBy(() -> new Line("E\u00001", "r", BigDecimal.ONE, "EUR", LocalDate.now()))
                .hasMessageContaining("entryId")
                .hasMessageContaining("control");
        assertThatThrownBy(() -> new Line("E1", "r", new BigDecimal("1E-20000"), "EUR", LocalDate.now()))
                .hasMessageContaining("18 after");
        assertThatThrownBy(() -> new Line("E1", "r", null, "EUR", LocalDate.now()))
                .hasMessageContaining("amount");
        java.util.List<Line> withNull = new ArrayList<>();
        withNull.add(null);
        assertThatThrownBy(() -> new Statement("S", now.minusSeconds(1), now, withNull))
                .hasMessageContaining("lines must not contain null");
        assertThatThrownBy(() -> settlement(Duration.ofDays(365L * 400_000))).hasMessageContaining("lag");
    }

    /** One column of the key's claim row, read outside any test transaction. */
    private <V> V claim(IdempotencyKey key, String column, Class<V> type) {
        return Db.dsl()
                .resultQuery(
                        "SELECT " + column + " FROM " + Db.SCHEMA
                                + ".idempotency_claim WHERE scope = ? AND idem_key = ?",
                        scope.value(),
                        key.value())
                .fetchSingle()
                .get(0, type);
    }

    private String state(IdempotencyKey key) {
        return claim(key, "state::text", String.class);
    }

    private Instant createdAt(IdempotencyKey key) {
        return claim(key, "created_at", java.time.OffsetDateTime.class).toInstant();
    }

    private int sends(IdempotencyKey key) {
        return claim(key, "sends", Integer.class);
    }
}
