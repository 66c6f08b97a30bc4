-- The transactional outbox (the jooq module's Outbox and OutboxRelay): a message is a row written
-- in the transaction of an IdempotentTransaction's work, so it exists exactly when the claim and
-- the business write commit; a relay delivers it afterwards, at least once. The table stands apart
-- from the claim table (no foreign key: the claim table may be partitioned by key day, and a
-- message outlives its claim's TTL), in the same schema, whichever claim layout was chosen.
--
--   id              the order of messages: within one ordering key, delivery follows it;
--   message_id      derived from the claim (scope, key) and the message's name: the same on every
--                   delivery attempt, by every relay, so a consumer deduplicates by it;
--   scope, idem_key the claim whose work added it; name, unique within the claim;
--   destination     where the transport delivers it (a RabbitMQ exchange, an HTTP endpoint's name);
--   ordering_key    null: unordered; else a message is delivered only after every earlier message
--                   of the same destination and ordering key was delivered or discarded;
--   payload, headers the message itself (headers: one "name: value" per line);
--   status          pending (to deliver), delivered, failed (kept for an operator after its last
--                   attempt or a permanent refusal: last_error says why), discarded (by an operator);
--   attempts, next_attempt_at, last_attempt_at, last_error   the retries and their backoff;
--   lease_owner, lease_until   the relay delivering it now: other relays skip it until the lease
--                   passes (a relay that died between the send and the mark is taken over then);
--   settled_at      when the destination confirmed it, or an operator discarded it; such rows are purged
--                   after the relay's retention.
CREATE TABLE idempotency_outbox (
    id              bigint        /* [jooq ignore start] */ GENERATED ALWAYS AS IDENTITY /* [jooq ignore stop] */,
    message_id      uuid          NOT NULL,
    scope           varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    idem_key        varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    name            varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    destination     varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    ordering_key    varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */,
    payload         bytea         NOT NULL,
    headers         varchar(65535),
    status          varchar(16)   NOT NULL,
    created_at      timestamptz   NOT NULL,
    attempts        integer       NOT NULL,
    next_attempt_at timestamptz   NOT NULL,
    last_attempt_at timestamptz,
    last_error      varchar(2000),
    lease_owner     varchar(64),
    lease_until     timestamptz,
    settled_at      timestamptz,
    CONSTRAINT idempotency_outbox_pk PRIMARY KEY (id),
    CONSTRAINT idempotency_outbox_message_id_uq UNIQUE (message_id),
    CONSTRAINT idempotency_outbox_status_known CHECK (status IN ('pending', 'delivered', 'failed', 'discarded'))
);

/* [jooq ignore start] */
-- the relay's batch: pending rows due, in id order
CREATE INDEX idempotency_outbox_due_idx ON idempotency_outbox (next_attempt_at, id) WHERE status = 'pending';
-- an ordered message waits for earlier undelivered ones of its destination and ordering key
CREATE INDEX idempotency_outbox_order_idx ON idempotency_outbox (destination, ordering_key, id)
    WHERE status IN ('pending', 'failed') AND ordering_key IS NOT NULL;
-- the operator's list of failed messages, and the purge of delivered and discarded ones
CREATE INDEX idempotency_outbox_failed_idx ON idempotency_outbox (id) WHERE status = 'failed';
CREATE INDEX idempotency_outbox_done_idx ON idempotency_outbox (settled_at) WHERE status IN ('delivered', 'discarded');
/* [jooq ignore stop] */
