/** Derived and downstream idempotency keys. */
module io.github.idemtx.keys {
    requires transitive io.github.idemtx.core;
    requires static transitive org.jspecify;
    // case folding for FieldNormalizer.FREE_TEXT and CREDITOR_KEY: optional, as in the pom
    requires static com.ibm.icu;

    exports io.github.idemtx.keys;
}
