package io.github.idemtx.jooq.internal.flow.effect;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.Remote.Intent;
import io.github.idemtx.jooq.Remote.Lookup;
import io.github.idemtx.jooq.Remote.Reply;
import io.github.idemtx.jooq.internal.flow.effect.Lifecycle.AfterLookup;
import io.github.idemtx.jooq.internal.flow.effect.Lifecycle.AtTheRow;
import io.github.idemtx.jooq.internal.store.ClaimRow;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.EffectTransition.Answer;
import io.github.idemtx.jooq.internal.store.EffectTransition.Commit;
import io.github.idemtx.jooq.internal.store.EffectTransition.FencedClaim;
import io.github.idemtx.jooq.internal.store.EffectTransition.ReleaseToOperator;
import io.github.idemtx.jooq.internal.store.EffectTransition.ReleaseUnknown;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

/** The effect's lifecycle decisions, without PostgreSQL. */
class LifecycleTest {

    private static final long MS = 1_000_000L;
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request");
    private static final Instant CLAIMED_AT = Instant.parse("2026-01-02T03:04:05.123456Z");
    private static final Scope SCOPE = Scope.of("tenant");
    private static final IdempotencyKey KEY = IdempotencyKey.of("key-1");
    private static final Intent<String> INTENT = new Intent<>(SCOPE, KEY, "charge-abc", "request", 7);
    private static final FencedClaim FENCED = new FencedClaim(SCOPE, KEY, 7, CLAIMED_AT);
    private static final List<Duration> SCHEDULE =
            List.of(Duration.ofMinutes(1), Duration.ofMinutes(2), Duration.ofMinutes(4));

    private static ClaimRow row(ClaimState state, Fingerprint fingerprint, String effect, boolean leaseExpired) {
        return new ClaimRow(state, fingerprint.bytes(), null, null, CLAIMED_AT, effect, 3, leaseExpired, null, 0);
    }

    @Test
    void aRowOfAnotherRequestOrAnotherEffectIsAMismatch() {
        Fingerprint other = Fingerprint.sha256("other");
        assertThat(Lifecycle.atTheRow(row(ClaimState.IN_FLIGHT, other, "charge", true), FINGERPRINT, "charge"))
                .isEqualTo(AtTheRow.MISMATCH);
        assertThat(Lifecycle.atTheRow(row(ClaimState.SUCCEEDED, FINGERPRINT, "refund", false), FINGERPRINT, "charge"))
                .isEqualTo(AtTheRow.MISMATCH);
        // a row IdempotentTransaction wrote has no effect
        ClaimRow transaction = ClaimRow.answer(ClaimState.SUCCEEDED, FINGERPRINT.bytes(), null, CLAIMED_AT);
        assertThat(Lifecycle.atTheRow(transaction, FINGERPRINT, "charge")).isEqualTo(AtTheRow.MISMATCH);
    }

    @Test
    void aSettledOrReconciliationRowAnswersWhateverItsLease() {
        for (ClaimState state : List.of(ClaimState.SUCCEEDED, ClaimState.FAILED, ClaimState.NEEDS_RECONCILIATION)) {
            assertThat(Lifecycle.atTheRow(row(state, FINGERPRINT, "charge", true), FINGERPRINT, "charge"))
                    .as("%s", state)
                    .isEqualTo(AtTheRow.ANSWER);
            assertThat(Lifecycle.atTheRow(row(state, FINGERPRINT, "charge", false), FINGERPRINT, "charge"))
                    .isEqualTo(AtTheRow.ANSWER);
        }
    }

    @Test
    void anInFlightRowIsTakenOverOnlyOnceItsLeasePassed() {
        assertThat(Lifecycle.atTheRow(row(ClaimState.IN_FLIGHT, FINGERPRINT, "charge", true), FINGERPRINT, "charge"))
                .isEqualTo(AtTheRow.TAKE_OVER);
        assertThat(Lifecycle.atTheRow(row(ClaimState.IN_FLIGHT, FINGERPRINT, "charge", false), FINGERPRINT, "charge"))
                .isEqualTo(AtTheRow.WAIT);
    }

    @Test
    void aDefiniteLookupIsRecordedWhateverTheRemotePromises() {
        for (Absent absent : Absent.values()) {
            assertThat(Lifecycle.afterLookup(Lookup.found("r"), absent, null)).isEqualTo(AfterLookup.RECORD_APPLIED);
            assertThat(Lifecycle.afterLookup(Lookup.found("r"), absent, "undecodable"))
                    .isEqualTo(AfterLookup.RECORD_APPLIED);
            assertThat(Lifecycle.afterLookup(Lookup.refused(Failure.of("no", "refused")), absent, "undecodable"))
                    .isEqualTo(AfterLookup.RECORD_REFUSED);
            assertThat(Lifecycle.afterLookup(Lookup.unknown("down"), absent, null))
                    .isEqualTo(AfterLookup.RELEASE_UNKNOWN);
        }
    }

    @Test
    void absentIsUnknownUnlessTheRemoteReadsItsOwnWrites() {
        assertThat(Lifecycle.afterLookup(Lookup.absent(), Absent.UNKNOWN, null)).isEqualTo(AfterLookup.RELEASE_UNKNOWN);
        assertThat(Lifecycle.afterLookup(Lookup.absent(), Absent.UNKNOWN, "undecodable"))
                .as("without read-after-write absent says nothing, even for a request nobody can send")
                .isEqualTo(AfterLookup.RELEASE_UNKNOWN);
        assertThat(Lifecycle.afterLookup(Lookup.absent(), Absent.NOT_APPLIED, null))
                .isEqualTo(AfterLookup.SEND_AGAIN);
        assertThat(Lifecycle.afterLookup(Lookup.absent(), Absent.NOT_APPLIED, "undecodable"))
                .as("absent, and nothing can send it again: an operator")
                .isEqualTo(AfterLookup.TO_OPERATOR);
    }

    @Test
    void theCallGetsFourFifthsOfTheLeaseFromItsStart() {
        Duration lease = Duration.ofSeconds(10);
        assertThat(Lifecycle.callBudget(1_000 * MS, 1_000 * MS, lease)).isEqualTo(8_000 * MS);
        assertThat(Lifecycle.callBudget(1_000 * MS, 4_000 * MS, lease)).isEqualTo(5_000 * MS);
        assertThat(Lifecycle.callBudget(0, 9_000 * MS, lease)).isEqualTo(-1_000 * MS);
    }

    @Test
    void theLeaseIsRenewedFirstWhenLessThanHalfOfItIsLeftForTheCall() {
        Duration lease = Duration.ofSeconds(10);
        assertThat(Lifecycle.renewFirst(5_000 * MS, lease)).isFalse();
        assertThat(Lifecycle.renewFirst(5_000 * MS - 1, lease)).isTrue();
        assertThat(Lifecycle.renewFirst(8_000 * MS, lease)).isFalse();
        assertThat(Lifecycle.renewFirst(-1, lease)).isTrue();
    }

    @Test
    void afterARenewalTheCallGetsFourFifthsOfWhatTheDatabaseSaysIsLeftNeverMoreThanALease() {
        Duration lease = Duration.ofSeconds(10);
        assertThat(Lifecycle.budgetAfterRenewal(10_000, 100 * MS, 100 * MS, lease))
                .isEqualTo(8_000 * MS);
        assertThat(Lifecycle.budgetAfterRenewal(9_000, 100 * MS, 600 * MS, lease))
                .isEqualTo(6_700 * MS);
        assertThat(Lifecycle.budgetAfterRenewal(60_000, 0, 0, lease))
                .as("a database clock ahead of ours never gives more than the lease")
                .isEqualTo(8_000 * MS);
        assertThat(Lifecycle.budgetAfterRenewal(Integer.MAX_VALUE * 4L, 0, 0, lease))
                .as("ms converted without overflow")
                .isEqualTo(8_000 * MS);
    }

    @Test
    void aRetrysUnknownAttemptEndsTheLeaseAndCountsNothing() {
        HeldClaim<String> retry = HeldClaim.takenOver(INTENT, CLAIMED_AT, 0, 3);
        assertThat(Lifecycle.releaseUnknown(retry, SCHEDULE)).isEqualTo(new ReleaseUnknown(FENCED, null));
        assertThat(Lifecycle.releaseUnknown(HeldClaim.claimed(INTENT, CLAIMED_AT, 0), SCHEDULE))
                .isEqualTo(new ReleaseUnknown(FENCED, null));
    }

    @Test
    void theRecoverersUnknownAttemptSchedulesTheNextLookupThenHandsToAnOperator() {
        assertThat(Lifecycle.releaseUnknown(recovering(0), SCHEDULE))
                .isEqualTo(new ReleaseUnknown(FENCED, Duration.ofMinutes(1)));
        assertThat(Lifecycle.releaseUnknown(recovering(1), SCHEDULE))
                .isEqualTo(new ReleaseUnknown(FENCED, Duration.ofMinutes(2)));
        assertThat(Lifecycle.releaseUnknown(recovering(2), SCHEDULE))
                .isEqualTo(new ReleaseUnknown(FENCED, Duration.ofMinutes(4)));
        assertThat(Lifecycle.releaseUnknown(recovering(3), SCHEDULE)).isEqualTo(new ReleaseToOperator(FENCED));
        assertThat(Lifecycle.releaseUnknown(recovering(9), SCHEDULE)).isEqualTo(new ReleaseToOperator(FENCED));
        assertThat(Lifecycle.releaseUnknown(recovering(0), List.of()))
                .as("an empty schedule: the first unanswered attempt goes to an operator")
                .isEqualTo(new ReleaseToOperator(FENCED));
    }

    @Test
    void aFailedRecordCountsWhoeverHeldTheClaim() {
        HeldClaim<String> retry = HeldClaim.takenOver(INTENT, CLAIMED_AT, 0, 1);
        assertThat(Lifecycle.countedRelease(retry, SCHEDULE))
                .isEqualTo(new ReleaseUnknown(FENCED, Duration.ofMinutes(2)));
        assertThat(Lifecycle.countedRelease(HeldClaim.takenOver(INTENT, CLAIMED_AT, 0, 3), SCHEDULE))
                .isEqualTo(new ReleaseToOperator(FENCED));
    }

    @Test
    void aHandedBackClaimEndsItsLeaseWithNothingCounted() {
        assertThat(Lifecycle.handBack(FENCED)).isEqualTo(new ReleaseUnknown(FENCED, null));
    }

    @Test
    void aHeldClaimIsMatchedByKeyFenceAndStart() {
        HeldClaim<String> hold = HeldClaim.recovering(INTENT, CLAIMED_AT, 42, 2, "why");
        assertThat(hold.fenced()).isEqualTo(FENCED);
        assertThat(hold.attempts()).isEqualTo(HeldClaim.Attempts.COUNTED);
        assertThat(hold.lookups()).isEqualTo(2);
        assertThat(hold.leaseStart()).isEqualTo(42);
        assertThat(hold.undecodable()).isEqualTo("why");
        HeldClaim<String> fresh = HeldClaim.claimed(INTENT, CLAIMED_AT, 5);
        assertThat(fresh.lookups()).isZero();
        assertThat(fresh.attempts()).isEqualTo(HeldClaim.Attempts.NOT_COUNTED);
        assertThat(fresh.undecodable()).isNull();
        HeldClaim<String> takenOver = HeldClaim.takenOver(INTENT, CLAIMED_AT, 5, 4);
        assertThat(takenOver.lookups()).isEqualTo(4);
        assertThat(takenOver.undecodable()).isNull();
        assertThat(hold.sent()).isFalse();
        assertThat(fresh.sent()).isFalse();
        assertThat(takenOver.sent()).isFalse();
        assertThat(hold.markedSent())
                .as("marked sent, the rest kept")
                .isEqualTo(new HeldClaim<>(INTENT, CLAIMED_AT, 42, 2, HeldClaim.Attempts.COUNTED, "why", true));
    }

    @Test
    void theLookupGetsFourFifthsOfTheLease() {
        assertThat(Lifecycle.lookupBound(Duration.ofSeconds(10))).isEqualTo(Duration.ofSeconds(8));
        assertThat(Lifecycle.lookupBound(Duration.ofNanos(5))).isEqualTo(Duration.ofNanos(4));
    }

    @Test
    void aDuplicatePollsDoublingFromTenMillisecondsToAQuarterSecond() {
        assertThat(Lifecycle.nextPause(10)).isEqualTo(20);
        assertThat(Lifecycle.nextPause(160)).isEqualTo(250);
        assertThat(Lifecycle.nextPause(125)).isEqualTo(250);
        assertThat(Lifecycle.nextPause(250)).isEqualTo(250);
    }

    @Test
    void aPollNeverSleepsPastTheWaitLeftNorLessThanAMillisecond() {
        assertThat(Lifecycle.sleepMs(40, 1_000 * MS, 900 * MS)).isEqualTo(40);
        assertThat(Lifecycle.sleepMs(40, 1_000 * MS, 990 * MS)).isEqualTo(10);
        assertThat(Lifecycle.sleepMs(40, 1_000 * MS, 1_000 * MS - 1)).isEqualTo(1);
        assertThat(Lifecycle.sleepMs(40, 1_000 * MS, 1_000 * MS)).isEqualTo(1);
        assertThat(Lifecycle.sleepMs(40, 1_000 * MS, 960 * MS)).isEqualTo(40);
        assertThat(Lifecycle.sleepMs(40, 1_000 * MS, 961 * MS)).isEqualTo(39);
    }

    @Test
    void theClaimsLockWaitIsTheWaitLeftRoundedUpToWholeMillisecondsAtLeastOne() {
        assertThat(Lifecycle.claimWait(1_000 * MS, 0)).isEqualTo(Duration.ofMillis(1_000));
        assertThat(Lifecycle.claimWait(1_000 * MS, 1)).isEqualTo(Duration.ofMillis(1_000));
        assertThat(Lifecycle.claimWait(1_000 * MS + 1, 0)).isEqualTo(Duration.ofMillis(1_001));
        assertThat(Lifecycle.claimWait(1_000 * MS, 1_000 * MS)).isEqualTo(Duration.ofMillis(1));
        assertThat(Lifecycle.claimWait(1_000 * MS, 2_000 * MS)).isEqualTo(Duration.ofMillis(1));
        assertThat(Lifecycle.claimWait(3 * MS, MS)).isEqualTo(Duration.ofMillis(2));
    }

    @Test
    void theClaimCarriesItsCommitUnlessLocalWritesComeBeforeTheCall() {
        Remote<String, String> plain = new Remote<>() {
            @Override
            public Reply<String> call(Intent<String> intent, Instant deadline) {
                return new Reply.Applied<>("r");
            }

            @Override
            public Lookup<String> lookup(Intent<String> intent) {
                return Lookup.absent();
            }
        };
        Remote.Holding<String, String> holding = new Remote.Holding<>() {
            @Override
            public void before(DSLContext tx, Intent<String> intent) {}

            @Override
            public Reply<String> call(Intent<String> intent, Instant deadline) {
                return new Reply.Applied<>("r");
            }

            @Override
            public Lookup<String> lookup(Intent<String> intent) {
                return Lookup.absent();
            }
        };
        assertThat(Lifecycle.claimCommit(plain)).isEqualTo(Commit.WITH_STATEMENT);
        assertThat(Lifecycle.claimCommit(holding)).isEqualTo(Commit.LATER);
    }

    @Test
    void aLateAnswerAgreesOnlyWithTheSameClaimsSameStateAndBytes() {
        Answer applied = new Answer(ClaimState.SUCCEEDED, new byte[] {1, 2});
        assertThat(Lifecycle.lateAnswerAgrees(
                        settled(ClaimState.SUCCEEDED, new byte[] {1, 2}, CLAIMED_AT), CLAIMED_AT, applied))
                .isTrue();
        assertThat(Lifecycle.lateAnswerAgrees(
                        settled(ClaimState.SUCCEEDED, new byte[] {1, 3}, CLAIMED_AT), CLAIMED_AT, applied))
                .as("another result")
                .isFalse();
        assertThat(Lifecycle.lateAnswerAgrees(
                        settled(ClaimState.FAILED, new byte[] {1, 2}, CLAIMED_AT), CLAIMED_AT, applied))
                .as("a refusal")
                .isFalse();
        assertThat(Lifecycle.lateAnswerAgrees(
                        settled(ClaimState.SUCCEEDED, new byte[] {1, 2}, CLAIMED_AT.plusNanos(1_000)),
                        CLAIMED_AT,
                        applied))
                .as("the key claimed anew")
                .isFalse();
        assertThat(Lifecycle.lateAnswerAgrees(null, CLAIMED_AT, applied))
                .as("gone")
                .isFalse();
        assertThat(Lifecycle.lateAnswerAgrees(
                        settled(ClaimState.SUCCEEDED, null, CLAIMED_AT),
                        CLAIMED_AT,
                        new Answer(ClaimState.SUCCEEDED, null)))
                .as("a null result recorded as null")
                .isTrue();
    }

    private static ClaimRow settled(ClaimState state, byte[] result, Instant createdAt) {
        return new ClaimRow(state, FINGERPRINT.bytes(), result, CLAIMED_AT, createdAt, "charge", 3, false, null, 0);
    }

    private static HeldClaim<String> recovering(int lookups) {
        return HeldClaim.recovering(INTENT, CLAIMED_AT, 0, lookups, null);
    }

    @Test
    void aClaimInFlightOfAnEffectSettledByStatementWasNeverSentAndIsSentAtOnceUnlessItCannotBe() {
        assertThat(Lifecycle.unsentByStatement(null)).isEqualTo(AfterLookup.SEND_AGAIN);
        assertThat(Lifecycle.unsentByStatement("undecodable")).isEqualTo(AfterLookup.TO_OPERATOR);
    }

    @Test
    void anAbsentClaimIsSentAgainWhileItHasSendsLeftAndARequestOtherwiseAnOperatorGetsIt() {
        var again = io.github.idemtx.jooq.StatementSettlement.WhenAbsent.SEND_AGAIN;
        var operator = io.github.idemtx.jooq.StatementSettlement.WhenAbsent.OPERATOR;
        var inFlight = io.github.idemtx.jooq.internal.store.ClaimState.IN_FLIGHT;
        var toOperator = io.github.idemtx.jooq.internal.store.ClaimState.NEEDS_RECONCILIATION;
        assertThat(Lifecycle.whenAbsent(again, 1, 2, null)).isEqualTo(inFlight);
        assertThat(Lifecycle.whenAbsent(again, 2, 2, null)).as("no sends left").isEqualTo(toOperator);
        assertThat(Lifecycle.whenAbsent(again, 3, 2, null)).isEqualTo(toOperator);
        assertThat(Lifecycle.whenAbsent(again, 1, 2, "undecodable")).isEqualTo(toOperator);
        assertThat(Lifecycle.whenAbsent(operator, 1, 2, null)).isEqualTo(toOperator);
    }

    @Test
    void aSendIsAbsentOnlyPastTheLongerOfTheLagAndTheLease() {
        assertThat(Lifecycle.absentWindow(Duration.ofSeconds(5), Duration.ofSeconds(30)))
                .isEqualTo(Duration.ofSeconds(30));
        assertThat(Lifecycle.absentWindow(Duration.ofDays(2), Duration.ofSeconds(30)))
                .isEqualTo(Duration.ofDays(2));
        assertThat(Lifecycle.absentWindow(Duration.ofSeconds(30), Duration.ofSeconds(30)))
                .isEqualTo(Duration.ofSeconds(30));
    }
}
