/**
 * Not API. The transaction layer: running a unit of work in a transaction of the library's own
 * (with retries) or in a savepoint of a caller's, the boundary verbs, who owns the transaction, and
 * the guard that keeps a work from ending it. Depends on the store layer only for what the
 * server's SQLSTATEs mean.
 */
@NullMarked
package io.github.idemtx.jooq.internal.tx;

import org.jspecify.annotations.NullMarked;
