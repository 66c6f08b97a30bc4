package io.github.idemtx.messaging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultTooLargeException;
import io.github.idemtx.core.RetriesExhaustedException;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.core.UnsupportedDatabaseException;
import io.github.idemtx.core.WorkEndedTransactionException;
import io.github.idemtx.messaging.Acknowledgement.Action;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class AcknowledgementTest {

    private static final Scope SCOPE = Scope.of("tenant");
    private static final IdempotencyKey KEY = IdempotencyKey.of("intent-1");
    private static final Instant AT = Instant.parse("2026-12-02T10:15:30Z");

    @Test
    void executedReplayedAndRejectedAreAcknowledged() {
        assertThat(Acknowledgement.of(new Outcome.Executed<>("t")))
                .isEqualTo(new Acknowledgement(Action.ACK, "executed", Duration.ZERO));
        assertThat(Acknowledgement.of(new Outcome.Executed<>(null)).action()).isEqualTo(Action.ACK);
        assertThat(Acknowledgement.of(new Outcome.Replayed<>("t", AT)))
                .isEqualTo(new Acknowledgement(
                        Action.ACK, "replayed: the first delivery completed at 2026-12-02T10:15:30Z", Duration.ZERO));
        Failure refused = Failure.of("insufficient_funds", "no money");
        assertThat(Acknowledgement.of(new Outcome.Rejected<>(refused, AT, false)))
                .isEqualTo(new Acknowledgement(Action.ACK, "rejected: insufficient_funds", Duration.ZERO));
        assertThat(Acknowledgement.of(new Outcome.Rejected<>(refused, AT, true)))
                .isEqualTo(new Acknowledgement(Action.ACK, "rejected (replayed): insufficient_funds", Duration.ZERO));
    }

    @Test
    void aReusedKeyAndAClaimAwaitingAnOperatorAreDeadLettered() {
        Acknowledgement mismatch = Acknowledgement.of(new Outcome.FingerprintMismatch<>());
        assertThat(mismatch.action()).isEqualTo(Action.DEAD_LETTER);
        assertThat(mismatch.reason()).contains("an intent id reused for another intent", "derive the same key");
        assertThat(mismatch.retryAfter()).isZero();
        Acknowledgement settle = Acknowledgement.of(new RemoteOutcome.NeedsReconciliation<>(AT));
        assertThat(settle.action()).isEqualTo(Action.DEAD_LETTER);
        assertThat(settle.reason()).contains("needs reconciliation since 2026-12-02T10:15:30Z", "operator");
    }

    @Test
    void inProgressAndUnknownAreRetriedAfterTheirHint() {
        assertThat(Acknowledgement.of(new Outcome.InProgress<>(Duration.ofSeconds(2))))
                .isEqualTo(new Acknowledgement(
                        Action.RETRY, "another delivery with the same key is still running", Duration.ofSeconds(2)));
        assertThat(Acknowledgement.of(new RemoteOutcome.Unknown<>(Duration.ofSeconds(7), "timed out")))
                .isEqualTo(new Acknowledgement(
                        Action.RETRY, "the remote outcome is not known yet: timed out", Duration.ofSeconds(7)));
    }

    @Test
    void failuresThatNothingRecordedAreRetried() {
        Acknowledgement lost =
                Acknowledgement.of(new CommitOutcomeUnknownException(SCOPE, KEY, new IllegalStateException("x")));
        assertThat(lost.action()).isEqualTo(Action.RETRY);
        assertThat(lost.reason()).startsWith("CommitOutcomeUnknownException: ");
        assertThat(lost.retryAfter()).isZero();
        assertThat(Acknowledgement.of(new RetriesExhaustedException(SCOPE, KEY, 3, new IllegalStateException("40001")))
                        .action())
                .isEqualTo(Action.RETRY);
        assertThat(Acknowledgement.of(new UncheckedIOException("down", new java.io.IOException("down"))))
                .isEqualTo(new Acknowledgement(Action.RETRY, "UncheckedIOException: down", Duration.ZERO));
        assertThat(Acknowledgement.of(new IllegalStateException()))
                .isEqualTo(new Acknowledgement(Action.RETRY, "IllegalStateException", Duration.ZERO));
    }

    @Test
    void failuresThatNoMessageCanGetPastStopTheConsumer() {
        for (RuntimeException e : new RuntimeException[] {
            new TransactionOwnershipException(SCOPE, KEY, "joined a transaction it cannot see"),
            new WorkEndedTransactionException(SCOPE, KEY, "Connection.commit()", false, null),
            new UnsupportedDatabaseException(
                    UnsupportedDatabaseException.Problem.NOT_MIGRATED, "the claim table is missing", null)
        }) {
            Acknowledgement ack = Acknowledgement.of(e);
            assertThat(ack.action()).as(e.getClass().getSimpleName()).isEqualTo(Action.STOP);
            assertThat(ack.reason())
                    .startsWith("no message can be applied until the consumer changes: "
                            + e.getClass().getSimpleName() + ": ");
            assertThat(ack.giveUpAfter(99, 3))
                    .as("never parked: the backlog stays")
                    .isSameAs(ack);
        }
    }

    @Test
    void aResultTooLargeToRecordIsDeadLettered() {
        Acknowledgement ack = Acknowledgement.of(new ResultTooLargeException(SCOPE, KEY, 2_000_000, 1_000_000));
        assertThat(ack.action()).isEqualTo(Action.DEAD_LETTER);
        assertThat(ack.reason()).startsWith("the result cannot be recorded: ResultTooLargeException: ");
    }

    @Test
    void errorsOfTheWorkAreRetried() {
        assertThat(Acknowledgement.of(new StackOverflowError()))
                .isEqualTo(new Acknowledgement(Action.RETRY, "StackOverflowError", Duration.ZERO));
    }

    @Test
    void aReasonIsOneLineForLogsAndHeaders() {
        assertThat(Acknowledgement.deadLetter("  Unexpected character\n at [Source: (byte[])\"x\"; line: 1]\r\n ")
                        .reason())
                .isEqualTo("Unexpected character at [Source: (byte[])\"x\"; line: 1]");
        assertThat(Acknowledgement.of(new IllegalStateException("two\nlines")).reason())
                .isEqualTo("IllegalStateException: two lines");
    }

    @Test
    void giveUpAfterTurnsTheLastRetryIntoADeadLetter() {
        Acknowledgement retry = new Acknowledgement(Action.RETRY, "db down", Duration.ofSeconds(1));
        assertThat(retry.giveUpAfter(1, 3)).isSameAs(retry);
        assertThat(retry.giveUpAfter(2, 3)).isSameAs(retry);
        assertThat(retry.giveUpAfter(3, 3))
                .isEqualTo(
                        new Acknowledgement(Action.DEAD_LETTER, "gave up after 3 deliveries: db down", Duration.ZERO));
        assertThat(retry.giveUpAfter(9, 3).action()).isEqualTo(Action.DEAD_LETTER);
        assertThat(retry.giveUpAfter(1, 1).action()).isEqualTo(Action.DEAD_LETTER);
        Acknowledgement ack = Acknowledgement.of(new Outcome.Executed<>("t"));
        assertThat(ack.giveUpAfter(9, 3)).isSameAs(ack);
        Acknowledgement dead = Acknowledgement.deadLetter("undecodable");
        assertThat(dead.giveUpAfter(9, 3)).isSameAs(dead);
        assertThatThrownBy(() -> retry.giveUpAfter(0, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("deliveries counts this delivery too: at least 1, was 0");
        assertThatThrownBy(() -> retry.giveUpAfter(1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("limit must be at least 1, was 0");
    }

    @Test
    void badArgumentsAreRefusedNamingThem() {
        assertThat(Acknowledgement.deadLetter("cannot decode"))
                .isEqualTo(new Acknowledgement(Action.DEAD_LETTER, "cannot decode", Duration.ZERO));
        assertThatThrownBy(() -> Acknowledgement.deadLetter(" "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("reason must not be blank");
        assertThatThrownBy(() -> new Acknowledgement(null, "r", Duration.ZERO))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("action must not be null");
        assertThatThrownBy(() -> new Acknowledgement(Action.ACK, null, Duration.ZERO))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("reason must not be null");
        assertThatThrownBy(() -> new Acknowledgement(Action.ACK, "r", null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("retryAfter must not be null");
        assertThatThrownBy(() -> new Acknowledgement(Action.RETRY, "r", Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retryAfter must not be negative, was PT-1S");
        assertThatThrownBy(() -> new Acknowledgement(Action.ACK, "r", Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retryAfter is for RETRY only; ACK was given PT1S");
        assertThat(new Acknowledgement(Action.RETRY, "r", Duration.ZERO).retryAfter())
                .isZero();
        assertThatThrownBy(() -> Acknowledgement.of((RemoteOutcome<?>) null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("outcome must not be null");
        assertThatThrownBy(() -> Acknowledgement.of((Throwable) null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("failure must not be null");
    }
}
