-- The ledger: accounts with balances, transfers, and the double-entry postings behind them.
CREATE TABLE account (
    id         uuid          PRIMARY KEY,
    tenant     varchar(100)  NOT NULL,
    currency   char(3)       NOT NULL,
    balance    numeric(18,2) NOT NULL DEFAULT 0,
    is_funding boolean       NOT NULL DEFAULT false,
    created_at timestamptz   NOT NULL DEFAULT now(),
    -- customer accounts never go negative; a tenant's funding account may
    CONSTRAINT account_not_overdrawn CHECK (is_funding OR balance >= 0)
);

-- one funding account per tenant and currency
CREATE UNIQUE INDEX account_funding_idx ON account (tenant, currency) WHERE is_funding;

CREATE TABLE transfer (
    id           uuid          PRIMARY KEY,
    tenant       varchar(100)  NOT NULL,
    kind         varchar(10)   NOT NULL CHECK (kind IN ('deposit', 'transfer')),
    from_account uuid          NOT NULL REFERENCES account (id),
    to_account   uuid          NOT NULL REFERENCES account (id),
    amount       numeric(18,2) NOT NULL CHECK (amount > 0),
    currency     char(3)       NOT NULL,
    created_at   timestamptz   NOT NULL
);

-- two per transfer, summing to zero
CREATE TABLE posting (
    id          bigserial     PRIMARY KEY,
    transfer_id uuid          NOT NULL REFERENCES transfer (id),
    account_id  uuid          NOT NULL REFERENCES account (id),
    amount      numeric(18,2) NOT NULL
);
CREATE INDEX posting_transfer_idx ON posting (transfer_id);
