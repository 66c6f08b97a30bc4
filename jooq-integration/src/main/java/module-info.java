/**
 * idemtx over jOOQ and PostgreSQL: {@code IdempotentTransaction} (claim, work and result in one
 * transaction) and {@code ExternalEffect} (a remote call guarded by a committed claim). Only the API
 * package is exported; the store, transaction and flow layers and jOOQ's generated classes of the
 * claim table ({@code internal.schema}) stay inside the module.
 */
module io.github.idemtx.jooq {
    requires transitive io.github.idemtx.core;
    // in the API: the builders take the claim table's partitions (ClaimPartitions)
    requires transitive io.github.idemtx.db;
    requires static transitive org.jspecify;
    // in the API: the builders take a DSLContext, the SPIs a jOOQ Configuration
    requires transitive org.jooq;
    requires transitive java.sql;
    // PostgreSQL only: pgjdbc's connection tells whether a transaction is open; the jar names
    // org.postgresql.jdbc as its Automatic-Module-Name
    requires org.postgresql.jdbc;
    // compile time only: the JAXB annotations on jOOQ's Settings, which jOOQ requires static too
    requires static jakarta.xml.bind;
    // the outbox's HTTP transport (HttpOutboxTransport)
    requires transitive java.net.http;

    exports io.github.idemtx.jooq;
    exports io.github.idemtx.jooq.outbox;

    // found on the class loader or module path, e.g. the Spring module's
    uses io.github.idemtx.jooq.TransactionDetector;
    uses io.github.idemtx.jooq.FailureTranslator;
}
