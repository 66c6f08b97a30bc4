-- Payouts to an external bank. The amount leaves the account's balance when the payout is claimed
-- (the hold: state in_flight), and either goes to the bank (paid, with the bank's charge id) or
-- comes back (refused). So at every moment: customer debits = bank charges + payouts in flight.
CREATE TABLE payout (
    id          uuid          PRIMARY KEY,
    tenant      varchar(100)  NOT NULL,
    account_id  uuid          NOT NULL REFERENCES account (id),
    amount      numeric(18,2) NOT NULL CHECK (amount > 0),
    currency    char(3)       NOT NULL,
    destination varchar(200)  NOT NULL,
    idem_key    varchar(255)  NOT NULL,
    state       varchar(12)   NOT NULL CHECK (state IN ('in_flight', 'paid', 'refused')),
    charge_id   varchar(100),
    created_at  timestamptz   NOT NULL DEFAULT now(),
    settled_at  timestamptz,
    UNIQUE (tenant, idem_key)
);
CREATE INDEX payout_state_idx ON payout (tenant, state);
