package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The outbox's events and backlog: what each kind carries, and which maker makes which kind. */
class OutboxEventTest {

    private final UUID id = UUID.fromString("33ba0a35-7ae6-87e5-ac2d-3b3230cfa9f2");

    @Test
    void anAttemptCarriesItsMessageErrorAndDuration() {
        OutboxEvent e = OutboxEvent.attempt(OutboxEvent.Kind.RETRYING, id, "ledger", 2, "down", Duration.ofMillis(3));

        assertThat(e.kind()).isEqualTo(OutboxEvent.Kind.RETRYING);
        assertThat(e.messageId()).isEqualTo(id);
        assertThat(e.destination()).isEqualTo("ledger");
        assertThat(e.attempts()).isEqualTo(2);
        assertThat(e.error()).isEqualTo("down");
        assertThat(e.took()).isEqualTo(Duration.ofMillis(3));
        assertThat(e)
                .hasToString("OutboxEvent[RETRYING, messageId=33ba0a35-7ae6-87e5-ac2d-3b3230cfa9f2,"
                        + " destination=ledger, attempts=2, error=down]");
        assertThat(OutboxEvent.attempt(OutboxEvent.Kind.DELIVERED, id, "ledger", 1, null, Duration.ZERO))
                .hasToString("OutboxEvent[DELIVERED, messageId=33ba0a35-7ae6-87e5-ac2d-3b3230cfa9f2,"
                        + " destination=ledger, attempts=1]");
    }

    @Test
    void anOperatorsActionHasNoDurationNorError() {
        OutboxEvent e = OutboxEvent.byOperator(OutboxEvent.Kind.DISCARDED, id, "ledger", 10);

        assertThat(e.kind()).isEqualTo(OutboxEvent.Kind.DISCARDED);
        assertThat(e.took()).isNull();
        assertThat(e.error()).isNull();
        assertThat(e.attempts()).isEqualTo(10);
        assertThat(OutboxEvent.byOperator(OutboxEvent.Kind.RETRIED, id, "d", 0).kind())
                .isEqualTo(OutboxEvent.Kind.RETRIED);
    }

    @Test
    void eachMakerRefusesTheOthersKinds() {
        for (OutboxEvent.Kind kind : new OutboxEvent.Kind[] {OutboxEvent.Kind.RETRIED, OutboxEvent.Kind.DISCARDED}) {
            assertThatThrownBy(() -> OutboxEvent.attempt(kind, id, "d", 1, null, Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        for (OutboxEvent.Kind kind :
                new OutboxEvent.Kind[] {OutboxEvent.Kind.DELIVERED, OutboxEvent.Kind.RETRYING, OutboxEvent.Kind.FAILED
                }) {
            assertThatThrownBy(() -> OutboxEvent.byOperator(kind, id, "d", 1))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> OutboxEvent.attempt(OutboxEvent.Kind.DELIVERED, null, "d", 1, null, Duration.ZERO))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> OutboxEvent.attempt(OutboxEvent.Kind.DELIVERED, id, null, 1, null, Duration.ZERO))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> OutboxEvent.attempt(OutboxEvent.Kind.DELIVERED, id, "d", 1, null, null))
                .isInstanceOf(NullPointerException.class);
    }

    @Test
    void theBacklogCarriesItsCountsAndTheOldestAge() {
        OutboxBacklog b = OutboxBacklog.of(3, 1, Duration.ofSeconds(9));

        assertThat(b.pending()).isEqualTo(3);
        assertThat(b.failed()).isEqualTo(1);
        assertThat(b.oldestPendingAge()).isEqualTo(Duration.ofSeconds(9));
        assertThat(b.oldestPendingAgeOrZero()).isEqualTo(Duration.ofSeconds(9));
        assertThat(b).hasToString("OutboxBacklog[pending=3, failed=1, oldestPendingAge=PT9S]");
        OutboxBacklog none = OutboxBacklog.of(0, 0, null);
        assertThat(none.oldestPendingAgeOrZero()).isEqualTo(Duration.ZERO);
        assertThat(none).hasToString("OutboxBacklog[pending=0, failed=0]");
        assertThatThrownBy(() -> OutboxBacklog.of(-1, 0, null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> OutboxBacklog.of(0, -1, null)).isInstanceOf(IllegalArgumentException.class);
    }
}
