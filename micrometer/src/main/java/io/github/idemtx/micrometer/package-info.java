/**
 * Metrics and traces for idemtx calls, from the listener SPI to Micrometer.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.micrometer;

import org.jspecify.annotations.NullMarked;
