-- The payments' schema: one row per payment key. Every name is qualified
-- by the schema, which postgres.Migrate creates before it runs this file.

-- +goose Up
CREATE SEQUENCE payments.charge_ids;

CREATE TABLE payments.charges (
    id           text        PRIMARY KEY DEFAULT 'ch-' || nextval('payments.charge_ids'),
    -- A charge happens once because its key can be stored once: Claim is
    -- INSERT ... ON CONFLICT (payment_key) DO NOTHING.
    payment_key  text        NOT NULL UNIQUE,
    -- Empty for a key voided before any charge was attempted.
    order_id     text        NOT NULL,
    customer     text        NOT NULL,
    amount_cents bigint      NOT NULL,
    request_id   text        NOT NULL,
    status       text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    created_at   timestamptz NOT NULL
);

-- Stats counts successful charges per logical checkout.
CREATE INDEX charges_succeeded_by_request ON payments.charges (request_id) WHERE status = 'succeeded';

-- +goose Down
DROP TABLE payments.charges;
DROP SEQUENCE payments.charge_ids;
