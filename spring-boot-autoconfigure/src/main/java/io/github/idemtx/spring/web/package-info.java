/**
 * Spring MVC support for the {@code Idempotency-Key} header.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.spring.web;

import org.jspecify.annotations.NullMarked;
