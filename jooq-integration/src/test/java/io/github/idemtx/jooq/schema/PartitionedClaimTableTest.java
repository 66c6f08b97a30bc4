package io.github.idemtx.jooq.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.ClaimPartitions;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.FakeBank;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the claim table partitioned by key day adds to a call, whatever layout the rest of this
 * run's suite uses: keys outside the accepted days are refused before any SQL, a key the table has
 * no partition for is named as such, and the purge works partition by partition.
 */
@DatabaseTest
class PartitionedClaimTableTest {

    private static final String SCHEMA = Db.SCHEMA + "_by_day";
    private static HikariDataSource direct;
    private static ClaimPartitions partitions;
    private static DSLContext dsl;

    @BeforeAll
    static void migrate() {
        direct = Db.DATABASE.newServerPool(4);
        partitions = ClaimPartitions.byKeyDay(direct).schema(SCHEMA).build();
        partitions.migrate();
        dsl = DSL.using(direct, SQLDialect.POSTGRES);
    }

    @AfterAll
    static void drop() {
        if (direct != null) {
            direct.close();
        }
        Db.DATABASE.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
    }

    private static IdempotentTransaction<String> idem() {
        return IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .claimMode(Db.CLAIM_MODE)
                .partitions(partitions)
                .build();
    }

    private static int claims(String key) {
        return dsl.fetchCount(
                DSL.table(DSL.name(SCHEMA, "idempotency_claim")),
                DSL.field("idem_key").eq(key));
    }

    @Test
    void aKeyOfTodayRunsOnceAndReplays() {
        Scope scope = Db.freshScope();
        IdempotencyKey key =
                ClaimPartitions.key(Instant.now(), UUID.randomUUID().toString());
        AtomicInteger runs = new AtomicInteger();
        assertThat(idem().run(scope, key, Db.fingerprint("a"), tx -> "ran " + runs.incrementAndGet()))
                .isInstanceOf(Outcome.Executed.class);
        assertThat(idem().run(scope, key, Db.fingerprint("a"), tx -> "ran " + runs.incrementAndGet()))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("ran 1"));
        assertThat(claims(key.value())).isEqualTo(1);
    }

    @Test
    void keysOutsideTheAcceptedDaysAreRefusedBeforeAnySqlAndNothingIsWritten() {
        Scope scope = Db.freshScope();
        AtomicInteger runs = new AtomicInteger();
        IdempotencyKey old = ClaimPartitions.key(Instant.now().minus(Duration.ofDays(5)), "old");
        IdempotencyKey plain = IdempotencyKey.of(UUID.randomUUID().toString());
        for (IdempotencyKey key : new IdempotencyKey[] {old, plain}) {
            assertThatThrownBy(() -> idem().run(scope, key, Db.fingerprint("a"), tx -> "ran " + runs.incrementAndGet()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(key.value().substring(0, 8));
            assertThat(claims(key.value())).isZero();
        }
        assertThat(runs).hasValue(0);
        ExternalEffect<Long, String> charges = ExternalEffect.builder(
                        dsl, "charge", FakeBank.LONGS, ResultCodec.utf8(), new FakeBank(SCHEMA))
                .partitions(partitions)
                .policy(IdempotencyPolicy.defaults())
                .build();
        assertThatThrownBy(() -> charges.run(scope, old, Db.fingerprint("a"), 100L))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("outside the days the claim table accepts");
        assertThat(claims(old.value())).isZero();
    }

    @Test
    void withoutThePartitionsOnTheBuilderAKeyWithNoPartitionIsNamedAsSuchAndRolledBack() {
        DSLContext business = dsl;
        business.execute("CREATE TABLE IF NOT EXISTS " + SCHEMA + ".effect (note text)");
        IdempotentTransaction<String> unaware = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .claimMode(Db.CLAIM_MODE)
                .schema(SCHEMA)
                .build();
        Scope scope = Db.freshScope();
        IdempotencyKey plain = IdempotencyKey.of("order-" + UUID.randomUUID());
        assertThatThrownBy(() -> unaware.run(scope, plain, Db.fingerprint("a"), tx -> {
                    tx.execute("INSERT INTO " + SCHEMA + ".effect VALUES (?)", plain.value());
                    return "x";
                }))
                .isInstanceOf(DataAccessException.class)
                .hasMessageContaining("is partitioned and has no partition for this key")
                .hasMessageContaining("must begin with its intent's day");
        assertThat(claims(plain.value())).isZero();
        assertThat(business.fetchCount(
                        DSL.table(DSL.name(SCHEMA, "effect")), DSL.field("note").eq(plain.value())))
                .as("the work's write rolled back with the claim")
                .isZero();
    }

    @Test
    void thePurgeWorksPartitionByPartitionOldestDayFirstUpToItsLimit() {
        Instant today = Instant.now();
        Instant yesterday = today.minus(Duration.ofDays(1));
        String run = UUID.randomUUID().toString();
        // today's rows expired longer ago than yesterday's: the global statement (oldest expiry
        // first) would take today's first; partition by partition takes yesterday's day first
        for (int i = 0; i < 3; i++) {
            expired(ClaimPartitions.key(today, run + "t" + i).value(), "2 hours");
            expired(ClaimPartitions.key(yesterday, run + "y" + i).value(), "1 hour");
        }
        dsl.execute(
                "DELETE FROM " + SCHEMA + ".idempotency_claim WHERE scope = 'purge' AND idem_key NOT LIKE ?",
                "%" + run + "%"); // rows of other runs of this test would take the batch
        String live = ClaimPartitions.key(today, run + "live").value();
        dsl.execute(
                "INSERT INTO " + SCHEMA + ".idempotency_claim (scope, idem_key, fingerprint, state, created_at,"
                        + " expires_at) VALUES ('purge', ?, decode(repeat('00', 32), 'hex'), 1, now(), now() + interval '1 hour')",
                live);
        IdempotentTransaction<String> idem = idem();
        assertThat(idem.purgeExpired(4))
                .as("a batch spans partitions, and stops at its limit")
                .isEqualTo(4);
        assertThat(purgeKeys())
                .as("yesterday's three went first, then one of today's")
                .hasSize(3)
                .contains(live)
                .noneMatch(k -> k.contains(run + "y"));
        assertThat(idem.purgeExpired(100)).isEqualTo(2);
        assertThat(purgeKeys()).as("only the live row is left").containsExactly(live);
    }

    private static List<String> purgeKeys() {
        return dsl
                .fetchValues("SELECT idem_key FROM " + SCHEMA + ".idempotency_claim WHERE scope = 'purge' ORDER BY 1")
                .stream()
                .map(String::valueOf)
                .toList();
    }

    private static void expired(String key, String ago) {
        dsl.execute(
                "INSERT INTO " + SCHEMA + ".idempotency_claim (scope, idem_key, fingerprint, state, created_at,"
                        + " expires_at) VALUES ('purge', ?, decode(repeat('00', 32), 'hex'), 1, now(),"
                        + " now() - interval '" + ago + "')",
                key);
    }

    @Test
    void aJoinedCallsRowIsCompletedByTheTriggerOnItsPartitionAtTheCallersCommit() {
        Scope scope = Db.freshScope();
        IdempotencyKey key =
                ClaimPartitions.key(Instant.now(), UUID.randomUUID().toString());
        Outcome<String> joined =
                dsl.transactionResult(caller -> IdempotentTransaction.builder(caller.dsl(), ResultCodec.utf8())
                        .transactionMode(TransactionMode.JOIN)
                        .partitions(partitions)
                        .build()
                        .run(scope, key, Db.fingerprint("a"), tx -> "joined"));
        assertThat(joined).isInstanceOf(Outcome.Executed.class);
        // written with a pending state; the deferred trigger, cloned onto the partition, completes it
        assertThat(dsl.fetchValue(
                        "SELECT state FROM " + SCHEMA + ".idempotency_claim WHERE scope = ? AND idem_key = ?",
                        scope.value(),
                        key.value()))
                .isEqualTo((short) 1);
        assertThat(idem().run(scope, key, Db.fingerprint("a"), tx -> "again"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("joined"));
    }

    @Test
    void theSchemaNamedAfterThePartitionsMustBeTheirs() {
        assertThatThrownBy(() -> IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                        .partitions(partitions)
                        .schema(Db.SCHEMA)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("name one schema");
        Remote<String, String> remote = new Remote<>() {
            @Override
            public Remote.Reply<String> call(Remote.Intent<String> intent, Instant deadline) {
                throw new AssertionError("never called");
            }

            @Override
            public Remote.Lookup<String> lookup(Remote.Intent<String> intent) {
                throw new AssertionError("never called");
            }
        };
        assertThatThrownBy(() -> ExternalEffect.builder(dsl, "charge", ResultCodec.utf8(), ResultCodec.utf8(), remote)
                        .partitions(partitions)
                        .schema(Db.SCHEMA)
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the schema was set to " + Db.SCHEMA + " after the partitions, whose claim table is in "
                        + SCHEMA + ": name one schema");
    }
}
