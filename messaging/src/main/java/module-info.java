/** What a message consumer does with each outcome of an idempotent call: acknowledge, retry or dead-letter. */
module io.github.idemtx.messaging {
    requires transitive io.github.idemtx.core;
    requires static transitive org.jspecify;

    exports io.github.idemtx.messaging;
}
