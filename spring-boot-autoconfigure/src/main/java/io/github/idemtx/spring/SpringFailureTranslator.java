package io.github.idemtx.spring;

import io.github.idemtx.jooq.FailureTranslator;
import java.sql.SQLException;
import org.jooq.Configuration;
import org.jooq.exception.DataAccessException;
import org.springframework.jdbc.UncategorizedSQLException;
import org.springframework.jdbc.support.SQLErrorCodeSQLExceptionTranslator;
import org.springframework.jdbc.support.SQLExceptionTranslator;
import org.springframework.jdbc.support.SQLStateSQLExceptionTranslator;

/**
 * Throws a failure of the library's statements as Spring's {@code DataAccessException} hierarchy,
 * translated from its {@link SQLException} the way Spring Boot's jOOQ auto-configuration translates
 * the application's own statements (by the error codes of the configuration's dialect family).
 * Registered as a {@link java.util.ServiceLoader} service. A failure without an SQLException cause is
 * thrown as it is.
 */
public final class SpringFailureTranslator implements FailureTranslator {

    /** Stateless; {@link java.util.ServiceLoader} creates it. */
    public SpringFailureTranslator() {}

    @Override
    @SuppressWarnings("ReferenceEquality") // whether failure itself is the cause, not an equal one
    public RuntimeException translate(DataAccessException failure, Configuration configuration) {
        SQLException sql = failure.getCause(SQLException.class);
        if (sql == null) {
            return failure;
        }
        String database = configuration.dialect().thirdParty().springDbName();
        SQLExceptionTranslator translator = database != null
                ? new SQLErrorCodeSQLExceptionTranslator(database)
                : new SQLStateSQLExceptionTranslator();
        String task = "idemtx: " + failure.getMessage();
        org.springframework.dao.DataAccessException translated = translator.translate(task, null, sql);
        RuntimeException result = translated != null ? translated : new UncategorizedSQLException(task, null, sql);
        if (result.getCause() != failure) {
            result.addSuppressed(failure);
        }
        return result;
    }
}
