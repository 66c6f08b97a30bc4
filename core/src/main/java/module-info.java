/**
 * The contract of idemtx: value types, outcomes, the policy, result codecs, the listener SPI and the
 * exceptions. No database, no jOOQ; Jackson 2 only for {@link io.github.idemtx.core.JsonCodec}.
 */
// the qualified export below names modules built after this one, which javac cannot see yet
@SuppressWarnings("module")
module io.github.idemtx.core {
    requires static transitive org.jspecify;
    // JsonCodec only: optional, as in the pom (a user of JsonCodec.of(ObjectMapper, ...) requires it anyway)
    requires static com.fasterxml.jackson.databind;

    exports io.github.idemtx.core;
    // not API: shared with the library's own modules only
    exports io.github.idemtx.core.internal to
            io.github.idemtx.http,
            io.github.idemtx.keys,
            io.github.idemtx.jooq;
}
