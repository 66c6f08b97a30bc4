/**
 * HTTP conventions: the {@code Idempotency-Key} header, the RFC 8785 request fingerprint, stored
 * responses and problem+json.
 */
module io.github.idemtx.http {
    requires transitive io.github.idemtx.core;
    requires static transitive org.jspecify;
    // RFC 8785 canonical JSON; the jar names no module, so this is the name taken from its file name
    requires java.json.canonicalization;

    exports io.github.idemtx.http;
}
