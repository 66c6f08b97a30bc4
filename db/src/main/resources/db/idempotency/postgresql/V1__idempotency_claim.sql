-- The claim table: one row per (scope, key). Rows become visible to other transactions only when
-- the transaction that claimed them commits, together with the business write and the result.
--
-- state: 0 = claimed, work running (never committed in transactional mode),
--        1 = succeeded (result holds the encoded value, or NULL for a null value),
--        2 = failed deterministically (result holds the encoded failure).
--
-- Names are unqualified: the migrations run with the target schema as the default schema.
-- Text columns use the "C" collation: keys are compared byte-wise, which is what they mean and
-- what costs least in the primary key.
CREATE TABLE idempotency_claim (
    scope        varchar(255) /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    idem_key     varchar(255) /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    fingerprint  bytea        NOT NULL,
    state        smallint     NOT NULL,
    result       bytea,
    created_at   timestamptz  NOT NULL,
    completed_at timestamptz,
    expires_at   timestamptz  NOT NULL,
    CONSTRAINT idempotency_claim_pk PRIMARY KEY (scope, idem_key),
    CONSTRAINT idempotency_claim_state_known CHECK (state IN (0, 1, 2))
    /* [jooq ignore start] */,
    CONSTRAINT idempotency_claim_fingerprint_is_sha256 CHECK (octet_length(fingerprint) = 32)
    /* [jooq ignore stop] */
)
/* [jooq ignore start] */
-- room on each page for the completion to be a HOT update of the row the claim inserted
WITH (fillfactor = 90)
/* [jooq ignore stop] */
;

-- Purging expired claims walks this index instead of the table.
CREATE INDEX idempotency_claim_expires_at_idx ON idempotency_claim (expires_at);

/* [jooq ignore start] */
-- Claims (scope, key) for the calling transaction, or reports the claim that already holds it.
--
-- One round trip does the whole decision: insert the claim; on conflict wait for the holder to
-- finish, then read the committed row; take over an expired row atomically. All waiting together
-- is bounded by p_wait_ms (SQLSTATE 55P03 when it runs out): before each statement that may wait,
-- lock_timeout is set (transaction-local) to what is left of the bound. The caller's value is put
-- back before the function returns, and an error rolls the caller's transaction or savepoint back,
-- which undoes the setting too: the bound never reaches the caller's later statements nor the
-- pooled connection. (A SET clause on the function would do the same, at the price of saving and
-- restoring the whole configuration on every call.)
--
-- A claim expires p_ttl_ms after it completed: expires_at is set when the claim is made, and the
-- time the work took (completed_at - created_at) is added when expiry is checked, so completing
-- never has to touch the indexed expires_at (the completion stays a HOT update).
--
-- p_state and p_result are what a new row holds: 0 and NULL to claim before running the work,
-- or 2 and the encoded failure to record a deterministic failure directly.
--
-- Returns one row (OUT parameters): claimed = true when this transaction now holds the key (completed_at is set when
-- p_state is final); otherwise the holder's state, fingerprint, completion time and (only when the
-- fingerprints match) result.
CREATE FUNCTION idempotency_acquire(
    p_scope       varchar,
    p_key         varchar,
    p_fingerprint bytea,
    p_ttl_ms      bigint,
    p_wait_ms     integer,
    p_state       smallint,
    p_result      bytea,
    OUT claimed      boolean,
    OUT state        smallint,
    OUT fingerprint  bytea,
    OUT result       bytea,
    OUT completed_at timestamptz)
LANGUAGE plpgsql
VOLATILE
AS $fn$
DECLARE
    held     "${flyway:defaultSchema}".idempotency_claim%ROWTYPE;
    -- the caller's lock_timeout, put back before returning; on an error the rollback of the
    -- caller's transaction or savepoint puts it back
    saved    text := current_setting('lock_timeout');
    deadline timestamptz := clock_timestamp() + p_wait_ms * interval '1 millisecond';
BEGIN
    PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);
    FOR attempt IN 1..10 LOOP
        IF attempt > 1 THEN
            PERFORM "${flyway:defaultSchema}".idempotency_wait_until(deadline, p_wait_ms);
        END IF;
        INSERT INTO "${flyway:defaultSchema}".idempotency_claim AS c
               (scope, idem_key, fingerprint, state, result, created_at, completed_at, expires_at)
        VALUES (p_scope, p_key, p_fingerprint, p_state, p_result, clock_timestamp(),
                CASE WHEN p_state <> 0 THEN clock_timestamp() END,
                clock_timestamp() + p_ttl_ms * interval '1 millisecond')
        ON CONFLICT (scope, idem_key) DO NOTHING
        RETURNING c.completed_at INTO completed_at;
        IF FOUND THEN
            claimed := true;
            state := p_state;
            fingerprint := p_fingerprint;
            PERFORM set_config('lock_timeout', saved, true);
            RETURN;
        END IF;

        -- Under READ COMMITTED this statement takes a new snapshot and sees the row the
        -- conflicting transaction committed while we waited.
        SELECT * INTO held FROM "${flyway:defaultSchema}".idempotency_claim c
         WHERE c.scope = p_scope AND c.idem_key = p_key;
        IF NOT FOUND THEN
            CONTINUE; -- the holder rolled back or a purge removed it: claim again
        END IF;

        IF held.expires_at + (coalesce(held.completed_at, held.created_at) - held.created_at) > clock_timestamp() THEN
            claimed := false;
            state := held.state;
            fingerprint := held.fingerprint;
            result := CASE WHEN held.fingerprint = p_fingerprint THEN held.result END;
            completed_at := held.completed_at;
            PERFORM set_config('lock_timeout', saved, true);
            RETURN;
        END IF;

        -- Expired: take it over. The row lock makes one taker win; the others re-check the
        -- condition on the winner's committed version and go round again.
        PERFORM "${flyway:defaultSchema}".idempotency_wait_until(deadline, p_wait_ms);
        UPDATE "${flyway:defaultSchema}".idempotency_claim c
           SET fingerprint = p_fingerprint, state = p_state, result = p_result,
               created_at = clock_timestamp(),
               completed_at = CASE WHEN p_state <> 0 THEN clock_timestamp() END,
               expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond'
         WHERE c.scope = p_scope AND c.idem_key = p_key
           AND c.expires_at + (coalesce(c.completed_at, c.created_at) - c.created_at) <= clock_timestamp()
        RETURNING c.completed_at INTO completed_at;
        IF FOUND THEN
            claimed := true;
            state := p_state;
            fingerprint := p_fingerprint;
            PERFORM set_config('lock_timeout', saved, true);
            RETURN;
        END IF;
    END LOOP;
    RAISE EXCEPTION 'idempotency claim for this key kept changing under the caller; retry'
        USING ERRCODE = 'serialization_failure';
END
$fn$;

-- Sets lock_timeout (transaction-local) to what is left until the deadline, or gives up with
-- SQLSTATE 55P03 when nothing is left. Called only from idempotency_acquire, which puts the
-- caller's value back before it returns.
CREATE FUNCTION idempotency_wait_until(p_deadline timestamptz, p_wait_ms integer)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $fn$
DECLARE
    left_ms bigint := ceil(extract(epoch FROM p_deadline - clock_timestamp()) * 1000);
BEGIN
    IF left_ms <= 0 THEN
        RAISE EXCEPTION 'waited % ms for the holder of this idempotency key', p_wait_ms
            USING ERRCODE = 'lock_not_available';
    END IF;
    PERFORM set_config('lock_timeout', left_ms || 'ms', true);
END
$fn$;
/* [jooq ignore stop] */
