package io.github.idemtx.jooq.tx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.TransactionMode;
import io.github.idemtx.jooq.support.Db;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jooq.impl.DataSourceConnectionProvider;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A Spring application wired as Spring Boot's jOOQ auto-configuration does (a
 * {@code DataSourceConnectionProvider} over a {@code TransactionAwareDataSourceProxy}, a
 * {@code DataSourceTransactionManager}), without the library's Spring module: {@code run} as the
 * first statement of a Spring transaction cannot be told from a pooled connection, so it is
 * refused rather than committed on its own (which split the caller's transaction before); stated
 * {@code JOIN}, it joins; outside a transaction it owns its own.
 */
@DatabaseTest
class SpringWithoutTheModuleTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("spring");

    private final DSLContext dsl = DSL.using(
            new DataSourceConnectionProvider(new TransactionAwareDataSourceProxy(Db.POOL)), SQLDialect.POSTGRES);
    private final TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(Db.POOL));

    private IdempotentTransaction<String> idem(TransactionMode mode) {
        return Db.builder(dsl, ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .transactionMode(mode)
                .build();
    }

    @Test
    void runAsTheFirstStatementOfASpringTransactionIsRefusedNotSplit() {
        AtomicBoolean ran = new AtomicBoolean();
        transactions.executeWithoutResult(status -> {
            assertThatThrownBy(() -> idem(TransactionMode.DETECT).run(scope, key, fingerprint, tx -> {
                        ran.set(true);
                        return "x";
                    }))
                    .isInstanceOf(TransactionOwnershipException.class)
                    .hasMessageContaining("managed by Spring")
                    .hasMessageContaining("JOIN");
            Db.writeEffect(dsl, scope, key, "the method goes on");
        });
        assertThat(ran).isFalse();
        assertThat(Db.claims(scope, key)).isZero();
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void statedJoinCommitsAndRollsBackWithTheSpringTransaction() {
        assertThatThrownBy(() -> transactions.executeWithoutResult(status -> {
                    assertThat(idem(TransactionMode.JOIN)
                                    .run(scope, key, fingerprint, tx -> "s-" + Db.writeEffect(tx, scope, key, "in")))
                            .isInstanceOf(Outcome.Executed.class);
                    throw new IllegalStateException("the method throws after run");
                }))
                .hasMessage("the method throws after run");
        assertThat(Db.claims(scope, key)).isZero();
        assertThat(Db.effects(scope, key)).isZero();

        transactions.executeWithoutResult(status -> {
            assertThat(idem(TransactionMode.JOIN)
                            .run(scope, key, fingerprint, tx -> "s-" + Db.writeEffect(tx, scope, key, "in")))
                    .isInstanceOf(Outcome.Executed.class);
            assertThat(Db.claims(scope, key))
                    .as("not before the method's commit")
                    .isZero();
        });
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThat(Db.effects(scope, key)).isEqualTo(1);
    }

    @Test
    void outsideATransactionItOwnsItsOwn() {
        assertThat(idem(TransactionMode.DETECT)
                        .run(scope, key, fingerprint, tx -> "s-" + Db.writeEffect(tx, scope, key, "own")))
                .isInstanceOf(Outcome.Executed.class);
        assertThat(Db.claims(scope, key)).isEqualTo(1);
        assertThatThrownBy(() -> idem(TransactionMode.JOIN).run(scope, Db.freshKey(), fingerprint, tx -> "x"))
                .isInstanceOf(TransactionOwnershipException.class);
    }

    @Test
    void aReadOnlySpringTransactionIsRefused() {
        TransactionTemplate readOnly = new TransactionTemplate(new DataSourceTransactionManager(Db.POOL));
        readOnly.setReadOnly(true);
        readOnly.executeWithoutResult(status -> assertThatThrownBy(
                        () -> idem(TransactionMode.JOIN).run(scope, key, fingerprint, tx -> "x"))
                .isInstanceOf(TransactionOwnershipException.class)
                .hasMessageContaining("read-only"));
        assertThat(Db.claims(scope, key)).isZero();
    }
}
