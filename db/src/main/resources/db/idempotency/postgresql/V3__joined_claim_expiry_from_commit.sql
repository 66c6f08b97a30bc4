-- A claim recorded inside a caller's transaction (a joined call) becomes visible only when the
-- caller commits, which may be long after the record was written. Its expiry is therefore counted
-- from that commit, not from the record: otherwise a caller transaction that outlives the TTL would
-- publish a claim that is already expired, and a retry would run the work a second time.
--
-- A joined call writes its row with the state negated (-1 completed, -2 failed: "expiry waits for
-- the commit"). A deferred constraint trigger fires at the caller's COMMIT, inside the committing
-- transaction, and rewrites the row with the positive state and expires_at = commit time + TTL
-- (the TTL being what the record put between completed_at and expires_at). So no other
-- transaction ever sees a negative state, and a row's TTL never starts before it is visible.
-- Rows written by a call that owns its transaction carry a positive state: the trigger's WHEN
-- clause is false for them, nothing is queued and their single INSERT stays the only write.
-- A caller that runs SET CONSTRAINTS ALL IMMEDIATE fires the trigger at the end of the record's
-- statement instead: the expiry then counts from the record, as for an own transaction.
-- The protocol as a whole: docs/claim-protocol.md in the jooq module.

/* [jooq ignore start] */
ALTER TABLE idempotency_claim DROP CONSTRAINT idempotency_claim_state_known;
-- NOT VALID: enforced for every new row at once, without scanning the rows already there (all of
-- which satisfy the narrower V1 rule).
ALTER TABLE idempotency_claim ADD CONSTRAINT idempotency_claim_state_known
    CHECK (state IN (-2, -1, 0, 1, 2)) NOT VALID;

CREATE FUNCTION idempotency_claim_visible() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    UPDATE "${flyway:defaultSchema}".idempotency_claim c
       SET state = -NEW.state,
           expires_at = clock_timestamp() + (NEW.expires_at - NEW.completed_at)
     WHERE c.scope = NEW.scope AND c.idem_key = NEW.idem_key AND c.state = NEW.state;
    RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER idempotency_claim_expiry_from_commit
    AFTER INSERT OR UPDATE ON idempotency_claim
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (NEW.state < 0)
    EXECUTE FUNCTION idempotency_claim_visible();
/* [jooq ignore stop] */
