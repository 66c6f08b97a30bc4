/**
 * The claim table's Flyway migrations ({@code classpath:db/idempotency/postgresql}), the small API
 * that applies them ({@link io.github.idemtx.db.IdempotencySchema}), and the claim table partitioned by
 * the day its keys carry ({@link io.github.idemtx.db.ClaimPartitions}).
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.db;

import org.jspecify.annotations.NullMarked;
