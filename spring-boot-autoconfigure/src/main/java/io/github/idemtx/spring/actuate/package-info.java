/**
 * Spring Boot Actuator support for idemtx: the {@code idempotency} endpoint (see, list, resolve and
 * forget claims through {@link io.github.idemtx.jooq.ClaimAdmin}) and the {@code idempotency} health
 * indicator (the reconciliation backlog and the oldest in-flight claim against thresholds).
 *
 * <p>Null-marked: no parameter, return value or field is null unless its type says {@code @Nullable}.
 */
@NullMarked
package io.github.idemtx.spring.actuate;

import org.jspecify.annotations.NullMarked;
