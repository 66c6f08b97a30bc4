-- Effects settled by statement (ExternalEffect.Builder.settledByStatement in the jooq module): a
-- destination that takes no idempotency key and answers no lookup (a bank's file or statement
-- interface), whose only evidence of what it did is its statement, read later. Before every send
-- the claim is marked SENT (state 5), fenced and committed, so that a claim still IN FLIGHT (3) was
-- provably never sent and can be sent at once, and a SENT one is settled by a statement line, never
-- by time: a line with its reference settles it applied; no line in statements that cover the send
-- plus the settlement lag makes it absent (sent again with the same reference, or to an operator).
--
-- On the claim table (both layouts: ALTER TABLE reaches every partition):
--   reference   what was sent as the payment's reference (the claim's downstream key: 32 characters
--               of base32, the first 3 the effect's): statement lines are matched by it;
--   sent_at     when it was last marked SENT (the server's clock): the settlement window starts here;
--   sends       how many times it was sent.
-- New tables, standing apart from the claim table like the outbox (no foreign key: the claim table
-- may be partitioned, and lines outlive their claims):
--   idempotency_statement        each statement applied: its period, so that "absent" is decided
--                                only over periods some statement covered;
--   idempotency_statement_line   each statement line once, by the bank's entry id: a second import
--                                of a statement, or overlapping statements, count nothing twice. The
--                                verdict: matched (settled or confirmed its claim), duplicate (a
--                                second line of one reference: a double payment), mismatch (amount,
--                                currency or recorded refusal disagree), unmatched (no claim has the
--                                reference); worked_at/worked_by/note: an operator's handling.

ALTER TABLE idempotency_claim ADD COLUMN reference varchar(255);
ALTER TABLE idempotency_claim ADD COLUMN sent_at timestamptz;
ALTER TABLE idempotency_claim ADD COLUMN sends integer;

CREATE TABLE idempotency_statement (
    effect       varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    statement_id varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    period_from  timestamptz   NOT NULL,
    period_to    timestamptz   NOT NULL,
    lines        integer       NOT NULL,
    applied_at   timestamptz   NOT NULL,
    CONSTRAINT idempotency_statement_pk PRIMARY KEY (effect, statement_id),
    CONSTRAINT idempotency_statement_period CHECK (period_from < period_to)
);

CREATE TABLE idempotency_statement_line (
    effect       varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    entry_id     varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    statement_id varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    reference    varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */ NOT NULL,
    amount       numeric       NOT NULL,
    currency     varchar(3)    NOT NULL,
    booked_on    date          NOT NULL,
    verdict      varchar(16)   NOT NULL,
    scope        varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */,
    idem_key     varchar(255)  /* [jooq ignore start] */ COLLATE "C" /* [jooq ignore stop] */,
    detail       varchar(1000),
    applied_at   timestamptz   NOT NULL,
    worked_at    timestamptz,
    worked_by    varchar(255),
    note         varchar(1000),
    CONSTRAINT idempotency_statement_line_pk PRIMARY KEY (effect, entry_id),
    CONSTRAINT idempotency_statement_line_verdict_known
        CHECK (verdict IN ('matched', 'duplicate', 'mismatch', 'unmatched'))
);

/* [jooq ignore start] */
ALTER TABLE idempotency_claim DROP CONSTRAINT idempotency_claim_state_known;
ALTER TABLE idempotency_claim ADD CONSTRAINT idempotency_claim_state_known
    CHECK (state IN (-2, -1, 0, 1, 2, 3, 4, 5)) NOT VALID;

-- the claims a statement line names (by the effect and the reference sent)
CREATE INDEX idempotency_claim_reference ON idempotency_claim (effect, reference) WHERE reference IS NOT NULL;
-- the claims awaiting a statement, oldest send first
CREATE INDEX idempotency_claim_sent ON idempotency_claim (effect, sent_at) WHERE state = 5;
-- the statements whose period overlaps a send's window (an absent decision reads only those)
CREATE INDEX idempotency_statement_period ON idempotency_statement (effect, period_to);
-- the lines of one reference (a second one is a double payment)
CREATE INDEX idempotency_statement_line_reference ON idempotency_statement_line (effect, reference);
-- an operator's list of flagged lines not worked yet
CREATE INDEX idempotency_statement_line_open ON idempotency_statement_line (effect, verdict, applied_at)
    WHERE verdict <> 'matched' AND worked_at IS NULL;
/* [jooq ignore stop] */
