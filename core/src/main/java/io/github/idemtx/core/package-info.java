/**
 * The contract of idemtx: scopes, keys and fingerprints, the outcomes of a call, the policy, result
 * codecs, the listener SPI and the exceptions. Nothing here needs a database or jOOQ.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.core;

import org.jspecify.annotations.NullMarked;
