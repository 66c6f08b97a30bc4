-- A payout per claim of its key, not per key. An operator may forget a settled payout's claim
-- (ClaimAdmin.forget: "the next request with its key runs again"); the key's next request then
-- claims it anew and pays out again, which the old UNIQUE (tenant, idem_key) refused for good: every
-- retry answered 503. The payout's id now comes from the claim's downstream key (which changes with
-- each claim of the key), and a key has at most one payout in flight: the claim that holds it.
ALTER TABLE payout DROP CONSTRAINT payout_tenant_idem_key_key;
CREATE UNIQUE INDEX payout_in_flight_idx ON payout (tenant, idem_key) WHERE state = 'in_flight';
CREATE INDEX payout_key_idx ON payout (tenant, idem_key, created_at);
