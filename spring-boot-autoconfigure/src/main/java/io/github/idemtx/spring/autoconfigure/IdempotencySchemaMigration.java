package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.db.IdempotencySchema;
import javax.sql.DataSource;
import org.springframework.beans.factory.InitializingBean;

/**
 * Applies the library's migrations to the claim table's schema when the context starts
 * ({@link IdempotencySchema#migrate}); its history table, {@code idempotency_schema_history}, is
 * apart from the application's. Switched off with {@code idemtx.migration.enabled=false}.
 */
public class IdempotencySchemaMigration implements InitializingBean {

    private final DataSource dataSource;
    private final String schema;
    private volatile int applied = -1;

    /**
     * A migration that runs when the bean is initialised.
     *
     * @param dataSource where to migrate
     * @param schema the claim table's schema, a plain PostgreSQL identifier
     */
    public IdempotencySchemaMigration(DataSource dataSource, String schema) {
        this.dataSource = dataSource;
        this.schema = schema;
    }

    @Override
    public void afterPropertiesSet() {
        applied = IdempotencySchema.migrate(dataSource, schema);
    }

    /** {@return how many migrations the start-up applied (0: the table was up to date), -1 before it ran} */
    public int applied() {
        return applied;
    }

    /** {@return the schema migrated} */
    public String schema() {
        return schema;
    }
}
