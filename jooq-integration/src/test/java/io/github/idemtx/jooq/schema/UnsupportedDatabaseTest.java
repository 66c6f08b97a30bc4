package io.github.idemtx.jooq.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.UnsupportedDatabaseException;
import io.github.idemtx.core.UnsupportedDatabaseException.Problem;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.ConnectionCheck;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.FakeBank;
import io.github.idemtx.jooq.support.FakePostgres;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A database the library cannot serve gets {@link UnsupportedDatabaseException} naming what to
 * change, and nothing is written: a schema the migrations were never applied to (the builder's
 * {@code schema(...)} forgotten), and a server older than PostgreSQL 14.
 */
@DatabaseTest
class UnsupportedDatabaseTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();

    @Test
    void aCallOnASchemaWithoutTheClaimTableNamesTheSchemaAndTheMigrationAndWritesNothing() {
        String empty = "idemtx_unmigrated_"
                + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        Db.DATABASE.execute("CREATE SCHEMA " + empty);
        try {
            IdempotentTransaction<String> idem = IdempotentTransaction.builder(Db.dsl(), ResultCodec.utf8())
                    .claimMode(Db.CLAIM_MODE)
                    .schema(empty)
                    .build();
            AtomicInteger runs = new AtomicInteger();

            assertThatThrownBy(() -> idem.run(scope, key, Db.fingerprint("a"), tx -> {
                        runs.incrementAndGet();
                        return "effect-" + Db.writeEffect(tx, scope, key, "unmigrated");
                    }))
                    .isInstanceOfSatisfying(
                            UnsupportedDatabaseException.class,
                            e -> assertThat(e.problem()).isEqualTo(Problem.NOT_MIGRATED))
                    .hasMessageContaining(empty + ".idempotency_claim")
                    .hasMessageContaining("IdempotencySchema.migrate(dataSource, \"" + empty + "\")")
                    .hasMessageContaining("42P01");
            assertThat(Db.effects(scope, key))
                    .as("the work's write rolled back")
                    .isZero();
            assertThat(runs).hasValueLessThanOrEqualTo(Db.workFirst() ? 1 : 0);
        } finally {
            Db.DATABASE.execute("DROP SCHEMA " + empty + " CASCADE");
        }
    }

    @Test
    void aSchemaThatDoesNotExistIsReportedTheSameWay() {
        IdempotentTransaction<String> idem = IdempotentTransaction.builder(Db.dsl(), ResultCodec.utf8())
                .claimMode(Db.CLAIM_MODE)
                .schema("idemtx_no_such_schema")
                .build();

        assertThatThrownBy(() -> idem.run(scope, key, Db.fingerprint("a"), tx -> "x"))
                .isInstanceOf(UnsupportedDatabaseException.class)
                .hasMessageContaining("idemtx_no_such_schema.idempotency_claim");
        assertThatThrownBy(() -> idem.purgeExpired(10))
                .isInstanceOf(UnsupportedDatabaseException.class)
                .hasMessageContaining("idemtx_no_such_schema.idempotency_claim");
    }

    @Test
    void anExternalEffectOnASchemaWithoutTheClaimTableIsRefusedTheSameWay() {
        ExternalEffect<Long, String> charges = ExternalEffect.builder(
                        Db.dsl(), "charge", FakeBank.LONGS, ResultCodec.utf8(), new FakeBank(Db.SCHEMA))
                .schema("idemtx_no_such_schema")
                .policy(IdempotencyPolicy.defaults())
                .build();
        assertThatThrownBy(() -> charges.run(scope, key, Db.fingerprint("a"), 100L))
                .isInstanceOfSatisfying(
                        UnsupportedDatabaseException.class,
                        e -> assertThat(e.problem()).isEqualTo(Problem.NOT_MIGRATED))
                .hasMessageContaining("IdempotencySchema.migrate");
    }

    @Test
    void aServerOlderThanFourteenIsRefusedBeforeAnyStatementByTheMigrationAndByTheCall() throws Exception {
        try (FakePostgres old = FakePostgres.reporting("13.4")) {
            PGSimpleDataSource dataSource = new PGSimpleDataSource();
            dataSource.setUrl(old.url());
            dataSource.setUser("postgres");

            assertThatThrownBy(() -> IdempotencySchema.migrate(dataSource))
                    .isInstanceOfSatisfying(
                            UnsupportedDatabaseException.class,
                            e -> assertThat(e.problem()).isEqualTo(Problem.SERVER_TOO_OLD))
                    .hasMessageContaining("PostgreSQL 13.4")
                    .hasMessageContaining("PostgreSQL 14 and newer");

            DSLContext dsl = DSL.using(dataSource, SQLDialect.POSTGRES);
            AtomicInteger runs = new AtomicInteger();
            IdempotentTransaction<String> idem =
                    IdempotentTransaction.builder(dsl, ResultCodec.utf8()).build();
            assertThatThrownBy(() -> idem.run(scope, key, Db.fingerprint("a"), tx -> {
                        runs.incrementAndGet();
                        return "x";
                    }))
                    .isInstanceOf(UnsupportedDatabaseException.class)
                    .hasMessageContaining("13.4");
            assertThat(runs).hasValue(0);
            assertThat(old.statements()).as("statements sent to the old server").isZero();
        }
    }

    @Test
    void aMigrationThatCannotConnectThroughAPoolNamesTheDriversReasonNotThePoolsTimeout() {
        com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
        config.setJdbcUrl(Db.DATABASE.serverUrl().replaceAll("/[^/?]*(\\?.*)?$", "/idemtx_no_such_database"));
        config.setUsername(Db.DATABASE.user());
        config.setPassword(Db.DATABASE.password());
        config.setInitializationFailTimeout(-1); // start without a connection, as an application that must boot anyway
        config.setConnectionTimeout(500);
        try (com.zaxxer.hikari.HikariDataSource pool = new com.zaxxer.hikari.HikariDataSource(config)) {
            assertThatThrownBy(() -> IdempotencySchema.migrate(pool))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("database \"idemtx_no_such_database\" does not exist")
                    .hasMessageContaining("3D000");
        }
    }

    @Test
    void theTestSupportAndTheLibraryAgreeOnTheOldestSupportedVersion() {
        assertThat(ConnectionCheck.OLDEST_SUPPORTED_VERSION).isEqualTo(IdempotencySchema.OLDEST_SUPPORTED_VERSION);
    }
}
