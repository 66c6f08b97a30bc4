/**
 * Not API: implementation shared by the library's own modules (the HTTP conventions and the
 * derived keys both write JSON text exactly as {@link io.github.idemtx.core.internal.JsonText}
 * does). Public only so that those modules can reach it: module-info.java exports it to them alone.
 * It changes without notice.
 */
@NullMarked
package io.github.idemtx.core.internal;

import org.jspecify.annotations.NullMarked;
