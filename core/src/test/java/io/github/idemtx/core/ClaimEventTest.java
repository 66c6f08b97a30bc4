package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ClaimEventTest {

    private final Scope scope = Scope.of("tenant-a");
    private final IdempotencyKey key = IdempotencyKey.of("k-1");

    @Test
    void aCreatedClaimNamesItsOperationScopeAndKeyAndNoOperator() {
        ClaimEvent e = ClaimEvent.created("effect:payout", scope, key);
        assertThat(e.kind()).isEqualTo(ClaimEvent.Kind.CREATED);
        assertThat(e.operation()).isEqualTo("effect:payout");
        assertThat(e.scope()).isEqualTo(scope);
        assertThat(e.key()).isEqualTo(key);
        assertThat(e.operator()).isNull();
        assertThat(e.reason()).isNull();
        assertThat(e.toString()).isEqualTo("ClaimEvent[CREATED, operation=effect:payout, scope=tenant-a, key=k-1]");
    }

    @Test
    void anOperatorsActionCarriesWhoAndWhy() {
        ClaimEvent e = ClaimEvent.byOperator(ClaimEvent.Kind.FORGOTTEN, "transaction", scope, key, "bob", "bug #1");
        assertThat(e.kind()).isEqualTo(ClaimEvent.Kind.FORGOTTEN);
        assertThat(e.operation()).isEqualTo("transaction");
        assertThat(e.scope()).isEqualTo(scope);
        assertThat(e.key()).isEqualTo(key);
        assertThat(e.operator()).isEqualTo("bob");
        assertThat(e.reason()).isEqualTo("bug #1");
        assertThat(e.toString())
                .isEqualTo("ClaimEvent[FORGOTTEN, operation=transaction, scope=tenant-a, key=k-1,"
                        + " operator=bob, reason=bug #1]");
        assertThat(ClaimEvent.byOperator(ClaimEvent.Kind.RESOLVED, "effect:x", scope, key, "a", "b")
                        .kind())
                .isEqualTo(ClaimEvent.Kind.RESOLVED);
    }

    @Test
    void callsCreateClaimsAndOperatorsDoNot() {
        assertThatThrownBy(() -> ClaimEvent.byOperator(ClaimEvent.Kind.CREATED, "transaction", scope, key, "a", "b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("calls create them");
    }

    @Test
    void nothingIsNull() {
        assertThatThrownBy(() -> ClaimEvent.created(null, scope, key)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> ClaimEvent.created("transaction", null, key)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> ClaimEvent.created("transaction", scope, null))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> ClaimEvent.byOperator(null, "transaction", scope, key, "a", "b"))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> ClaimEvent.byOperator(ClaimEvent.Kind.RESOLVED, "transaction", scope, key, null, "b"))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> ClaimEvent.byOperator(ClaimEvent.Kind.RESOLVED, "transaction", scope, key, "a", null))
                .isInstanceOf(NullPointerException.class);
    }
}
