package io.github.idemtx.jooq;

import org.jooq.Configuration;
import org.jooq.exception.DataAccessException;

/**
 * Turns a database failure that {@link IdempotentTransaction} would throw as jOOQ's
 * {@link DataAccessException} into the exception type the application's framework uses, so a
 * failure of the library's own statements looks like every other failure the application sees (the
 * Spring module translates into Spring's {@code DataAccessException} hierarchy, as Spring Boot's
 * jOOQ auto-configuration does for the application's own statements).
 *
 * <p>Set one on {@link IdempotentTransaction.Builder#failureTranslator}, or register it as a
 * {@link java.util.ServiceLoader} service
 * ({@code META-INF/services/io.github.idemtx.jooq.FailureTranslator}): the builder takes the first
 * found when none is set. Without one, failures are thrown as they are. The library's own exceptions
 * (the {@code IdempotencyException}s) and what the work throws are never passed here, except the
 * work's jOOQ {@code DataAccessException}s, which are translated like the library's.
 */
@FunctionalInterface
public interface FailureTranslator {

    /**
     * Translates one failure.
     *
     * @param failure what would be thrown; its cause is usually the {@link java.sql.SQLException}
     * @param configuration the configuration of the {@code DSLContext} the instance was built with
     * @return what to throw instead, or {@code failure} itself; never null
     */
    RuntimeException translate(DataAccessException failure, Configuration configuration);
}
