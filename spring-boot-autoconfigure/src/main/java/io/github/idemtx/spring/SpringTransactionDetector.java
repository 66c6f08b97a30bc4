package io.github.idemtx.spring;

import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.jooq.TransactionDetector;
import javax.sql.DataSource;
import org.jooq.Configuration;
import org.jooq.impl.DataSourceConnectionProvider;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionSynchronizationManager;

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
 */
public final class SpringTransactionDetector implements TransactionDetector {

    @Override
    public Detection detect(Configuration configuration) {
        if (!(configuration.connectionProvider() instanceof DataSourceConnectionProvider provider)) {
            return Detection.UNKNOWN;
        }
        DataSource dataSource = provider.dataSource();
        if (dataSource instanceof TransactionAwareDataSourceProxy proxy) {
            DataSource target = proxy.getTargetDataSource();
            return TransactionSynchronizationManager.isActualTransactionActive()
                    && target != null && TransactionSynchronizationManager.hasResource(target)
                    ? Detection.ACTIVE : Detection.NONE;
        }
        if (TransactionSynchronizationManager.isActualTransactionActive()
                && TransactionSynchronizationManager.hasResource(dataSource)) {
            throw new TransactionOwnershipException(null, null, "refused before running anything: a Spring"
                    + " transaction is open on this DSLContext's DataSource, but the DSLContext takes its connections"
                    + " from the DataSource itself, not from the transaction, so the call would commit apart from it:"
                    + " build the DSLContext over a TransactionAwareDataSourceProxy (Spring Boot's jOOQ"
                    + " auto-configuration does), or inject the application's DSLContext");
        }
        return Detection.UNKNOWN;
    }
}
