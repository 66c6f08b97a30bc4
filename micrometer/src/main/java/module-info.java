/** Metrics and traces for idemtx calls, from the listener SPI to Micrometer. */
module io.github.idemtx.micrometer {
    requires transitive io.github.idemtx.core;
    requires static transitive org.jspecify;
    // in the API: the builder takes a MeterRegistry and an ObservationRegistry
    requires transitive micrometer.core;
    requires transitive micrometer.observation;

    exports io.github.idemtx.micrometer;
}
