package io.github.idemtx.jooq.internal.store;

import org.jspecify.annotations.Nullable;

/**
 * Which protocol statement a SQL text is. Every statement of the store layer starts with its kind's
 * tag, a comment such as {@code /* idemtx:claim *}{@code /}, which PostgreSQL ignores and which shows
 * in {@code pg_stat_activity}, {@code pg_stat_statements} and the server log, so an operator can tell
 * the library's statements apart; {@link #of} reads it back (the tests' fault hooks use it).
 */
public enum StatementKind {
    /** Step 1, sent with BEGIN: reads the key, tries its lock. */
    CLAIM("claim"),
    /** Step 2: waits, bounded, for the key's holder. */
    AWAIT("await"),
    /**
     * Step 3 for a fresh key: the plain INSERT, sent together with COMMIT; in
     * {@link io.github.idemtx.jooq.ClaimMode#WORK_FIRST} the same insert (with its wait bound) is the claim.
     */
    RECORD_AND_COMMIT("record+commit"),
    /** Step 3 otherwise: the upsert (expired row, failure, savepoint, a caller's transaction). */
    RECORD("record"),
    /** {@code purgeExpired}: deletes a batch of expired rows. */
    PURGE("purge"),
    /** External effect: the claim committed in flight (insert, or takeover of an expired row). */
    EFFECT_CLAIM("effect-claim"),
    /** External effect: reads the key's row. */
    EFFECT_READ("effect-read"),
    /** External effect: takes over an in-flight claim whose lease has passed. */
    EFFECT_TAKEOVER("effect-takeover"),
    /** External effect: the fenced record of the outcome (or an operator's resolution). */
    EFFECT_RECORD("effect-record"),
    /** External effect: ends the lease of a claim whose outcome is unknown. */
    EFFECT_RELEASE("effect-release"),
    /** External effect: the recoverer's batch, and the lists of unsettled claims. */
    EFFECT_SCAN("effect-scan"),
    /** External effect settled by statement: the claim marked sent, fenced, with its COMMIT, before each send. */
    EFFECT_SENT("effect-sent"),
    /** Statement settlement: a line recorded, the claim it names settled, a claim found absent. */
    STATEMENT_APPLY("statement-apply"),
    /** Statement settlement: the claims awaiting a statement, the lines, the statements applied. */
    STATEMENT_READ("statement-read"),
    /** Statement settlement: an operator's handling of a flagged line. */
    STATEMENT_MARK("statement-mark"),
    /**
     * {@link io.github.idemtx.jooq.ClaimMode#WORK_FIRST} after its insert met the key: the
     * rollback and the read of the live row, sent together.
     */
    REREAD("reread"),
    /** An operator's read of claims (inspect, list, backlog). */
    ADMIN_READ("admin-read"),
    /** An operator's forget, or the record of an operator's action. */
    ADMIN_WRITE("admin-write"),
    /** The outbox: a message added inside a work's transaction. */
    OUTBOX_ADD("outbox-add"),
    /** The outbox relay: leases a batch of due messages. */
    OUTBOX_LEASE("outbox-lease"),
    /** The outbox relay: marks a message delivered, failed or released; an operator's retry or discard. */
    OUTBOX_MARK("outbox-mark"),
    /** The outbox: reads messages and the backlog. */
    OUTBOX_READ("outbox-read"),
    /** The outbox relay: deletes delivered and discarded messages past the retention. */
    OUTBOX_PURGE("outbox-purge");

    private static final String PREFIX = "/* idemtx:";

    private final String tag;

    StatementKind(String name) {
        this.tag = PREFIX + name + " */ ";
    }

    /** The comment every statement of this kind starts with, e.g. {@code "/* idemtx:claim *}{@code / "}. */
    public String tag() {
        return tag;
    }

    /** The kind of {@code sql}, or null when it is not one of the library's statements. */
    public static @Nullable StatementKind of(@Nullable String sql) {
        if (sql == null || !sql.startsWith(PREFIX)) {
            return null;
        }
        for (StatementKind kind : values()) {
            if (sql.startsWith(kind.tag)) {
                return kind;
            }
        }
        return null;
    }
}
