/**
 * The claim table's Flyway migrations and the small API that applies them.
 */
module io.github.idemtx.db {
    requires transitive io.github.idemtx.core;
    requires transitive java.sql;
    requires static transitive org.jspecify;
    // the jar names no module: this is the name taken from its file name
    requires flyway.core;

    exports io.github.idemtx.db;
    // classpath:db/idempotency/postgresql: the migrations' directory is a package of this module, which
    // Flyway's scanner can read only when it is open (checked on the module path against PostgreSQL)
    opens db.idempotency.postgresql;
}
