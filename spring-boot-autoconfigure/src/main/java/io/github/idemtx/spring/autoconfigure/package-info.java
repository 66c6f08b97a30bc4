/**
 * Spring Boot auto-configuration for idemtx and its {@code idemtx.*} properties.
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.spring.autoconfigure;

import org.jspecify.annotations.NullMarked;
