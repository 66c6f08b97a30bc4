package io.github.idemtx.spring;

import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.jooq.TransactionDetector;
import javax.sql.DataSource;
import org.jooq.Configuration;
import org.jooq.impl.DataSourceConnectionProvider;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionSynchronizationUtils;
import org.springframework.util.ClassUtils;

/**
 * Tells {@code IdempotentTransaction.run} whether a Spring-managed transaction is open on the calling
 * thread for the {@code DSLContext}'s DataSource ({@code @Transactional}, {@code TransactionTemplate},
 * any {@code PlatformTransactionManager} that binds a JDBC connection to the thread, such as
 * {@code DataSourceTransactionManager}, {@code JdbcTransactionManager} or {@code JpaTransactionManager}):
 * then {@code run} joins it, even as the transaction's first statement; when none is, {@code run}
 * owns one. Registered as a {@link java.util.ServiceLoader} service, so every
 * {@code IdempotentTransaction} built while this module is on the class path asks it, including
 * those an application builds itself.
 *
 * <p>It speaks for a {@code DSLContext} over a {@link DataSourceConnectionProvider} whose DataSource
 * is a {@link TransactionAwareDataSourceProxy} (what Spring Boot's jOOQ auto-configuration builds).
 * A {@code DSLContext} over the bare DataSource inside a Spring transaction on that same DataSource
 * would take a different connection than the transaction's, so its call would be split off the
 * caller's transaction: that is refused. Anything else is not Spring's to answer ({@code UNKNOWN}).
 *
 * <p><b>Writes held in memory.</b> A JPA persistence context (Hibernate through Spring Data
 * repositories, say) holds inserts and updates until it flushes, which by default is at the caller's
 * commit: long after the library rolled back to its savepoint for a rejected work. So, for a call
 * that joins, the library asks this detector's {@link #flush} to push out what the transaction holds
 * in memory ({@link TransactionSynchronizationUtils#triggerFlush()}, and every JPA
 * {@code EntityManager} bound to the transaction, which {@code JpaTransactionManager} binds without a
 * flushing synchronization) twice: before the call's savepoint, so the caller's own pending writes
 * land outside it and are not undone with a rejected work; and after the work, so the work's land
 * inside it and are undone with it, or kept with it. A flush that finds nothing pending sends
 * nothing; one that fails fails the call. The JPA part is active only where spring-orm and the JPA
 * API are on the class path.
 *
 * <p>The persistence context itself is not rolled back with the savepoint (as with Spring's
 * {@code NESTED} propagation on {@code JpaTransactionManager}): after a work whose writes were
 * undone, entities it saved or changed are still managed with the state it gave them; do not reuse
 * them in the caller's transaction (or clear the {@code EntityManager}).
 */
public final class SpringTransactionDetector implements TransactionDetector {

    /** Stateless; {@link java.util.ServiceLoader} creates it. */
    public SpringTransactionDetector() {}

    private static final boolean JPA =
            present("org.springframework.orm.jpa.EntityManagerHolder") && present("jakarta.persistence.EntityManager");

    private static boolean present(String className) {
        return ClassUtils.isPresent(className, SpringTransactionDetector.class.getClassLoader());
    }

    @Override
    public Detection detect(Configuration configuration) {
        if (!(configuration.connectionProvider() instanceof DataSourceConnectionProvider provider)) {
            return Detection.UNKNOWN;
        }
        DataSource dataSource = provider.dataSource();
        if (dataSource instanceof TransactionAwareDataSourceProxy proxy) {
            DataSource target = proxy.getTargetDataSource();
            if (TransactionSynchronizationManager.isActualTransactionActive()
                    && target != null
                    && TransactionSynchronizationManager.hasResource(target)) {
                return Detection.ACTIVE;
            }
            return Detection.NONE;
        }
        if (TransactionSynchronizationManager.isActualTransactionActive()
                && TransactionSynchronizationManager.hasResource(dataSource)) {
            throw new TransactionOwnershipException(
                    null,
                    null,
                    "refused before running anything: a Spring"
                            + " transaction is open on this DSLContext's DataSource, but the DSLContext takes its connections"
                            + " from the DataSource itself, not from the transaction, so the call would commit apart from it:"
                            + " build the DSLContext over a TransactionAwareDataSourceProxy (Spring Boot's jOOQ"
                            + " auto-configuration does), or inject the application's DSLContext");
        }
        return Detection.UNKNOWN;
    }

    /**
     * Pushes out the writes the current Spring transaction holds in memory: its synchronizations'
     * {@code flush()} and every JPA {@code EntityManager} bound to it.
     */
    @Override
    public void flush(Configuration configuration) {
        flushPending();
    }

    private static void flushPending() {
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationUtils.triggerFlush();
        }
        if (JPA) {
            JpaFlush.flushBoundEntityManagers();
        }
    }
}
