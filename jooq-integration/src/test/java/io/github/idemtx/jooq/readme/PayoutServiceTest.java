package io.github.idemtx.jooq.readme;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.StatementReconciliation;
import io.github.idemtx.jooq.support.Db;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** docs/destinations.md's payout service, run: a lost answer settled by the bank's statement. */
@DatabaseTest
class PayoutServiceTest {

    @Test
    void aPayoutWhoseAnswerWasLostIsPaidOnceWhenTheStatementShowsIt() {
        List<StatementReconciliation.Line> booked = new ArrayList<>();
        boolean[] loseAnswer = {true};
        PayoutService service = new PayoutService(Db.dsl(), Db.SCHEMA, (request, reference, deadline) -> {
            String entry = "E" + UUID.randomUUID();
            booked.add(new StatementReconciliation.Line(
                    entry, reference, request.amount(), request.currency(), LocalDate.now()));
            if (loseAnswer[0]) {
                throw new java.net.SocketTimeoutException("the answer was lost");
            }
            return entry;
        });
        Scope scope = Db.freshScope();
        IdempotencyKey key = Db.freshKey();
        PayoutService.PayoutRequest request = new PayoutService.PayoutRequest(new BigDecimal("25.00"), "EUR", "DE89");

        assertThat(service.pay(scope, key, request)).isInstanceOf(RemoteOutcome.Unknown.class);
        loseAnswer[0] = false;
        assertThat(service.pay(scope, key, request)).as("not sent again").isInstanceOf(RemoteOutcome.Unknown.class);
        assertThat(booked).hasSize(1);

        StatementReconciliation.Report report = service.apply(new StatementReconciliation.Statement(
                "S-" + UUID.randomUUID(), Instant.now().minusSeconds(60), Instant.now(), booked));

        assertThat(report.count("SETTLED")).isEqualTo(1);
        assertThat(service.pay(scope, key, request))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat(r.value()).isEqualTo(booked.get(0).entryId()));
    }
}
