/**
 * Derived and downstream idempotency keys: the key a call passes on to another service, computed
 * from the caller's key.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.keys;

import org.jspecify.annotations.NullMarked;
