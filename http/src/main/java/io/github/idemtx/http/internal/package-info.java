/**
 * Not API: the implementation behind the module's public types. Classes here are public only so
 * that the module's own packages can reach them; they change without notice, and the jar's
 * Automatic-Module-Name gives no promise about them.
 */
@NullMarked
package io.github.idemtx.http.internal;

import org.jspecify.annotations.NullMarked;
