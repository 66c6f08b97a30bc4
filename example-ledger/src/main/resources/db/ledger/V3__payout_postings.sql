-- Payouts in the double-entry books. Before this migration a payout took its amount from the
-- customer's balance with no posting; now each payout moves money between accounts like any other
-- transfer, with two postings that sum to zero, so the books' invariants cover payouts too.
--
-- Every account has a kind: 'customer', 'funding' (one per tenant and currency: where deposits come
-- from), and two per tenant, currency and bank:
--   'clearing'  money held for payouts in flight at that bank (sent, or about to be, outcome not yet
--               recorded): its balance is the sum of the payouts in flight there;
--   'paid_out'  money the bank has paid out: its balance is what the bank's own records show as
--               charged for this tenant and currency.
-- A payout's movements (transfer rows with the payout's id, at most one of each kind per payout):
--   hold     customer -> clearing   in the transaction that claims the key (before the bank's call)
--   settle   clearing -> paid_out   when the bank's charge is recorded
--   release  clearing -> customer   when the bank's refusal is recorded
ALTER TABLE account ADD COLUMN kind varchar(10) NOT NULL DEFAULT 'customer'
    CHECK (kind IN ('customer', 'funding', 'clearing', 'paid_out'));
ALTER TABLE account ADD COLUMN bank varchar(100);
UPDATE account SET kind = 'funding' WHERE is_funding;
ALTER TABLE account ADD CONSTRAINT account_kind_consistent
    CHECK (is_funding = (kind = 'funding') AND (bank IS NOT NULL) = (kind IN ('clearing', 'paid_out')));
-- one clearing and one paid_out account per tenant, currency and bank
CREATE UNIQUE INDEX account_bank_idx ON account (tenant, currency, bank, kind) WHERE bank IS NOT NULL;

-- the bank a payout went to (the name the ledger gives its bank, LEDGER_BANK_NAME)
ALTER TABLE payout ADD COLUMN bank varchar(100);
UPDATE payout SET bank = 'bank';
ALTER TABLE payout ALTER COLUMN bank SET NOT NULL;

ALTER TABLE transfer DROP CONSTRAINT transfer_kind_check;
ALTER TABLE transfer ADD CONSTRAINT transfer_kind_check
    CHECK (kind IN ('deposit', 'transfer', 'hold', 'settle', 'release'));
ALTER TABLE transfer ADD COLUMN payout_id uuid REFERENCES payout (id);
ALTER TABLE transfer ADD CONSTRAINT transfer_payout_consistent
    CHECK ((payout_id IS NOT NULL) = (kind IN ('hold', 'settle', 'release')));
CREATE UNIQUE INDEX transfer_payout_idx ON transfer (payout_id, kind) WHERE payout_id IS NOT NULL;

-- The payouts made before this migration get the movements they would have had. Their customers'
-- balances already show the holds and releases; the clearing and paid_out balances are set from
-- the postings written here.
INSERT INTO account (id, tenant, currency, kind, bank)
SELECT gen_random_uuid(), p.tenant, p.currency, k.kind, p.bank
  FROM (SELECT DISTINCT tenant, currency, bank FROM payout) p
 CROSS JOIN (VALUES ('clearing'), ('paid_out')) k (kind);

CREATE TEMPORARY TABLE payout_movement AS
SELECT gen_random_uuid() AS id, p.id AS payout_id, p.tenant, p.currency, p.amount, m.kind,
       CASE WHEN m.kind = 'hold' THEN p.created_at ELSE coalesce(p.settled_at, p.created_at) END AS at,
       CASE m.kind WHEN 'hold' THEN p.account_id ELSE c.id END AS from_account,
       CASE m.kind WHEN 'hold' THEN c.id WHEN 'settle' THEN o.id ELSE p.account_id END AS to_account
  FROM payout p
  JOIN account c ON c.tenant = p.tenant AND c.currency = p.currency AND c.bank = p.bank AND c.kind = 'clearing'
  JOIN account o ON o.tenant = p.tenant AND o.currency = p.currency AND o.bank = p.bank AND o.kind = 'paid_out'
  JOIN (VALUES ('hold'), ('settle'), ('release')) m (kind)
    ON m.kind = 'hold' OR (m.kind = 'settle' AND p.state = 'paid') OR (m.kind = 'release' AND p.state = 'refused');
INSERT INTO transfer (id, tenant, kind, from_account, to_account, amount, currency, created_at, payout_id)
SELECT id, tenant, kind, from_account, to_account, amount, currency, date_trunc('milliseconds', at), payout_id
  FROM payout_movement;
INSERT INTO posting (transfer_id, account_id, amount)
SELECT id, from_account, -amount FROM payout_movement
 UNION ALL
SELECT id, to_account, amount FROM payout_movement;
UPDATE account a SET balance = s.total
  FROM (SELECT account_id, sum(amount) AS total FROM posting GROUP BY account_id) s
 WHERE a.id = s.account_id AND a.bank IS NOT NULL;
DROP TABLE payout_movement;
