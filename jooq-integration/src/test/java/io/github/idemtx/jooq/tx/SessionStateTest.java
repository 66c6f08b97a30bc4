package io.github.idemtx.jooq.tx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The library leaves nothing on a connection for the next transaction: every kind of outcome, then
 * a look at every server connection. Straight to the server those are the pool's own; through
 * PgBouncer (the through-pgbouncer execution) they are the few that every client connection of the
 * test JVM shares, so whatever any earlier test left behind shows up here too.
 */
@DatabaseTest
class SessionStateTest {

    private final Scope scope = Db.freshScope();
    private final Fingerprint fingerprint = Db.fingerprint("leave nothing behind");

    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = ClaimMode.class,
            names = Db.ALIAS,
            mode = EnumSource.Mode.EXCLUDE) // both modes in every execution, through PgBouncer too
    void noOutcomeLeavesSessionStateOnAnyServerConnection(ClaimMode mode) throws Exception {
        try (HikariDataSource pool = Db.DATABASE.newPool(8)) {
            DSLContext dsl = DSL.using(pool, SQLDialect.POSTGRES);
            IdempotentTransaction<String> idem = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                    .claimMode(mode)
                    .policy(IdempotencyPolicy.builder()
                            .duplicateWait(Duration.ofMillis(100))
                            .build())
                    .schema(Db.SCHEMA)
                    .build();

            IdempotencyKey key = Db.freshKey();
            assertThat(idem.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "x")))
                    .isInstanceOf(Outcome.Executed.class);
            assertThat(idem.run(scope, key, fingerprint, tx -> "again")).isInstanceOf(Outcome.Replayed.class);
            assertThat(idem.run(scope, key, Db.fingerprint("other"), tx -> "other"))
                    .isInstanceOf(Outcome.FingerprintMismatch.class);

            IdempotencyKey rejected = Db.freshKey();
            assertThat(idem.run(scope, rejected, fingerprint, tx -> {
                        Db.writeEffect(tx, scope, rejected, "undone");
                        throw new Rejection("insufficient_funds", "no");
                    }))
                    .isInstanceOf(Outcome.Rejected.class);

            IdempotencyKey failing = Db.freshKey();
            assertThatThrownBy(() -> idem.run(scope, failing, fingerprint, tx -> {
                        tx.execute("select 1/0");
                        return "never";
                    }))
                    .hasMessageContaining("division by zero");

            assertThat(inProgressWhileHeld(idem)).isInstanceOf(Outcome.InProgress.class);

            IdempotencyKey joined = Db.freshKey();
            dsl.transaction(cfg -> assertThat(Db.builder(cfg.dsl(), ResultCodec.utf8())
                            .schema(Db.SCHEMA)
                            .build()
                            .run(scope, joined, fingerprint, tx -> "joined"))
                    .isInstanceOf(Outcome.Executed.class));

            Db.expire(scope, key);
            assertThat(idem.purgeExpired(1000)).isPositive();

            assertThat(Db.DATABASE.leftoverSessionState(pool))
                    .as("session state on the server connections (SET, advisory locks, prepared statements, ...)")
                    .isEmpty();
        }
    }

    /** A duplicate that gives up on a held key: the claim's lock wait times out inside the server. */
    private Outcome<String> inProgressWhileHeld(IdempotentTransaction<String> idem) throws Exception {
        IdempotencyKey key = Db.freshKey();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            // CLAIM_FIRST: the holder holds the key's lock while it works; WORK_FIRST: the holder is a
            // joined call whose row stays uncommitted until its caller commits, and the duplicate's
            // insert waits on it under the transaction-local lock_timeout it sets
            Future<Outcome<String>> first = holder.submit(() -> idem.claimMode() != ClaimMode.CLAIM_FIRST
                    ? Db.dsl().transactionResult(cfg -> {
                        Outcome<String> o = Db.builder(cfg.dsl(), ResultCodec.utf8())
                                .schema(Db.SCHEMA)
                                .build()
                                .run(scope, key, fingerprint, tx -> "holder");
                        claimed.countDown();
                        release.await();
                        return o;
                    })
                    : idem.run(scope, key, fingerprint, tx -> {
                        claimed.countDown();
                        release.await();
                        return "holder";
                    }));
            assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
            Outcome<String> duplicate = idem.run(scope, key, fingerprint, tx -> "duplicate");
            release.countDown();
            assertThat(first.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            return duplicate;
        } finally {
            release.countDown();
            holder.shutdownNow();
        }
    }
}
