package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.db.testing.LocalBroker;

/**
 * The payout storms' short forms' check that the ledger's payout events were checked
 * ({@link PayoutEvents}): with a broker, or under CI (whose broker must run; as {@code StormTest}).
 */
final class PayoutEventsAssert {

    private PayoutEventsAssert() {}

    /** Asserts that {@code report} holds the payout events' invariants, unless no broker runs outside CI. */
    static void checked(PayoutStorm.Report report) {
        if (LocalBroker.unavailable().isEmpty() || System.getenv("CI") != null) {
            assertThat(report.invariants().keySet())
                    .as("the ledger's payout events were checked")
                    .anyMatch(name -> name.startsWith("every paid payout's event (payout.paid) reached the queue"))
                    .anyMatch(name -> name.startsWith("no payout event for a payout refused"))
                    .anyMatch(name -> name.startsWith("every event a SIGKILLed ledger left undelivered"))
                    .contains("no outbox message left pending or leased after the drain (0)");
        }
    }
}
