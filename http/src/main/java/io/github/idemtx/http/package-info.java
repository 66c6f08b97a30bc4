/**
 * HTTP conventions on top of the core contract: the {@code Idempotency-Key} header, the RFC 8785
 * request fingerprint, stored responses and problem+json.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.http;

import org.jspecify.annotations.NullMarked;
