package io.github.idemtx.jooq.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.internal.store.StatementKind;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * During a rolling upgrade, instances of the previous version (V1: claim with idempotency_acquire,
 * complete with an UPDATE) and of this one run side by side on the migrated schema. They do not
 * share a lock, but the unique index still lets only one of them commit a key, and each replays
 * the other's answer.
 */
@DatabaseTest
class RollingUpgradeTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("upgrade me");
    private final IdempotentTransaction<String> idem =
            Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();

    /** What V1's claim function answered. */
    private record V1Claim(boolean claimed, short state, byte[] result) {}

    /** A V1 instance's claim, in the transaction open on {@code c}. */
    private V1Claim v1Acquire(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("select claimed, state, result from " + Db.SCHEMA
                + ".idempotency_acquire(?, ?, ?, ?, ?, ?::smallint, ?)")) {
            ps.setString(1, scope.value());
            ps.setString(2, key.value());
            ps.setBytes(3, fingerprint.bytes());
            ps.setLong(4, 86_400_000L);
            ps.setInt(5, 5000);
            ps.setShort(6, (short) 0);
            ps.setBytes(7, null);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new V1Claim(rs.getBoolean(1), rs.getShort(2), rs.getBytes(3));
            }
        }
    }

    /** What a V1 instance does up to its completion: claim, then the work's write; the transaction stays open. */
    private Connection v1ClaimAndWork(String note) throws SQLException {
        Connection c = Db.DATABASE.connect();
        c.setAutoCommit(false);
        assertThat(v1Acquire(c).claimed()).isTrue();
        try (PreparedStatement ps =
                c.prepareStatement("insert into " + Db.SCHEMA + ".effect (scope, idem_key, note) values (?, ?, ?)")) {
            ps.setString(1, scope.value());
            ps.setString(2, key.value());
            ps.setString(3, note);
            ps.executeUpdate();
        }
        return c;
    }

    private static void v1Complete(Connection c, IdempotencyKey key, Scope scope, String value) throws SQLException {
        try (PreparedStatement ps =
                c.prepareStatement("update " + Db.SCHEMA + ".idempotency_claim set state = 1, result = ?,"
                        + " completed_at = clock_timestamp() where scope = ? and idem_key = ?; commit")) {
            ps.setBytes(1, value.getBytes(StandardCharsets.UTF_8));
            ps.setString(2, scope.value());
            ps.setString(3, key.value());
            ps.executeUpdate();
        }
        c.close();
    }

    @Test
    void aCallOfThisVersionRacingAPreviousVersionsCallReplaysItsAnswer() throws Exception {
        Connection v1 = v1ClaimAndWork("v1");
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try {
            // not holding V1's (absent) lock, the V2 call runs its work, then its INSERT waits on V1's row
            Future<Outcome<String>> v2 = thread.submit(
                    () -> idem.run(scope, key, fingerprint, tx -> "v2-" + Db.writeEffect(tx, scope, key, "v2")));
            Db.DATABASE.awaitLockWaiters(Faults.running(StatementKind.RECORD_AND_COMMIT), 1);
            v1Complete(v1, key, scope, "v1-answer");

            assertThat(v2.get(30, TimeUnit.SECONDS))
                    .isInstanceOfSatisfying(
                            Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("v1-answer"));
            assertThat(Db.effects(scope, key)).isEqualTo(1);
            assertThat(Db.claims(scope, key)).isEqualTo(1);
        } finally {
            thread.shutdownNow();
        }
    }

    @Test
    void aPreviousVersionsCallAfterThisVersionCompletedReplaysItsAnswer() throws Exception {
        Outcome<String> v2 = idem.run(scope, key, fingerprint, tx -> "v2-" + Db.writeEffect(tx, scope, key, "v2"));
        String answer = ((Outcome.Executed<String>) v2).value();

        try (Connection c = Db.DATABASE.connect()) {
            c.setAutoCommit(false);
            V1Claim v1 = v1Acquire(c);
            c.rollback();
            assertThat(v1.claimed()).as("V1's claim finds the key held").isFalse();
            assertThat(v1.state()).as("completed").isEqualTo((short) 1);
            assertThat(new String(v1.result(), StandardCharsets.UTF_8))
                    .as("and replays this version's answer")
                    .isEqualTo(answer);
        }
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }
}
