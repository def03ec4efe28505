-- The orders' schema: the orders and the idempotency keys of checkouts.
-- Every name is qualified by the schema, which postgres.Migrate creates
-- before it runs this file.

-- +goose Up
CREATE TABLE orders.orders (
    id              text        PRIMARY KEY,
    status          text        NOT NULL,
    customer        text        NOT NULL,
    -- What was ordered, written and read whole with the order: a
    -- document, so JSON ([{"SKU": ..., "Qty": ..., "UnitPriceCents": ...}]).
    items           jsonb       NOT NULL,
    address         text        NOT NULL,
    payment_key     text        NOT NULL,
    reservation_id  text        NOT NULL,
    total_cents     bigint      NOT NULL,
    charge_id       text        NOT NULL,
    shipment_id     text        NOT NULL,
    shipment_status text        NOT NULL,
    request_id      text        NOT NULL,
    failure         text        NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- The background workers' question: orders in a status (and shipment
-- status), least recently updated first.
CREATE INDEX orders_by_status ON orders.orders (status, shipment_status, updated_at);

CREATE TABLE orders.idempotency_keys (
    key          text        PRIMARY KEY,
    request_hash text        NOT NULL,
    completed    boolean     NOT NULL DEFAULT false,
    -- The stored answer, once completed.
    response     bytea,
    lease_until  timestamptz NOT NULL,
    created_at   timestamptz NOT NULL
);

-- Reap deletes the oldest keys first.
CREATE INDEX idempotency_keys_by_age ON orders.idempotency_keys (created_at);

-- +goose Down
DROP TABLE orders.idempotency_keys;
DROP TABLE orders.orders;
