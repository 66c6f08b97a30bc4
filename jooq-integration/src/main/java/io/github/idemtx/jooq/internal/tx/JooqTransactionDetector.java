package io.github.idemtx.jooq.internal.tx;

import io.github.idemtx.jooq.TransactionDetector;
import java.lang.reflect.Field;
import java.util.Map;
import org.jooq.Configuration;
import org.jooq.impl.ThreadLocalTransactionProvider;
import org.jspecify.annotations.Nullable;

/**
 * jOOQ's own transaction styles:
 * <ul>
 *   <li>the {@code Configuration} of a {@code transaction(cfg -> ...)} run by jOOQ's
 *       {@code DefaultTransactionProvider} (also nested ones): jOOQ keeps the transaction's
 *       connection in the configuration's data while the transaction is open;
 *   <li>{@code ThreadLocalTransactionProvider}: a transaction is open on the calling thread when
 *       the provider has bound a connection to it. jOOQ exposes that only in a package-private
 *       field, read here by reflection; where the module system denies it (jOOQ on the module path
 *       without {@code --add-opens org.jooq/org.jooq.impl}), the answer is
 *       {@link Detection#UNKNOWN} and ownership is decided, or refused, without it.
 * </ul>
 * Stateless apart from the reflective handle; thread-safe.
 */
public final class JooqTransactionDetector implements TransactionDetector {

    /** The key under which jOOQ's DefaultTransactionProvider keeps an open transaction's connection. */
    private static final String OPEN_TRANSACTION_KEY = "DATA_DEFAULT_TRANSACTION_PROVIDER_CONNECTION";

    private static final @Nullable Field THREAD_BOUND_CONNECTION = threadBoundConnectionField();

    @Override
    public Detection detect(Configuration configuration) {
        if (jooqTransactionOpen(configuration.data())) {
            return Detection.ACTIVE;
        }
        if (configuration.transactionProvider() instanceof ThreadLocalTransactionProvider threadLocal) {
            return threadBoundConnection(threadLocal);
        }
        return Detection.UNKNOWN;
    }

    /** Whether reflection on ThreadLocalTransactionProvider works here. */
    public static boolean seesThreadLocalTransactions() {
        return THREAD_BOUND_CONNECTION != null;
    }

    private static boolean jooqTransactionOpen(Map<Object, Object> data) {
        if (data.isEmpty()) {
            return false;
        }
        for (Map.Entry<Object, Object> e : data.entrySet()) {
            if (e.getKey() instanceof Enum<?> key && key.name().equals(OPEN_TRANSACTION_KEY) && e.getValue() != null) {
                return true;
            }
        }
        return false;
    }

    private static Detection threadBoundConnection(ThreadLocalTransactionProvider provider) {
        if (THREAD_BOUND_CONNECTION == null) {
            return Detection.UNKNOWN;
        }
        try {
            ThreadLocal<?> bound = (ThreadLocal<?>) THREAD_BOUND_CONNECTION.get(provider);
            return bound != null && bound.get() != null ? Detection.ACTIVE : Detection.NONE;
        } catch (IllegalAccessException | RuntimeException e) {
            return Detection.UNKNOWN;
        }
    }

    private static @Nullable Field threadBoundConnectionField() {
        try {
            Field f = ThreadLocalTransactionProvider.class.getDeclaredField("localTxConnection");
            f.setAccessible(true);
            return ThreadLocal.class.isAssignableFrom(f.getType()) ? f : null;
        } catch (NoSuchFieldException | RuntimeException e) {
            return null; // another jOOQ version, or the module system refuses: UNKNOWN, never a guess
        }
    }
}
