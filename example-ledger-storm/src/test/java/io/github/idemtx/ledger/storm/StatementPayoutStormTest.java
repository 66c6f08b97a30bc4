package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import org.junit.jupiter.api.Test;

/**
 * The short version of {@code storm --payouts --bank=statement} that CI runs: payouts to a bank
 * without keys or lookups, settled by its camt.053 statements, the ledger SIGKILLed between send and
 * record, the bank failing, losing answers and booking late; every payout paid once, absent and
 * sent again, flagged, at an operator or refused, never paid twice without a flag, never lost.
 */
@DatabaseTest
class StatementPayoutStormTest {

    @Test
    void everyPayoutIsPaidOnceResentFlaggedOrRefusedThroughKillsAndLateBookings() throws Exception {
        try {
            PayoutStorm.Report report = PayoutStormRun.run(
                    "sstorm",
                    "--bank=statement",
                    "--statement-lag-ms=1500",
                    "--statement-poll-ms=200",
                    "--late-bookings=2",
                    "--intents=80",
                    "--clients=6",
                    "--kills=3",
                    "--seed=7");
            assertThat(report.kills())
                    .as("the ledger was killed --kills times while it ran")
                    .isEqualTo(3);
            assertThat(report.statement().get(StatementPayoutChecks.MID_SEND))
                    .as("kills that left payouts sent and not recorded")
                    .isPositive();
            assertThat(report.statement().get(StatementPayoutChecks.PAID_ONCE)).isPositive();
            PayoutEventsAssert.checked(report);
            // the late bookings after the load (--late-bookings=2) are each paid twice, the second flagged
            assertThat(report.statement().get(StatementPayoutChecks.DOUBLE))
                    .as("flagged double payments")
                    .isGreaterThanOrEqualTo(2);
            int ended = report.statement().entrySet().stream()
                    .filter(e -> !e.getKey().equals(StatementPayoutChecks.MID_SEND))
                    .mapToInt(e -> e.getValue())
                    .sum();
            assertThat(ended)
                    .as("every payout intent's claim ended one of the five ways")
                    .isEqualTo(report.intents());
        } finally {
            PayoutStormRun.drop("sstorm");
        }
    }

    @Test
    void statementFlagsAreRefusedWhereTheyDoNotFit() {
        assertThatThrownBy(() -> PayoutStorm.parse(new String[] {"--payouts", "--bank=sepa"}))
                .hasMessageContaining("--bank");
        assertThatThrownBy(() -> PayoutStorm.parse(new String[] {"--payouts", "--statement-lag-ms=100"}))
                .hasMessageContaining("--statement-lag-ms needs --bank=statement");
        assertThatThrownBy(() -> PayoutStorm.parse(new String[] {"--payouts", "--bank=statement", "--reconcile=2"}))
                .hasMessageContaining("--reconcile");
        assertThatThrownBy(() ->
                        PayoutStorm.parse(new String[] {"--payouts", "--bank=statement", "--statement-poll-ms=0"}))
                .hasMessageContaining("--statement-poll-ms");
        assertThat(PayoutStorm.parse(new String[] {"--payouts"}).statement()).isNull();
        assertThat(PayoutStorm.parse(new String[] {"--payouts", "--bank=statement"})
                        .statement())
                .isEqualTo(new PayoutStorm.Statement(1500, 200, 3));
    }
}
