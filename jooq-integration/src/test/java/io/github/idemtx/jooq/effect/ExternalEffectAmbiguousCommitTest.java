package io.github.idemtx.jooq.effect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.CommitOutcomeUnknownException;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.internal.store.SqlStates;
import io.github.idemtx.jooq.internal.store.StatementKind;
import io.github.idemtx.jooq.support.Bank;
import io.github.idemtx.jooq.support.CuttingProxy;
import io.github.idemtx.jooq.support.Db;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.core.BaseConnection;

/**
 * The ambiguous commit of {@code AmbiguousCommitTest} at each COMMIT of an {@link ExternalEffect}:
 * the proxy cuts the connection before the COMMIT reaches the server, or after the server committed
 * and before the client hears so. The remote is never called on a claim that may not be there
 * ({@link CommitOutcomeUnknownException}, as {@link IdempotentTransaction} answers a lost COMMIT); a
 * record's answer, in hand, is recorded again on another connection. The retry charges once in all.
 */
@DatabaseTest
class ExternalEffectAmbiguousCommitTest {

    private static CuttingProxy proxy;
    private static DSLContext dsl;

    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("charge 10");

    @BeforeAll
    static void startProxy() throws Exception {
        proxy = CuttingProxy.toTestDatabase();
        dsl = DSL.using(proxy.newPool("effect-through-cutting-proxy"), SQLDialect.POSTGRES);
    }

    @AfterAll
    static void stopProxy() throws Exception {
        if (proxy != null) {
            proxy.close(); // and its pool
        }
    }

    /** Where the external effect's COMMIT is, and the statement before it. */
    enum EffectCommit {
        /** the in-flight claim's, sent with its INSERT: nothing is called yet */
        CLAIM(StatementKind.EFFECT_CLAIM),
        /** the in-flight claim's after {@code before()}'s local writes, sent with the lease's start */
        CLAIM_AFTER_BEFORE(StatementKind.EFFECT_TAKEOVER),
        /** a retry's takeover of a claim whose call went unanswered: the unit's own {@code commit()} */
        TAKEOVER(StatementKind.EFFECT_TAKEOVER),
        /** the fenced record's, after the remote applied it and {@code after()} wrote */
        RECORD(StatementKind.EFFECT_RECORD);

        final StatementKind before;

        EffectCommit(StatementKind before) {
            this.before = before;
        }
    }

    static Stream<Arguments> effectCuts() {
        return Stream.of(EffectCommit.values())
                .flatMap(commit -> Stream.of(CuttingProxy.Cut.values()).map(cut -> Arguments.of(commit, cut)));
    }

    /** A remote that keeps its charges by downstream key, as a payment provider does, and is looked up by it. */
    private static class Bank implements Remote<String, String> {
        final Map<String, String> charges = new ConcurrentHashMap<>();
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger lookups = new AtomicInteger();
        /** The next call applies, and its reply is lost: it throws as a timeout would. */
        volatile boolean loseTheReply;

        @Override
        public Reply<String> call(Remote.Intent<String> intent, Instant deadline) throws Exception {
            int call = calls.incrementAndGet();
            String charge = charges.computeIfAbsent(intent.downstreamKey(), k -> "charge-" + call);
            if (loseTheReply) {
                loseTheReply = false;
                throw new SocketTimeoutException("the reply was lost");
            }
            return Reply.applied(charge);
        }

        @Override
        public Lookup<String> lookup(Remote.Intent<String> intent) {
            lookups.incrementAndGet();
            String charge = charges.get(intent.downstreamKey());
            return charge == null ? Lookup.absent() : Lookup.found(charge);
        }

        @Override
        public void after(DSLContext tx, Remote.Intent<String> intent, String charge) {
            Db.writeEffect(tx, intent.scope(), intent.key(), "after " + charge);
        }
    }

    private static final class HoldingBank extends Bank implements Remote.Holding<String, String> {
        @Override
        public void before(DSLContext tx, Remote.Intent<String> intent) {
            Db.writeEffect(tx, intent.scope(), intent.key(), "before");
        }
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("effectCuts")
    void anEffectsCommitCutInFlightIsAnsweredAndChargedOnce(EffectCommit commit, CuttingProxy.Cut cut) {
        IdempotencyKey key = Db.freshKey();
        Bank bank = commit == EffectCommit.CLAIM_AFTER_BEFORE ? new HoldingBank() : new Bank();
        ExternalEffect<String, String> charges = ExternalEffect.builder(
                        dsl, "cut-charge", ResultCodec.utf8(), ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(Duration.ofSeconds(2)) // a committed claim is taken over within the retry's duplicateWait (5 s)
                .readAfterWrite(true)
                .build();
        Supplier<RemoteOutcome<String>> charge = () -> charges.run(scope, key, fingerprint, "10 EUR");
        if (commit == EffectCommit.TAKEOVER) {
            bank.loseTheReply = true;
            assertThat(charge.get())
                    .as("applied, its reply lost: the claim stays in flight, its lease ended")
                    .isInstanceOf(RemoteOutcome.Unknown.class);
        }
        int calls = bank.calls.get();
        int cutsBefore = proxy.cuts();
        proxy.arm(cut, sql -> StatementKind.of(sql) == commit.before);
        RemoteOutcome<String> first = null;
        RuntimeException failure = null;
        try {
            first = charge.get();
        } catch (RuntimeException e) {
            failure = e;
        }
        assertThat(proxy.armed()).as("the proxy saw the COMMIT").isFalse();
        assertThat(proxy.cuts()).isEqualTo(cutsBefore + 1);
        boolean committed = cut == CuttingProxy.Cut.AFTER_COMMIT;
        if (commit == EffectCommit.RECORD) {
            // the remote's answer is in hand: recorded on another connection, or found recorded there
            assertThat(failure).as("recorded again").isNull();
            assertThat(first).isInstanceOf(committed ? Outcome.Replayed.class : Outcome.Executed.class);
            assertThat(
                            first instanceof Outcome.Executed<String> e
                                    ? e.value()
                                    : ((Outcome.Replayed<String>) first).value())
                    .isEqualTo("charge-1");
            assertThat(bank.calls).hasValue(1);
        } else {
            assertThat(first).isNull();
            assertThat(failure)
                    .isInstanceOf(CommitOutcomeUnknownException.class)
                    .hasMessageContaining("retry with the same key")
                    .matches(SqlStates::isLostInCommit, "says the connection was lost with the COMMIT in flight")
                    .hasRootCauseInstanceOf(IOException.class); // the driver's error, below the marker
            assertThat(bank.calls)
                    .as("the remote is not called on a claim that may not be there")
                    .hasValue(calls);
            assertThat(notes(key, "before"))
                    .as("before() commits with the claim or not at all")
                    .isEqualTo(commit == EffectCommit.CLAIM_AFTER_BEFORE && committed ? 1 : 0);
        }

        RemoteOutcome<String> retried = charge.get();

        if (commit == EffectCommit.RECORD) {
            assertThat(retried)
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
            assertThat(bank.lookups).hasValue(0);
        } else {
            // a fresh claim sent, or (a committed claim past its lease, a taken-over one) looked up first
            assertThat(retried)
                    .isInstanceOfSatisfying(
                            Outcome.Executed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
            assertThat(bank.lookups)
                    .as("looked up first, once")
                    .hasValue(commit == EffectCommit.TAKEOVER || committed ? 1 : 0);
        }
        assertThat(bank.calls).as("charged once").hasValue(1);
        assertThat(notes(key, "after charge-1")).as("after() committed once").isEqualTo(1);
        assertThat(notes(key, "before")).isEqualTo(commit == EffectCommit.CLAIM_AFTER_BEFORE ? 1 : 0);
        assertThat(charge.get())
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("charge-1"));
        assertThat(bank.calls).hasValue(1);
    }

    private int notes(IdempotencyKey key, String note) {
        return Db.effects(scope, key, note);
    }

    /**
     * {@code after()} that ends its own transaction past the guard has committed its writes without
     * the answer, which is then recorded alone; when that record's COMMIT is lost, it is not recorded
     * again on another connection, which would run {@code after()}, and commit its writes, again.
     */
    @ParameterizedTest
    @EnumSource(CuttingProxy.Cut.class)
    void localWritesThatCommittedByThemselvesAreNotRunAgainWhenTheRecordsCommitIsLost(CuttingProxy.Cut cut) {
        IdempotencyKey key = Db.freshKey();
        AtomicInteger afters = new AtomicInteger();
        Bank bank = new Bank() {
            @Override
            public void after(DSLContext tx, Remote.Intent<String> intent, String charge) {
                afters.incrementAndGet();
                Db.writeEffect(tx, intent.scope(), intent.key(), "after " + charge);
                tx.connection(c -> c.unwrap(BaseConnection.class).commit());
            }
        };
        ExternalEffect<String, String> charges = ExternalEffect.builder(
                        dsl, "cut-charge-after-commits", ResultCodec.utf8(), ResultCodec.utf8(), bank)
                .schema(Db.SCHEMA)
                .lease(Duration.ofSeconds(2))
                .readAfterWrite(true)
                .build();
        proxy.arm(cut, sql -> StatementKind.of(sql) == StatementKind.EFFECT_RECORD);

        assertThatThrownBy(() -> charges.run(scope, key, fingerprint, "10 EUR"))
                .isInstanceOf(CommitOutcomeUnknownException.class);

        assertThat(proxy.armed()).as("the proxy saw the record's COMMIT").isFalse();
        assertThat(afters).as("not run again: its writes are committed").hasValue(1);
        assertThat(notes(key, "after charge-1")).isEqualTo(1);
        assertThat(bank.calls).hasValue(1);
        RemoteOutcome<String> retried = charges.run(scope, key, fingerprint, "10 EUR");
        assertThat(retried).isInstanceOfAny(Outcome.Executed.class, Outcome.Replayed.class);
        assertThat(bank.calls).as("charged once").hasValue(1);
    }
}
