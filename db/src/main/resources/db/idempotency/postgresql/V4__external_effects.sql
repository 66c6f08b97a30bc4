-- External effects (ExternalEffect in the jooq module): a claim whose work calls a remote system
-- outside the database. Its row is committed as IN FLIGHT (state 3) before the remote call, with
--   effect          the name of the effect (e.g. "charge"), so each effect's recoverer finds its own rows;
--   request         the encoded request, so a recoverer can look it up, or send it again, without the caller;
--   fence           the fencing token: 1 when claimed, +1 on every takeover; a result is recorded only
--                   by the holder of the current token;
--   lease_until     until when the holder may work undisturbed; past it, a duplicate or the recoverer
--                   takes the claim over (with a new token) and looks the request up at the remote;
--   lookups         lookups that could not tell whether the remote applied the request;
--   next_lookup_at  when the recoverer may look it up again (1, 2, 4 minutes by default).
-- After the last unanswered lookup the row NEEDS RECONCILIATION (state 4) until an operator records
-- its outcome. Rows in states 3 and 4 never expire (expires_at = 'infinity'): releasing them by TTL
-- would repeat the remote action. Completed rows (1, 2) expire as before; the other columns stay
-- null for rows of IdempotentTransaction. Adding nullable columns without defaults rewrites nothing.
-- The protocol as a whole: docs/claim-protocol.md in the jooq module.

ALTER TABLE idempotency_claim ADD COLUMN effect varchar(255);
ALTER TABLE idempotency_claim ADD COLUMN request bytea;
ALTER TABLE idempotency_claim ADD COLUMN fence bigint;
ALTER TABLE idempotency_claim ADD COLUMN lease_until timestamptz;
ALTER TABLE idempotency_claim ADD COLUMN lookups integer;
ALTER TABLE idempotency_claim ADD COLUMN next_lookup_at timestamptz;

/* [jooq ignore start] */
ALTER TABLE idempotency_claim DROP CONSTRAINT idempotency_claim_state_known;
ALTER TABLE idempotency_claim ADD CONSTRAINT idempotency_claim_state_known
    CHECK (state IN (-2, -1, 0, 1, 2, 3, 4)) NOT VALID;

-- The recoverer's scan (in-flight rows of one effect whose lease has passed) and the
-- reconciliation list; only rows of external effects that are not settled are in it.
CREATE INDEX idempotency_claim_unsettled ON idempotency_claim (effect, state, lease_until) WHERE state IN (3, 4);
/* [jooq ignore stop] */
