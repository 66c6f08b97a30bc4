-- What operators did to claims (ClaimAdmin in the jooq module): one row per action, written in the
-- transaction of the action itself, so a resolution or a forgotten claim is never without its
-- reason. Actions are rare (a person settles a claim); the table is never purged by the library.
--
--   action       resolved_applied, resolved_refused (a claim that needed reconciliation, settled
--                with the operator's finding) or forgotten (a settled claim deleted, so the next
--                call with its key runs again);
--   operator     who did it, as the caller of the admin API named them;
--   reason       why, in their words;
--   state        the claim's state before the action (the claim table's codes);
--   effect       the effect that wrote the claim; null for IdempotentTransaction's rows;
--   fingerprint  the claim's fingerprint;
--   result       for a forgotten claim, the stored result or failure it held (a forget can be
--                undone by hand from it); for a resolution, what was recorded.
CREATE TABLE idempotency_claim_action (
    id          bigint       /* [jooq ignore start] */ GENERATED ALWAYS AS IDENTITY /* [jooq ignore stop] */,
    at          timestamptz  NOT NULL,
    scope       varchar(255) /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    idem_key    varchar(255) /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    action      varchar(32)  NOT NULL,
    operator    varchar(255) NOT NULL,
    reason      varchar(1000) NOT NULL,
    state       smallint     NOT NULL,
    effect      varchar(255),
    fingerprint bytea        NOT NULL,
    result      bytea,
    CONSTRAINT idempotency_claim_action_pk PRIMARY KEY (id),
    CONSTRAINT idempotency_claim_action_known CHECK (action IN ('resolved_applied', 'resolved_refused', 'forgotten'))
);

-- A claim's history, newest first.
CREATE INDEX idempotency_claim_action_key_idx ON idempotency_claim_action (scope, idem_key, at);
