package io.github.idemtx.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.core.UnsupportedDatabaseException;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.spring.sample.PaymentsApplication;
import java.sql.Connection;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.dao.DataAccessException;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The ownership invariant inside a Spring Boot application, on Boot's own DSLContext and
 * transaction manager: a call that owns its transaction has committed when {@code run} returns; a
 * call inside a Spring transaction (declarative or programmatic, REQUIRES_NEW, NESTED) joins it,
 * even as its first statement, and its claim and effect commit or vanish with it.
 */
@DatabaseTest
@SpringBootTest(classes = PaymentsApplication.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
class SpringTransactionsTest {

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        PaymentsApplication.databaseProperties().forEach((k, v) -> registry.add(k, () -> v));
    }

    @Autowired
    IdempotentTransactions transactions;

    @Autowired
    DSLContext dsl;

    @Autowired
    DataSource dataSource;

    @Autowired
    PlatformTransactionManager transactionManager;

    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());
    private final Fingerprint fingerprint = Fingerprint.sha256("request");

    private static IdempotencyKey key() {
        return IdempotencyKey.of(UUID.randomUUID().toString());
    }

    private TransactionTemplate template(int propagation) {
        TransactionTemplate t = new TransactionTemplate(transactionManager);
        t.setPropagationBehavior(propagation);
        return t;
    }

    private String audit(IdempotencyKey key) {
        return "audit-" + key.value();
    }

    /** A write of the work: an audit row named after the key. */
    private String write(DSLContext tx, IdempotencyKey key) {
        tx.execute("insert into audit (note) values (?)", audit(key));
        return "done-" + key.value();
    }

    /** What another session sees now: claims and audit rows of the key. */
    private int[] committed(IdempotencyKey key) {
        return new int[] {
            Committed.count(
                    "select count(*) from {schema}.idempotency_claim where scope = ? and idem_key = ?",
                    scope.value(),
                    key.value()),
            Committed.count("select count(*) from {schema}.audit where note = ?", audit(key))
        };
    }

    @Test
    void withoutASpringTransactionTheCallOwnsOneAndHasCommittedWhenItReturns() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        Outcome<String> outcome = idem.run(scope, key, fingerprint, tx -> write(tx, key));
        assertThat(outcome).isEqualTo(new Outcome.Executed<>("done-" + key.value()));
        assertThat(committed(key)).containsExactly(1, 1);
        assertThat(idem.run(scope, key, fingerprint, tx -> "never"))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo("done-" + key.value()));
    }

    @Test
    void asTheFirstStatementOfATransactionTemplateItJoinsAndCommitsWithIt() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        template(TransactionDefinition.PROPAGATION_REQUIRED).executeWithoutResult(status -> {
            assertThat(idem.run(scope, key, fingerprint, tx -> write(tx, key))).isInstanceOf(Outcome.Executed.class);
            assertThat(committed(key))
                    .as("nothing visible before the caller commits")
                    .containsExactly(0, 0);
        });
        assertThat(committed(key)).containsExactly(1, 1);
    }

    @Test
    void whenTheSpringTransactionRollsBackAfterRunTheClaimAndTheEffectVanishAndTheKeyIsFree() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        assertThatThrownBy(() -> template(TransactionDefinition.PROPAGATION_REQUIRED)
                        .executeWithoutResult(status -> {
                            idem.run(scope, key, fingerprint, tx -> write(tx, key));
                            throw new IllegalStateException("the caller fails after run");
                        }))
                .hasMessage("the caller fails after run");
        assertThat(committed(key)).containsExactly(0, 0);
        assertThat(idem.run(scope, key, fingerprint, tx -> write(tx, key))).isInstanceOf(Outcome.Executed.class);
        assertThat(committed(key)).containsExactly(1, 1);
    }

    @Test
    void setRollbackOnlyDiscardsTheJoinedClaimLikeEveryOtherWrite() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        template(TransactionDefinition.PROPAGATION_REQUIRED).executeWithoutResult(status -> {
            idem.run(scope, key, fingerprint, tx -> write(tx, key));
            status.setRollbackOnly();
        });
        assertThat(committed(key)).containsExactly(0, 0);
    }

    @Test
    void requiresNewAroundRunCommitsTheCallEvenWhenTheOuterTransactionRollsBack() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        template(TransactionDefinition.PROPAGATION_REQUIRED).executeWithoutResult(outer -> {
            template(TransactionDefinition.PROPAGATION_REQUIRES_NEW)
                    .executeWithoutResult(inner -> idem.run(scope, key, fingerprint, tx -> write(tx, key)));
            assertThat(committed(key)).as("REQUIRES_NEW committed on its own").containsExactly(1, 1);
            outer.setRollbackOnly();
        });
        assertThat(committed(key)).containsExactly(1, 1);
    }

    @Test
    void requiresNewInsideTheWorkCommitsOnItsOwnWhileTheJoinedCallRollsBackWithTheCaller() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        IdempotencyKey sideKey = key();
        assertThatThrownBy(() -> template(TransactionDefinition.PROPAGATION_REQUIRED)
                        .executeWithoutResult(status -> {
                            idem.run(scope, key, fingerprint, tx -> {
                                template(TransactionDefinition.PROPAGATION_REQUIRES_NEW)
                                        .executeWithoutResult(inner -> write(dsl, sideKey));
                                return write(tx, key);
                            });
                            throw new IllegalStateException("rollback");
                        }))
                .hasMessage("rollback");
        assertThat(committed(key)).containsExactly(0, 0);
        assertThat(committed(sideKey)[1]).as("the REQUIRES_NEW write").isEqualTo(1);
    }

    @Test
    void nestedAroundRunRollsTheCallBackWithTheSavepointAndTheOuterTransactionCommitsTheRest() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        IdempotencyKey outerKey = key();
        template(TransactionDefinition.PROPAGATION_REQUIRED).executeWithoutResult(outer -> {
            write(dsl, outerKey);
            template(TransactionDefinition.PROPAGATION_NESTED).executeWithoutResult(nested -> {
                idem.run(scope, key, fingerprint, tx -> write(tx, key));
                nested.setRollbackOnly();
            });
        });
        assertThat(committed(key)).containsExactly(0, 0);
        assertThat(committed(outerKey)[1]).isEqualTo(1);
    }

    @Test
    void nestedInsideTheWorkRollsBackItsOwnPartAndTheCallCompletes() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        IdempotencyKey nestedKey = key();
        template(TransactionDefinition.PROPAGATION_REQUIRED)
                .executeWithoutResult(status -> assertThat(idem.run(scope, key, fingerprint, tx -> {
                            template(TransactionDefinition.PROPAGATION_NESTED).executeWithoutResult(nested -> {
                                write(dsl, nestedKey);
                                nested.setRollbackOnly();
                            });
                            return write(tx, key);
                        }))
                        .isInstanceOf(Outcome.Executed.class));
        assertThat(committed(key)).containsExactly(1, 1);
        assertThat(committed(nestedKey)[1]).isZero();
    }

    @Test
    void aReadOnlyTransactionIsRefusedBeforeAnythingRuns() {
        IdempotentTransaction<String> idem = transactions.strings();
        IdempotencyKey key = key();
        TransactionTemplate readOnly = template(TransactionDefinition.PROPAGATION_REQUIRED);
        readOnly.setReadOnly(true);
        AtomicReference<Boolean> ran = new AtomicReference<>(false);
        assertThatThrownBy(() -> readOnly.executeWithoutResult(status -> idem.run(scope, key, fingerprint, tx -> {
                    ran.set(true);
                    return "never";
                })))
                .isInstanceOf(TransactionOwnershipException.class)
                .hasMessageContaining("read-only");
        assertThat(ran.get()).isFalse();
        assertThat(committed(key)).containsExactly(0, 0);
    }

    @Test
    void anInstanceTheApplicationBuildsItselfJoinsSpringTransactionsToo() {
        // as the README's example (TransferService) builds it: the Spring detector is found on the class path
        IdempotentTransaction<String> idem = IdempotentTransaction.builder(dsl, ResultCodec.utf8())
                .schema(transactions.schema())
                .build();
        IdempotencyKey key = key();
        assertThatThrownBy(() -> template(TransactionDefinition.PROPAGATION_REQUIRED)
                        .executeWithoutResult(status -> {
                            idem.run(scope, key, fingerprint, tx -> write(tx, key));
                            throw new IllegalStateException("rollback");
                        }))
                .hasMessage("rollback");
        assertThat(committed(key)).containsExactly(0, 0);
    }

    @Test
    void aDslContextOverTheBareDataSourceInsideASpringTransactionIsRefusedNotSplit() {
        DSLContext bare = DSL.using(dataSource, SQLDialect.POSTGRES);
        IdempotentTransaction<String> idem = IdempotentTransaction.builder(bare, ResultCodec.utf8())
                .schema(transactions.schema())
                .build();
        IdempotencyKey key = key();
        assertThatThrownBy(() -> template(TransactionDefinition.PROPAGATION_REQUIRED)
                        .executeWithoutResult(status -> idem.run(scope, key, fingerprint, tx -> write(tx, key))))
                .isInstanceOf(TransactionOwnershipException.class)
                .hasMessageContaining("TransactionAwareDataSourceProxy");
        assertThat(committed(key)).containsExactly(0, 0);
        // outside a Spring transaction the same instance owns its transaction
        assertThat(idem.run(scope, key, fingerprint, tx -> write(tx, key))).isInstanceOf(Outcome.Executed.class);
        assertThat(committed(key)).containsExactly(1, 1);
    }

    @Test
    void aFailureOfTheLibrarysStatementsIsSpringsDataAccessException() throws Exception {
        // a claim table whose writes a trigger refuses: the library's own INSERT fails (SQLSTATE P0001)
        String schema = "idemtx_refusing_"
                + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        IdempotencySchema.migrate(dataSource, schema);
        try (Connection c = TestDatabase.get().connect();
                Statement s = c.createStatement()) {
            s.execute("CREATE FUNCTION " + schema + ".refuse() RETURNS trigger LANGUAGE plpgsql AS"
                    + " $$ BEGIN RAISE EXCEPTION 'refused by a trigger'; END $$");
            s.execute("CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON " + schema + ".idempotency_claim"
                    + " FOR EACH ROW EXECUTE FUNCTION " + schema + ".refuse()");
        }
        try {
            IdempotentTransaction<String> refusing =
                    transactions.builder(ResultCodec.utf8()).schema(schema).build();
            assertThatThrownBy(() -> refusing.run(scope, key(), fingerprint, tx -> "never"))
                    .isInstanceOf(DataAccessException.class)
                    .hasMessageContaining("refused by a trigger");
        } finally {
            TestDatabase.get().execute("DROP SCHEMA " + schema + " CASCADE");
        }
    }

    @Test
    void aSchemaWithoutTheClaimTableIsTheLibrarysOwnRefusalNamingTheMigration() {
        IdempotentTransaction<String> wrongSchema = transactions
                .builder(ResultCodec.utf8())
                .schema("no_such_schema")
                .build();
        assertThatThrownBy(() -> wrongSchema.run(scope, key(), fingerprint, tx -> "never"))
                .isInstanceOf(UnsupportedDatabaseException.class)
                .hasMessageContaining("IdempotencySchema.migrate(dataSource, \"no_such_schema\")");
    }

    @Test
    void resultsGoThroughTheApplicationsJackson3Mapper() {
        record Receipt(String id, long cents) {}
        IdempotentTransaction<Receipt> idem = transactions.json(Receipt.class);
        IdempotencyKey key = key();
        Receipt receipt = new Receipt("r-1", 1250);
        assertThat(idem.run(scope, key, fingerprint, tx -> receipt)).isEqualTo(new Outcome.Executed<>(receipt));
        assertThat(idem.run(scope, key, fingerprint, tx -> new Receipt("other", 1)))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(receipt));
    }
}
