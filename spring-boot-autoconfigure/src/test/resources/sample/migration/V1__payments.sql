CREATE TABLE payment (
    id bigserial PRIMARY KEY,
    payer text NOT NULL,
    amount_cents bigint NOT NULL CHECK (amount_cents > 0),
    reference text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit (
    id bigserial PRIMARY KEY,
    note text NOT NULL CHECK (note <> '')
);

-- written through JPA (io.github.idemtx.spring.jpa): Hibernate holds its inserts until it flushes
CREATE TABLE payment_note (
    id uuid PRIMARY KEY,
    note text NOT NULL CHECK (note <> '')
);
