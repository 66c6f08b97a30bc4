/**
 * Not API. The store layer: everything about the claim table and nothing about calls. The one set
 * of statements both front doors send (each tagged with its {@link
 * io.github.idemtx.jooq.internal.store.StatementKind}), rendered one way over the table that
 * {@link io.github.idemtx.jooq.internal.store.ClaimTable} names, the one state type ({@link
 * io.github.idemtx.jooq.internal.store.ClaimState}), the rows they read, the digests derived from
 * a key, the encoding of stored values and what the server's SQLSTATEs mean. Depends on no other
 * layer.
 */
@NullMarked
package io.github.idemtx.jooq.internal.store;

import org.jspecify.annotations.NullMarked;
