-- The claim row is written once, when the work completes, together with COMMIT; until then the
-- claiming transaction holds a transaction-level advisory lock on (scope, key), which is what a
-- concurrent duplicate waits on. V1 inserted a "running" row first and updated it at completion:
-- two row versions, two statements' execution and a PL/pgSQL call on every first execution.
--
-- The protocol (every writer of a claim row follows it; the purge only deletes expired rows):
--   1. In the first statement of the transaction, read the row; if it is live (not expired), it
--      is the answer and nothing is locked. Otherwise take the key's lock without waiting.
--      The lock is pg_advisory_xact_lock(bigint) on a 64-bit id of (scope, key): the first 8 bytes
--      (big-endian, signed) of SHA-256 over UTF-8 scope, a 0 byte, UTF-8 key. A collision costs
--      a needless wait, never a wrong answer; the hash keeps clients from aiming at others' keys.
--   2. Only if someone holds the lock: idempotency_await waits for the holder to end (bounded by
--      the caller's wait, SQLSTATE 55P03 past it), then reads the row again, or takes the lock.
--   3. Holding the lock, run the work; then INSERT the completed row, sent together with COMMIT
--      (or, for an expired row, INSERT ... ON CONFLICT DO UPDATE ... WHERE expired, then COMMIT).
--      A row committed by someone else between the read and the lock makes the INSERT fail
--      (unique violation) or the upsert return nothing, and the transaction rolls back: the unique
--      index stays the backstop; the lock only keeps duplicates from running the work to no purpose.
--   A deterministic failure is recorded after the work's rollback (which released the lock) with
--   the upsert alone: if a live row got there first, that row is the answer.
--
-- expires_at is now the moment of expiry (completion + TTL), written with the row. V1 rows got
-- it at the claim, with the work's duration added when checked; fold that duration in once (on a
-- large table this rewrites every completed row: migrate at a quiet time).
--
-- V1's idempotency_acquire stays for now, so instances of the previous version keep working
-- during a rolling upgrade: the two protocols still exclude each other through the unique index
-- (a V1 caller waits on a V2 caller's INSERT, a V2 caller's INSERT fails on a V1 caller's row and
-- its retry replays it), and V1 only ever expires a V2 row later than V2 does. A later migration
-- drops it.

/* [jooq ignore start] */
UPDATE idempotency_claim
   SET expires_at = expires_at + (completed_at - created_at)
 WHERE completed_at > created_at;

-- Step 2 of the protocol, for a caller whose first statement found the key's lock held: waits for
-- the holder to end and reports the key's state then. All waiting together is bounded by p_wait_ms
-- (SQLSTATE 55P03 when it runs out); lock_timeout is set (transaction-local) to what is left
-- before each wait and the caller's value is put back before returning (an error rolls the
-- caller's transaction or savepoint back, which undoes the setting too).
--
-- Waiters wait on a shared lock taken inside a subtransaction that is rolled back at once, so they
-- hold nothing afterwards and all wake together when the holder ends; each then reads the row, and
-- only if there is no live row does one of them take the lock (the others wait again).
--
-- Returns: live = true and the live row (result only when the fingerprints match) when the key is
-- answered; otherwise the caller now holds the key's lock, and live is false when an expired row is
-- there to take over, null when there is no row.
CREATE FUNCTION idempotency_await(
    p_scope       varchar,
    p_key         varchar,
    p_lock_id     bigint,
    p_fingerprint bytea,
    p_wait_ms     integer,
    OUT live         boolean,
    OUT state        smallint,
    OUT fingerprint  bytea,
    OUT result       bytea,
    OUT completed_at timestamptz)
LANGUAGE plpgsql
VOLATILE
AS $fn$
DECLARE
    saved    text := current_setting('lock_timeout');
    deadline timestamptz := clock_timestamp() + p_wait_ms * interval '1 millisecond';
    left_ms  bigint;
    held     "${flyway:defaultSchema}".idempotency_claim%ROWTYPE;
BEGIN
    LOOP
        left_ms := ceil(extract(epoch FROM deadline - clock_timestamp()) * 1000);
        IF left_ms <= 0 THEN
            RAISE EXCEPTION 'waited % ms for the holder of this idempotency key', p_wait_ms
                USING ERRCODE = 'lock_not_available';
        END IF;
        PERFORM set_config('lock_timeout', left_ms || 'ms', true);
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(p_lock_id);
            RAISE SQLSTATE 'IDMW0'; -- roll the subtransaction back: it releases the shared lock
        EXCEPTION WHEN SQLSTATE 'IDMW0' THEN
            NULL;
        END;
        PERFORM set_config('lock_timeout', saved, true);

        -- Under READ COMMITTED each statement here takes a new snapshot and sees what the holder
        -- committed. Under REPEATABLE READ and SERIALIZABLE the snapshot is older than the holder's
        -- commit: give up now, before the caller runs its work for nothing; the retry sees the row.
        IF current_setting('transaction_isolation') <> 'read committed' THEN
            RAISE EXCEPTION 'a concurrent call with this idempotency key ended after this transaction''s snapshot; retry'
                USING ERRCODE = 'serialization_failure';
        END IF;
        SELECT * INTO held FROM "${flyway:defaultSchema}".idempotency_claim c
         WHERE c.scope = p_scope AND c.idem_key = p_key;
        IF FOUND AND held.expires_at > clock_timestamp() THEN
            live := true;
            state := held.state;
            fingerprint := held.fingerprint;
            result := CASE WHEN held.fingerprint = p_fingerprint THEN held.result END;
            completed_at := held.completed_at;
            RETURN;
        END IF;
        IF pg_try_advisory_xact_lock(p_lock_id) THEN
            -- read again under the lock: a holder may have committed since the read above
            SELECT * INTO held FROM "${flyway:defaultSchema}".idempotency_claim c
             WHERE c.scope = p_scope AND c.idem_key = p_key;
            IF NOT FOUND THEN
                RETURN; -- all null: no row, and the lock is ours
            END IF;
            live := held.expires_at > clock_timestamp();
            state := held.state;
            fingerprint := held.fingerprint;
            result := CASE WHEN live AND held.fingerprint = p_fingerprint THEN held.result END;
            completed_at := held.completed_at;
            RETURN;
        END IF;
        -- no live row, and another waiter took the lock first: wait for it in turn, within the
        -- same deadline
    END LOOP;
END
$fn$;

/* [jooq ignore stop] */
