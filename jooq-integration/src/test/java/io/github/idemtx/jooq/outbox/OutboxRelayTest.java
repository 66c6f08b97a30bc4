package io.github.idemtx.jooq.outbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.CallEvent;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyListener;
import io.github.idemtx.core.OutboxBacklog;
import io.github.idemtx.core.OutboxEvent;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every state change of a message under the relay: delivered, retried after a backoff, failed, retried or discarded by an operator, purged. */
@DatabaseTest
class OutboxRelayTest {

    private final IdempotentTransaction<String> transfers = OutboxDb.transactions();
    private final Outbox outbox = OutboxDb.outbox();
    private final Scope scope = OutboxDb.freshScope();
    private final RecordingTransport transport = new RecordingTransport();

    @BeforeEach
    void nothingElseIsDue() {
        OutboxDb.settleOthers();
    }

    /** Commits one claim whose work adds one message; returns its id. */
    private UUID add(String name, @Nullable String orderingKey) {
        IdempotencyKey key = OutboxDb.freshKey();
        transfers.run(scope, key, OutboxDb.fingerprint(name), tx -> {
            OutboxMessage.Builder m = OutboxMessage.builder(name, "events", name.getBytes(UTF_8));
            if (orderingKey != null) {
                m.orderingKey(orderingKey);
            }
            outbox.add(tx, m.build());
            return name;
        });
        return Outbox.messageId(scope, key, name);
    }

    private OutboxEntry entry(UUID id) {
        return outbox.find(id).orElseThrow();
    }

    @Test
    void deliversPendingMessagesAndMarksThemDeliveredOnlyAfterTheTransportReturned() {
        UUID a = add("a", null);
        UUID b = add("b", null);
        List<OutboxStatus> seenWhileSending = new CopyOnWriteArrayList<>();
        OutboxTransport watching = d -> {
            seenWhileSending.add(entry(d.messageId()).status());
            transport.send(d);
        };

        int delivered = OutboxDb.relay(watching).build().deliverDue();

        assertThat(delivered).isEqualTo(2);
        assertThat(transport.names()).containsExactly("a", "b");
        assertThat(seenWhileSending).containsOnly(OutboxStatus.PENDING);
        assertThat(transport.sent.get(0).messageId()).isEqualTo(a);
        assertThat(transport.sent.get(0).attempt()).isEqualTo(1);
        assertThat(transport.sent.get(0).scope()).isEqualTo(scope);
        OutboxEntry done = entry(b);
        assertThat(done.status()).isEqualTo(OutboxStatus.DELIVERED);
        assertThat(done.settledAt()).isNotNull();
        assertThat(done.attempts()).isEqualTo(1);
        assertThat(outbox.backlog().pending()).isZero();
        assertThat(OutboxDb.relay(transport).build().deliverDue())
                .as("nothing twice")
                .isZero();
    }

    @Test
    void aTransportFailureKeepsTheMessagePendingWithItsReasonAndABackoff() {
        UUID id = add("a", null);
        transport.failWith = new IOException("broker down");
        OutboxRelay relay = OutboxDb.relay(transport)
                .initialBackoff(Duration.ofHours(1))
                .maxBackoff(Duration.ofHours(4))
                .build();

        assertThat(relay.deliverDue()).isZero();

        OutboxEntry e = entry(id);
        assertThat(e.status()).isEqualTo(OutboxStatus.PENDING);
        assertThat(e.attempts()).isEqualTo(1);
        assertThat(e.lastError()).isEqualTo("java.io.IOException: broker down");
        assertThat(e.nextAttemptAt()).isAfter(e.lastAttemptAt().plus(Duration.ofMinutes(59)));
        transport.failWith = null;
        assertThat(relay.deliverDue()).as("not due before its backoff").isZero();

        OutboxDb.dueNow(id);
        assertThat(relay.deliverDue()).isEqualTo(1);
        assertThat(transport.sent.get(0).attempt()).isEqualTo(2);
        assertThat(entry(id).status()).isEqualTo(OutboxStatus.DELIVERED);
    }

    @Test
    void theBackoffDoublesUpToItsCap() {
        OutboxRelay relay = OutboxDb.relay(transport)
                .initialBackoff(Duration.ofSeconds(1))
                .maxBackoff(Duration.ofSeconds(10))
                .build();

        assertThat(List.of(relay.backoff(1), relay.backoff(2), relay.backoff(3), relay.backoff(4), relay.backoff(9)))
                .containsExactly(
                        Duration.ofSeconds(1),
                        Duration.ofSeconds(2),
                        Duration.ofSeconds(4),
                        Duration.ofSeconds(8),
                        Duration.ofSeconds(10));
    }

    @Test
    void afterItsLastAttemptAMessageIsKeptAsFailedUntilAnOperatorRetriesIt() {
        UUID id = add("a", null);
        transport.failWith = new IOException("no route");
        OutboxRelay relay = OutboxDb.relay(transport).maxAttempts(2).build();

        relay.deliverDue();
        OutboxDb.dueNow(id);
        relay.deliverDue();

        OutboxEntry failed = entry(id);
        assertThat(failed.status()).isEqualTo(OutboxStatus.FAILED);
        assertThat(failed.attempts()).isEqualTo(2);
        assertThat(failed.lastError()).contains("no route");
        assertThat(outbox.failed(10)).extracting(OutboxEntry::messageId).containsExactly(id);
        assertThat(outbox.backlog().failed()).isEqualTo(1);
        OutboxDb.dueNow(id);
        assertThat(relay.deliverDue()).as("a failed message is not tried again").isZero();

        transport.failWith = null;
        assertThat(outbox.retry(id)).isTrue();
        assertThat(entry(id).status()).isEqualTo(OutboxStatus.PENDING);
        assertThat(entry(id).attempts()).isZero();
        assertThat(outbox.retry(id)).as("only a failed message").isFalse();
        assertThat(relay.deliverDue()).isEqualTo(1);
        assertThat(entry(id).status()).isEqualTo(OutboxStatus.DELIVERED);
    }

    @Test
    void aRefusalIsKeptAsFailedAtOnce() {
        UUID id = add("a", null);
        transport.failWith = new DeliveryRefusedException("422: unknown account");

        OutboxDb.relay(transport).maxAttempts(10).build().deliverDue();

        assertThat(entry(id).status()).isEqualTo(OutboxStatus.FAILED);
        assertThat(entry(id).attempts()).isEqualTo(1);
        assertThat(entry(id).lastError()).contains("422: unknown account");
    }

    @Test
    void deliversInOrderPerOrderingKeyAndAFailureHoldsBackOnlyItsKey() {
        UUID a1 = add("a1", "account-a");
        add("a2", "account-a");
        add("a3", "account-a");
        add("b1", "account-b");
        add("b2", "account-b");
        AtomicInteger failures = new AtomicInteger(1);
        OutboxTransport failingA1Once = d -> {
            if (d.messageId().equals(a1) && failures.getAndDecrement() > 0) {
                throw new IOException("a1 fails once");
            }
            transport.send(d);
        };
        OutboxRelay relay = OutboxDb.relay(failingA1Once).build();

        relay.deliverDue();
        assertThat(transport.names())
                .as("one message per key per poll: its head")
                .containsExactly("b1");
        relay.deliverDue();
        assertThat(transport.names())
                .as("a1 waits for its backoff, a2 and a3 behind it")
                .containsExactly("b1", "b2");

        OutboxDb.dueNow(a1);
        while (relay.deliverDue() > 0) {
            // each poll delivers the next head of account-a
        }
        assertThat(transport.names()).containsExactly("b1", "b2", "a1", "a2", "a3");
    }

    @Test
    void aDiscardedMessageNoLongerHoldsBackItsKey() {
        UUID a1 = add("a1", "account-a");
        UUID a2 = add("a2", "account-a");
        transport.failWith = new DeliveryRefusedException("bad");
        OutboxRelay relay = OutboxDb.relay(transport).build();
        relay.deliverDue();
        transport.failWith = null;
        assertThat(relay.deliverDue()).as("a2 waits behind the failed a1").isZero();

        assertThat(outbox.discard(a1)).isTrue();

        assertThat(entry(a1).status()).isEqualTo(OutboxStatus.DISCARDED);
        assertThat(relay.deliverDue()).isEqualTo(1);
        assertThat(transport.sent).extracting(OutboxDelivery::messageId).containsExactly(a2);
        assertThat(outbox.discard(a1)).as("once").isFalse();
    }

    @Test
    void manyRelaysNeverDeliverOneMessageTwiceOrTwoOfOneKeyAtOnce() throws Exception {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            ids.add(add("m" + i, i % 3 == 0 ? "key-" + (i % 4) : null));
        }
        Set<UUID> inFlight = ConcurrentHashMap.newKeySet();
        Set<String> keysInFlight = ConcurrentHashMap.newKeySet();
        Map<UUID, AtomicInteger> sends = new ConcurrentHashMap<>();
        List<String> overlaps = new CopyOnWriteArrayList<>();
        List<String> orderOfKeyed = new CopyOnWriteArrayList<>();
        OutboxTransport checking = d -> {
            if (!inFlight.add(d.messageId())) {
                overlaps.add("message " + d.name());
            }
            String k = d.orderingKey();
            if (k != null && !keysInFlight.add(k)) {
                overlaps.add("key " + k);
            }
            try {
                Thread.sleep(2);
                sends.computeIfAbsent(d.messageId(), x -> new AtomicInteger()).incrementAndGet();
                if (k != null) {
                    orderOfKeyed.add(k + ":" + Integer.parseInt(d.name().substring(1)));
                }
            } finally {
                if (k != null) {
                    keysInFlight.remove(k);
                }
                inFlight.remove(d.messageId());
            }
        };
        int relays = 4;
        ExecutorService pool = Executors.newFixedThreadPool(relays);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> running = new ArrayList<>();
            for (int r = 0; r < relays; r++) {
                OutboxRelay relay = OutboxDb.relay(checking).batchSize(5).build();
                running.add(pool.submit(() -> {
                    go.await();
                    while (outbox.backlog().pending() > 0) {
                        relay.deliverDue();
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : running) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(overlaps).isEmpty();
        assertThat(sends.keySet()).containsExactlyInAnyOrderElementsOf(ids);
        assertThat(sends.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        for (int k = 0; k < 4; k++) {
            String prefix = "key-" + k + ":";
            List<Integer> order = orderOfKeyed.stream()
                    .filter(s -> s.startsWith(prefix))
                    .map(s -> Integer.parseInt(s.substring(prefix.length())))
                    .toList();
            assertThat(order).as(prefix).isSorted();
        }
    }

    /** The relay "dies" after the destination has the message and before its mark: nothing marks it. */
    static final class Killed extends Error {
        private static final long serialVersionUID = 1L;
    }

    @Test
    void aRelayKilledBetweenSendAndMarkHasTheMessageSentAgainUnderTheSameId() throws Exception {
        UUID id = add("a", null);
        OutboxTransport dying = d -> {
            transport.send(d);
            throw new Killed();
        };
        OutboxRelay dead = OutboxDb.relay(dying).lease(Duration.ofSeconds(1)).build();
        assertThatThrownBy(dead::deliverDue).isInstanceOf(Killed.class);
        assertThat(entry(id).status()).isEqualTo(OutboxStatus.PENDING);

        OutboxRelay survivor = OutboxDb.relay(transport).build();
        assertThat(survivor.deliverDue())
                .as("the dead relay's lease still holds")
                .isZero();
        Instant deadline = Instant.now().plusSeconds(30);
        while (survivor.deliverDue() == 0 && Instant.now().isBefore(deadline)) {
            Thread.sleep(100);
        }

        assertThat(transport.sent).extracting(OutboxDelivery::messageId).containsExactly(id, id);
        assertThat(transport.sent).extracting(OutboxDelivery::attempt).containsExactly(1, 2);
        assertThat(entry(id).status()).isEqualTo(OutboxStatus.DELIVERED);
    }

    @Test
    void aRelayWhoseLeasePassedCannotFailAMessageAnotherRelayTookOver() throws Exception {
        UUID id = add("a", null);
        CountDownLatch sending = new CountDownLatch(1);
        CountDownLatch takenOver = new CountDownLatch(1);
        OutboxTransport slowFailing = d -> {
            sending.countDown();
            takenOver.await();
            throw new IOException("too late");
        };
        OutboxRelay slow =
                OutboxDb.relay(slowFailing).lease(Duration.ofSeconds(1)).build();
        ExecutorService one = Executors.newSingleThreadExecutor();
        try {
            Future<Integer> first = one.submit(slow::deliverDue);
            sending.await();
            OutboxRelay other = OutboxDb.relay(transport).build();
            Instant deadline = Instant.now().plusSeconds(30);
            while (other.deliverDue() == 0 && Instant.now().isBefore(deadline)) {
                Thread.sleep(100);
            }
            takenOver.countDown();
            assertThat(first.get(1, TimeUnit.MINUTES)).isZero();
        } finally {
            one.shutdownNow();
        }

        OutboxEntry e = entry(id);
        assertThat(e.status()).isEqualTo(OutboxStatus.DELIVERED);
        assertThat(e.lastError()).isNull();
    }

    @Test
    void purgesDeliveredAndDiscardedMessagesAfterTheRetentionOnly() {
        UUID delivered = add("delivered", null);
        OutboxDb.relay(transport).build().deliverDue();
        UUID discarded = add("discarded", null);
        outbox.discard(discarded);
        UUID pending = add("pending", null);
        OutboxRelay relay =
                OutboxDb.relay(transport).retention(Duration.ofHours(1)).build();

        assertThat(relay.purge()).as("within the retention").isZero();
        OutboxDb.settledAgo(delivered, 7200);
        OutboxDb.settledAgo(discarded, 7200);
        assertThat(relay.purge()).isEqualTo(2);

        assertThat(outbox.find(delivered)).isEmpty();
        assertThat(outbox.find(discarded)).isEmpty();
        assertThat(outbox.find(pending)).isPresent();
    }

    @Test
    void aStartedRelayDeliversAndStopsGracefullyGivingBackWhatItDidNotSend() throws Exception {
        UUID first = add("first", null);
        UUID second = add("second", null);
        UUID third = add("third", null);
        CountDownLatch sending = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        OutboxTransport blocking = d -> {
            sending.countDown();
            finish.await();
            transport.send(d);
        };
        OutboxRelay relay = OutboxDb.relay(blocking).build();
        relay.start();
        assertThat(relay.isRunning()).isTrue();
        sending.await();

        ExecutorService one = Executors.newSingleThreadExecutor();
        try {
            Future<Boolean> stopped = one.submit(() -> relay.stop(Duration.ofMinutes(1)));
            while (relay.isRunning()) {
                Thread.onSpinWait();
            }
            finish.countDown();
            assertThat(stopped.get(1, TimeUnit.MINUTES)).isTrue();
        } finally {
            one.shutdownNow();
        }

        assertThat(transport.names()).containsExactly("first");
        assertThat(entry(first).status()).isEqualTo(OutboxStatus.DELIVERED);
        for (UUID unsent : List.of(second, third)) {
            OutboxEntry e = entry(unsent);
            assertThat(e.status()).isEqualTo(OutboxStatus.PENDING);
            assertThat(e.attempts()).as("given back: not an attempt").isZero();
        }
        assertThat(OutboxDb.relay(transport).build().deliverDue())
                .as("at once due again")
                .isEqualTo(2);
        assertThatThrownBy(relay::start).isInstanceOf(IllegalStateException.class);
    }

    static final class Events implements IdempotencyListener<Void> {
        final List<OutboxEvent> events = new CopyOnWriteArrayList<>();
        final List<OutboxBacklog> backlogs = new CopyOnWriteArrayList<>();

        @Override
        public void callFinished(CallEvent event, @Nullable Void context) {}

        @Override
        public void outboxChanged(OutboxEvent event) {
            events.add(event);
        }

        @Override
        public void outboxBacklog(OutboxBacklog backlog) {
            backlogs.add(backlog);
        }
    }

    @Test
    void listenersAreToldEachStateChangeAndTheBacklog() {
        Events events = new Events();
        Outbox operated = Outbox.builder(OutboxDb.DSL_CONTEXT)
                .schema(OutboxDb.SCHEMA)
                .listener(events)
                .build();
        UUID id = add("a", null);
        OutboxRelay relay =
                OutboxDb.relay(transport).maxAttempts(2).listener(events).build();

        transport.failWith = new IOException("down");
        relay.deliverDue();
        assertThat(events.backlogs.getLast().pending()).isEqualTo(1);
        assertThat(events.backlogs.getLast().oldestPendingAge()).isNotNull();
        OutboxDb.dueNow(id);
        relay.deliverDue();
        operated.retry(id);
        transport.failWith = null;
        relay.deliverDue();
        UUID other = add("b", null);
        operated.discard(other);

        assertThat(events.events)
                .extracting(OutboxEvent::kind)
                .containsExactly(
                        OutboxEvent.Kind.RETRYING,
                        OutboxEvent.Kind.FAILED,
                        OutboxEvent.Kind.RETRIED,
                        OutboxEvent.Kind.DELIVERED,
                        OutboxEvent.Kind.DISCARDED);
        assertThat(events.events.get(0).error()).isEqualTo("java.io.IOException: down");
        assertThat(events.events.get(0).messageId()).isEqualTo(id);
        assertThat(events.events.get(0).destination()).isEqualTo("events");
        assertThat(events.events.get(3).attempts()).isEqualTo(1);
        assertThat(events.backlogs.getLast().pending()).isZero();
        assertThat(events.backlogs.getLast().failed()).isZero();
    }
}
