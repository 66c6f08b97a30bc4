package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ClaimTableTest {

    private final ClaimTable table = new ClaimTable("billing");

    @Test
    void aStatementIsItsTagAndItsTemplateWithEveryNameRenderedForTheSchema() {
        assertThat(table.schema()).isEqualTo("billing");
        assertThat(table.claims()).isEqualTo("\"billing\".\"idempotency_claim\"");
        assertThat(table.sql(StatementKind.EFFECT_READ, """
                select {state}, {lease_until}
                from {claims} where {idem_key} = ? and {state} in ({IN_FLIGHT}, {NEEDS_RECONCILIATION})
                """))
                .isEqualTo("/* idemtx:effect-read */ select \"state\", \"lease_until\""
                        + " from \"billing\".\"idempotency_claim\" where \"idem_key\" = ? and \"state\" in (3, 4)");
        assertThat(table.sql(StatementKind.AWAIT, "select * from {await}(?)"))
                .isEqualTo("/* idemtx:await */ select * from \"billing\".\"idempotency_await\"(?)");
    }

    @Test
    void aPlaceholderThatNamesNothingFailsWhenTheStatementIsBuilt() {
        assertThatThrownBy(() -> table.sql(StatementKind.PURGE, "delete from {claims} where {expired_at} < now()"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "the statement PURGE names {expired_at}, which is no column, state or object of the claim table");
    }

    @Test
    void everyStatementOfBothDoorsBuilds() {
        // each constructor renders all of its statements: a misspelt placeholder anywhere fails here
        new ClaimStatements(table);
        new EffectStatements(table);
        new AdminStatements(table);
    }

    @Test
    void theOperatorsActionsTableIsNamedBesideTheClaims() {
        assertThat(table.sql(StatementKind.ADMIN_WRITE, "insert into {actions} ({at}, {operator}, {reason}, {scope})"))
                .isEqualTo("/* idemtx:admin-write */ insert into \"billing\".\"idempotency_claim_action\""
                        + " (\"at\", \"operator\", \"reason\", \"scope\")");
    }

    @Test
    void eachStateHasOneCodeAndAJoinedRowsNegatedCodeReadsAsTheSameState() {
        assertThat(ClaimState.values())
                .extracting(ClaimState::code)
                .containsExactly((short) 0, (short) 1, (short) 2, (short) 3, (short) 4, (short) 5);
        for (ClaimState state : ClaimState.values()) {
            assertThat(ClaimState.of(state.code())).isEqualTo(state);
            assertThat(ClaimState.of(state.joinedCode())).isEqualTo(state);
            assertThat(state.joinedCode()).isEqualTo((short) -state.code());
        }
        assertThatThrownBy(() -> ClaimState.of((short) 6))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("state 6");
        assertThatThrownBy(() -> ClaimState.of((short) -7))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("state -7");
    }
}
