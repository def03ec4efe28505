-- What the sweeper needs to settle a checkout whose request died with its
-- process (see reconcile.go): the idempotency key each order was placed
-- under, so the key can be answered once the order is settled, and how
-- many times a key was taken over from a holder that vanished, and the
-- failed orders whose stock is still to be given back.

-- +goose Up
ALTER TABLE orders.orders ADD COLUMN idempotency_key text NOT NULL DEFAULT '';

-- A retry that takes over a key looks for the orders already placed under it.
CREATE INDEX orders_by_idempotency_key ON orders.orders (idempotency_key) WHERE idempotency_key <> '';

ALTER TABLE orders.idempotency_keys ADD COLUMN holders int NOT NULL DEFAULT 1;

-- A failed order whose stock catalog could not take back yet.
ALTER TABLE orders.orders ADD COLUMN stock_held boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE orders.orders DROP COLUMN stock_held;
ALTER TABLE orders.idempotency_keys DROP COLUMN holders;
DROP INDEX orders.orders_by_idempotency_key;
ALTER TABLE orders.orders DROP COLUMN idempotency_key;
