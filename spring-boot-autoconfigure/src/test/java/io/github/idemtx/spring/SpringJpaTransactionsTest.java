package io.github.idemtx.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.spring.jpa.JpaPaymentsApplication;
import io.github.idemtx.spring.jpa.NotedPayments;
import io.github.idemtx.spring.jpa.NotedPayments.Then;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.impl.DataSourceConnectionProvider;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * A work that writes through {@code tx} and through JPA (a Spring Data repository, Hibernate), inside
 * {@code @Transactional} on {@code JpaTransactionManager}, with Spring Boot's jOOQ over the same
 * DataSource: both writes commit with the caller, or vanish with a rejected work or the caller's
 * rollback. Hibernate holds an entity's INSERT until it flushes (by default at the caller's commit);
 * without the detector's flush, a rejected work's entity committed with the caller after the
 * library had rolled back to its savepoint.
 */
@SpringBootTest(classes = JpaPaymentsApplication.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
// the server is shared with other builds: its pool's connections go back when the class is done,
// not when the JVM ends (each test class's dynamic properties make a context of its own)
@DatabaseTest
@DirtiesContext
class SpringJpaTransactionsTest {

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        JpaPaymentsApplication.databaseProperties().forEach((k, v) -> registry.add(k, () -> v));
    }

    @Autowired
    NotedPayments payments;

    @Autowired
    PlatformTransactionManager transactionManager;

    @Autowired
    DSLContext dsl;

    @Autowired
    DataSource dataSource;

    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());
    private final Fingerprint fingerprint = Fingerprint.sha256("request");

    private static IdempotencyKey key() {
        return IdempotencyKey.of(UUID.randomUUID().toString());
    }

    /** What another session sees now: payments with the reference, claims of the key, notes with the text. */
    private int[] committed(IdempotencyKey key, String reference) {
        return new int[] {
            Committed.count("select count(*) from {schema}.payment where reference = ?", reference),
            Committed.count(
                    "select count(*) from {schema}.idempotency_claim where scope = ? and idem_key = ?",
                    scope.value(),
                    key.value()),
            Committed.count("select count(*) from {schema}.payment_note where note = ?", reference)
        };
    }

    /** The SQLSTATEs in {@code e}'s causes and suppressed exceptions, all the way down. */
    private static Set<String> sqlStates(Throwable e) {
        Set<String> states = new HashSet<>();
        Deque<Throwable> todo = new ArrayDeque<>(List.of(e));
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        while (!todo.isEmpty()) {
            Throwable t = todo.pop();
            if (!seen.add(t)) {
                continue;
            }
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                states.add(sql.getSQLState());
            }
            if (t.getCause() != null) {
                todo.push(t.getCause());
            }
            todo.addAll(List.of(t.getSuppressed()));
        }
        return states;
    }

    @Test
    void theSetUpIsJpaTransactionsWithJooqOverTheSameDataSource() {
        assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);
        assertThat(dsl.configuration().connectionProvider())
                .isInstanceOfSatisfying(
                        DataSourceConnectionProvider.class,
                        p -> assertThat(p.dataSource())
                                .isInstanceOfSatisfying(
                                        TransactionAwareDataSourceProxy.class,
                                        proxy -> assertThat(proxy.getTargetDataSource())
                                                .isSameAs(dataSource)));
    }

    @Test
    void aRejectedWorkLeavesNeitherItsTxWriteNorItsEntityAndTheRejectionIsRecorded() {
        IdempotencyKey key = key();
        String reference = "rejected-" + key.value();
        Outcome<String> outcome = payments.pay(scope, key, fingerprint, reference, Then.REJECT);
        assertThat(outcome)
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class,
                        r -> assertThat(r.failure().code()).isEqualTo("declined"));
        assertThat(committed(key, reference)).as("payment, claim, note").containsExactly(0, 1, 0);
        assertThat(payments.pay(scope, key, fingerprint, reference, Then.RETURN))
                .as("the rejection replays")
                .isInstanceOf(Outcome.Rejected.class);
        assertThat(committed(key, reference)).containsExactly(0, 1, 0);
    }

    @Test
    void anExecutedWorkCommitsItsTxWriteAndItsEntityWithTheCallerAndAReplayWritesNothing() {
        IdempotencyKey key = key();
        String reference = "executed-" + key.value();
        Outcome<String> outcome = payments.pay(scope, key, fingerprint, reference, Then.RETURN);
        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(committed(key, reference)).as("payment, claim, note").containsExactly(1, 1, 1);
        String id = ((Outcome.Executed<String>) outcome).value();
        assertThat(payments.pay(scope, key, fingerprint, reference, Then.RETURN))
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(id));
        assertThat(committed(key, reference)).containsExactly(1, 1, 1);
    }

    @Test
    void theCallersRollbackAfterRunRemovesTheTxWriteTheEntityAndTheClaim() {
        IdempotencyKey key = key();
        String reference = "rolled-back-" + key.value();
        assertThatThrownBy(() -> payments.pay(scope, key, fingerprint, reference, Then.FAIL_AFTER_RUN))
                .hasMessage("the caller failed after run");
        assertThat(committed(key, reference)).as("payment, claim, note").containsExactly(0, 0, 0);
        assertThat(payments.pay(scope, key, fingerprint, reference, Then.RETURN))
                .as("the key is free again")
                .isInstanceOf(Outcome.Executed.class);
        assertThat(committed(key, reference)).containsExactly(1, 1, 1);
    }

    @Test
    void aWorkThatThrowsLeavesNeitherWriteAndTheCallersTransactionCommitsWhatItDoesAfterwards() {
        IdempotencyKey key = key();
        String reference = "failed-" + key.value();
        String callersNote = "callers-" + key.value();
        assertThat(payments.payCatchingFailureThenNote(scope, key, fingerprint, reference, Then.THROW, callersNote))
                .isEqualTo("the work failed");
        assertThat(committed(key, reference))
                .as("payment, claim, the work's note")
                .containsExactly(0, 0, 0);
        assertThat(committed(key, callersNote)[2])
                .as("the caller's note after the failure")
                .isEqualTo(1);
    }

    @Test
    void aFlushThatFailsAfterTheWorkFailsTheCallAndNothingOfItCommits() {
        IdempotencyKey key = key();
        String reference = "bad-note-" + key.value();
        // the empty note passes Hibernate and fails the table's check: only at the flush after the work
        assertThatThrownBy(() -> payments.payWithNote(scope, key, fingerprint, reference, ""))
                .isInstanceOf(DataAccessException.class)
                .satisfies(e -> assertThat(sqlStates(e))
                        .as("the check's violation is told")
                        .contains("23514"));
        assertThat(committed(key, reference)).as("payment, claim, note").containsExactly(0, 0, 0);
        assertThat(payments.pay(scope, key, fingerprint, reference, Then.RETURN))
                .as("the key is free")
                .isInstanceOf(Outcome.Executed.class);
    }

    @Test
    void theCallersOwnPendingEntityFromBeforeRunSurvivesARejectedWork() {
        // flushed after the work only, it would be sent inside the savepoint and undone with the work,
        // while Hibernate took it as written: lost without an error
        IdempotencyKey key = key();
        String reference = "rejected-" + key.value();
        String callersNote = "callers-" + key.value();
        assertThat(payments.noteThenPay(scope, key, fingerprint, callersNote, reference, Then.REJECT))
                .isInstanceOf(Outcome.Rejected.class);
        assertThat(committed(key, reference))
                .as("payment, claim, the work's note")
                .containsExactly(0, 1, 0);
        assertThat(committed(key, callersNote)[2]).as("the caller's note").isEqualTo(1);
    }

    @Test
    void aReadOnlyJpaTransactionIsRefusedBeforeAnythingRunsNotFailedByFlushingTheCallersEntity() {
        IdempotencyKey key = key();
        String reference = "read-only-" + key.value();
        assertThatThrownBy(() ->
                        payments.noteThenPayReadOnly(scope, key, fingerprint, "callers-" + key.value(), reference))
                .isInstanceOf(TransactionOwnershipException.class)
                .hasMessageContaining("read-only");
        assertThat(committed(key, reference)).containsExactly(0, 0, 0);
    }

    @Test
    void theCallersOwnPendingEntityCommitsWithAnExecutedWork() {
        IdempotencyKey key = key();
        String reference = "executed-" + key.value();
        String callersNote = "callers-" + key.value();
        assertThat(payments.noteThenPay(scope, key, fingerprint, callersNote, reference, Then.RETURN))
                .isInstanceOf(Outcome.Executed.class);
        assertThat(committed(key, reference)).containsExactly(1, 1, 1);
        assertThat(committed(key, callersNote)[2]).isEqualTo(1);
    }
}
