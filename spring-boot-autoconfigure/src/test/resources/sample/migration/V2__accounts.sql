-- the transfers the Spring AMQP listener example applies (io.github.idemtx.spring.amqp)
CREATE TABLE account (
    tenant text NOT NULL,
    id text NOT NULL,
    balance_cents bigint NOT NULL CHECK (balance_cents >= 0),
    PRIMARY KEY (tenant, id)
);

CREATE TABLE transfer (
    id bigserial PRIMARY KEY,
    tenant text NOT NULL,
    from_account text NOT NULL,
    to_account text NOT NULL,
    amount_cents bigint NOT NULL CHECK (amount_cents > 0)
);
