/**
 * Spring integration of idemtx: the factory of idempotent transactions that joins Spring-managed
 * transactions, the transaction detector and the failure translator registered as services.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.spring;

import org.jspecify.annotations.NullMarked;
