/**
 * Not API: the implementation behind the module's public types. Classes here are public only so
 * that the module's own packages can reach them; module-info.java does not export the package, and
 * they change without notice.
 */
@NullMarked
package io.github.idemtx.http.internal;

import org.jspecify.annotations.NullMarked;
