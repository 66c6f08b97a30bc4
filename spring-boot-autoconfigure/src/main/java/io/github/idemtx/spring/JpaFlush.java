package io.github.idemtx.spring;

import jakarta.persistence.EntityManager;
import org.springframework.orm.jpa.EntityManagerFactoryUtils;
import org.springframework.orm.jpa.EntityManagerHolder;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The JPA part of {@link SpringTransactionDetector}'s flush, in a class of its own so that the
 * detector loads without spring-orm and the JPA API (optional dependencies of this module): it is
 * touched only after both were found on the class path.
 */
final class JpaFlush {

    private JpaFlush() {}

    /**
     * Flushes every {@code EntityManager} bound to the thread that takes part in a transaction.
     * {@code JpaTransactionManager} binds its {@link EntityManagerHolder} as a resource and registers
     * no synchronization that would flush it, so {@code triggerFlush()} alone never reaches it. One
     * bound without a transaction (open-in-view's, under another transaction manager) is left alone:
     * JPA refuses to flush it.
     */
    static void flushBoundEntityManagers() {
        for (Object resource :
                TransactionSynchronizationManager.getResourceMap().values()) {
            if (resource instanceof EntityManagerHolder holder) {
                EntityManager entityManager;
                try {
                    entityManager = holder.getEntityManager();
                } catch (IllegalStateException noEntityManager) {
                    continue; // a holder of a stateless agent: no persistence context to flush
                }
                if (entityManager.isOpen() && entityManager.isJoinedToTransaction()) {
                    try {
                        entityManager.flush();
                    } catch (RuntimeException e) {
                        // as Spring's own flush does: the caller hears Spring's DataAccessException
                        RuntimeException translated = EntityManagerFactoryUtils.convertJpaAccessExceptionIfPossible(e);
                        throw translated != null ? translated : e;
                    }
                }
            }
        }
    }
}
