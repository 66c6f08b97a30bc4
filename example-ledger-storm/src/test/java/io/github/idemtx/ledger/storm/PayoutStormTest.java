package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import org.junit.jupiter.api.Test;

/**
 * The short version of {@code storm --payouts} that CI runs: the ledger SIGKILLed mid-payout, the
 * bank misbehaving, claims reconciled by an operator through the ledger's admin routes.
 */
@DatabaseTest
class PayoutStormTest {

    @Test
    void payoutsSurviveLedgerKillsAndBankFaultsWithEveryInvariant() throws Exception {
        try {
            PayoutStorm.Report report =
                    PayoutStormRun.run("pstorm", "--intents=100", "--clients=6", "--kills=3", "--seed=5");
            assertThat(report.kills())
                    .as("the ledger was killed --kills times while it ran")
                    .isEqualTo(3);
            assertThat(report.answers().getOrDefault("paid", 0)).isPositive();
            PayoutEventsAssert.checked(report);
            // the lookup outage after the load (--reconcile, 4 by default: 2 charged, 2 not) hands
            // claims to reconciliation whatever the chaos did; the operator resolved them through the
            // ledger's admin routes, as applied (found charged) and as refused (no charge)
            assertThat(report.reconciled().get("applied"))
                    .as("claims resolved as applied through the admin routes")
                    .isGreaterThanOrEqualTo(2);
            assertThat(report.reconciled().get("refused"))
                    .as("claims resolved as refused through the admin routes")
                    .isGreaterThanOrEqualTo(2);
            assertThat(report.reconciliation())
                    .hasSize(report.reconciled().get("applied")
                            + report.reconciled().get("refused"));
        } finally {
            PayoutStormRun.drop("pstorm");
        }
    }

    @Test
    void badFlagsAreRefusedWithTheirName() {
        assertThatThrownBy(() -> PayoutStorm.parse(new String[] {"--payouts", "--intents=0"}))
                .hasMessageContaining("--intents");
        assertThatThrownBy(() -> PayoutStorm.parse(new String[] {"--payouts", "--bogus=1"}))
                .hasMessageContaining("--bogus");
        assertThatThrownBy(() -> PayoutStorm.parse(new String[] {"--payouts", "--schema=x;y"}))
                .hasMessageContaining("--schema");
        assertThatThrownBy(() -> PayoutStorm.parse(new String[] {"--payouts", "--reconcile=-1"}))
                .hasMessageContaining("--reconcile");
    }
}
