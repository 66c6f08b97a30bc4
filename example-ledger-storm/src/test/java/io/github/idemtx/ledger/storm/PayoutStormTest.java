package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The short version of {@code storm --payouts} that CI runs: the ledger SIGKILLed mid-payout, the
 * bank misbehaving, claims reconciled by an operator through the ledger's admin routes.
 */
@DatabaseTest
class PayoutStormTest {

    @Test
    void payoutsSurviveLedgerKillsAndBankFaultsWithEveryInvariant() throws Exception {
        TestDatabase db = TestDatabase.get();
        String schema = db.schema() + "_pstorm";
        List<String> args = new ArrayList<>(List.of(
                "--payouts",
                "--intents=100",
                "--clients=6",
                "--kills=3",
                "--seed=5",
                "--schema=" + schema,
                "--db-url=" + db.serverUrl(),
                "--db-user=" + (db.user() == null ? "postgres" : db.user())));
        if (db.password() != null) {
            args.add("--db-password=" + db.password());
        }
        try {
            PayoutStorm.Report report = PayoutStorm.run(PayoutStorm.parse(args.toArray(String[]::new)), System.out);
            System.out.print(report.render());
            assertThat(report.invariants())
                    .isNotEmpty()
                    .allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
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
            db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            db.execute("DROP SCHEMA IF EXISTS " + schema + "_bank CASCADE");
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
