/**
 * idemtx over jOOQ and PostgreSQL: {@link io.github.idemtx.jooq.IdempotentTransaction} runs the claim,
 * the work and the result in one transaction; {@link io.github.idemtx.jooq.ExternalEffect} guards a
 * call to a remote system; the two service interfaces let a framework join its transactions and
 * translate its exceptions.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.jooq;

import org.jspecify.annotations.NullMarked;
