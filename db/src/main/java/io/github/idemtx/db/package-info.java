/**
 * The claim table's Flyway migrations ({@code classpath:db/idempotency/postgresql}) and the small API
 * that applies them.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.db;

import org.jspecify.annotations.NullMarked;
