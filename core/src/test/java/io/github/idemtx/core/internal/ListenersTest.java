package io.github.idemtx.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.CallStart;
import io.github.idemtx.core.ClaimEvent;
import io.github.idemtx.core.ClaimOrderEvent;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.PurgeEvent;
import io.github.idemtx.core.Scope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ListenersTest {

    private final List<String> told = new ArrayList<>();

    private final class Counting implements IdempotencyListener<Integer> {
        private final String name;

        Counting(String name) {
            this.name = name;
        }

        @Override
        public Integer callStarted(CallStart start) {
            told.add(name + " started " + start.operation() + " for "
                    + start.scope().value());
            return name.length();
        }

        @Override
        public void callFinished(CallEvent event, Integer context) {
            told.add(name + " finished " + event.result() + " with " + context);
        }

        @Override
        public void purged(PurgeEvent event) {
            told.add(name + " purged " + event.deleted());
        }

        @Override
        public void claimChanged(ClaimEvent event) {
            told.add(name + " " + event.kind() + " " + event.key().value());
        }

        @Override
        public void claimOrderChanged(ClaimOrderEvent event) {
            told.add(name + " " + (event.claimFirst() ? "claims first" : "works first"));
        }

        @Override
        public void outboxChanged(io.github.idemtx.core.OutboxEvent event) {
            told.add(name + " outbox " + event.kind());
        }

        @Override
        public void outboxBacklog(io.github.idemtx.core.OutboxBacklog backlog) {
            told.add(name + " backlog " + backlog.pending());
        }
    }

    private final IdempotencyListener<String> broken = new IdempotencyListener<>() {
        @Override
        public String callStarted(CallStart start) {
            told.add("broken started");
            throw new IllegalStateException("start");
        }

        @Override
        public void callFinished(CallEvent event, String context) {
            told.add("broken finished with " + context);
            throw new IllegalStateException("finish");
        }

        @Override
        public void purged(PurgeEvent event) {
            told.add("broken purged");
            throw new IllegalStateException("purge");
        }

        @Override
        public void claimChanged(ClaimEvent event) {
            told.add("broken " + event.kind());
            throw new IllegalStateException("claim");
        }

        @Override
        public void claimOrderChanged(ClaimOrderEvent event) {
            told.add("broken order");
            throw new IllegalStateException("order");
        }

        @Override
        public void outboxChanged(io.github.idemtx.core.OutboxEvent event) {
            told.add("broken outbox");
            throw new IllegalStateException("outbox");
        }

        @Override
        public void outboxBacklog(io.github.idemtx.core.OutboxBacklog backlog) {
            told.add("broken backlog");
            throw new IllegalStateException("backlog");
        }
    };

    @Test
    void eachListenerGetsBackWhatItsOwnStartReturnedAndOneThatThrowsStopsNobody() {
        Listeners listeners = new Listeners(List.of(new Counting("a"), broken, new Counting("bbb")));
        assertThat(listeners.any()).isTrue();

        Listeners.Started started = listeners.started("transaction", Scope.of("t1"));
        listeners.finished(
                CallEvent.builder("transaction", CallEvent.Result.EXECUTED).build(), started);
        listeners.purged(PurgeEvent.of(4, 10, Duration.ZERO, null));
        listeners.claimChanged(ClaimEvent.created("transaction", Scope.of("t1"), IdempotencyKey.of("k1")));
        listeners.claimOrderChanged(ClaimOrderEvent.toClaimFirst(0.3, 0.15));
        listeners.outboxChanged(io.github.idemtx.core.OutboxEvent.byOperator(
                io.github.idemtx.core.OutboxEvent.Kind.RETRIED, java.util.UUID.randomUUID(), "d", 3));
        listeners.outboxBacklog(io.github.idemtx.core.OutboxBacklog.of(7, 0, null));

        assertThat(told)
                .containsExactly(
                        "a started transaction for t1",
                        "broken started",
                        "bbb started transaction for t1",
                        "a finished EXECUTED with 1",
                        "broken finished with null",
                        "bbb finished EXECUTED with 3",
                        "a purged 4",
                        "broken purged",
                        "bbb purged 4",
                        "a CREATED k1",
                        "broken CREATED",
                        "bbb CREATED k1",
                        "a claims first",
                        "broken order",
                        "bbb claims first",
                        "a outbox RETRIED",
                        "broken outbox",
                        "bbb outbox RETRIED",
                        "a backlog 7",
                        "broken backlog",
                        "bbb backlog 7");
    }

    @Test
    void aListenerThatThrowsIsLoggedAsAWarningNamingItWithWhatItThrew() {
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("io.github.idemtx");
        List<java.util.logging.LogRecord> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                logged.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(handler);
        try {
            Listeners listeners = new Listeners(List.of(broken));
            listeners.finished(
                    CallEvent.builder("transaction", CallEvent.Result.EXECUTED).build(),
                    listeners.started("transaction", null));
            listeners.purged(PurgeEvent.of(0, 1, Duration.ZERO, null));
            listeners.claimChanged(ClaimEvent.created("transaction", Scope.of("t1"), IdempotencyKey.of("k1")));
            listeners.claimOrderChanged(ClaimOrderEvent.toWorkFirst(0, 0.15));
        } finally {
            jul.removeHandler(handler);
        }
        assertThat(logged).hasSize(5).allSatisfy(r -> {
            assertThat(r.getLevel()).isEqualTo(java.util.logging.Level.WARNING);
            assertThat(r.getMessage()).contains(broken.getClass().getName(), "ignored, the outcome is unchanged");
        });
        assertThat(logged)
                .extracting(r -> r.getThrown().getMessage())
                .containsExactly("start", "finish", "purge", "claim", "order");
    }

    @Test
    void withoutListenersThereIsNobodyToTell() {
        Listeners none = new Listeners(List.of());
        assertThat(none.any()).isFalse();
        none.finished(
                CallEvent.builder("transaction", CallEvent.Result.EXECUTED).build(), none.started("transaction", null));
        none.purged(PurgeEvent.of(0, 1, Duration.ZERO, null));
        none.claimChanged(ClaimEvent.created("transaction", Scope.of("t1"), IdempotencyKey.of("k1")));
        assertThat(told).isEmpty();
    }

    @Test
    void aListenerThatTakesNoContextGetsNull() {
        IdempotencyListener<Void> plain = (event, context) -> told.add("plain " + event.result() + " " + context);
        Listeners listeners = new Listeners(List.of(plain));
        listeners.finished(
                CallEvent.builder("transaction", CallEvent.Result.REPLAYED).build(),
                listeners.started("transaction", null));
        assertThat(told).containsExactly("plain REPLAYED null");
    }
}
