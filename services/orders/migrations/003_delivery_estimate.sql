-- The delivery estimate of a confirmed order (shipping's quote, or the
-- default window when it did not come in time), and the parts of the
-- checkout's answer that degraded to a default (docs/criticality.md).
-- Orders confirmed before this migration, or by the reconciler after their
-- checkout answered, have none: 0 days, nothing degraded.

-- +goose Up
ALTER TABLE orders.orders ADD COLUMN delivery_min_days integer NOT NULL DEFAULT 0;
ALTER TABLE orders.orders ADD COLUMN delivery_max_days integer NOT NULL DEFAULT 0;
ALTER TABLE orders.orders ADD COLUMN degraded text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE orders.orders DROP COLUMN degraded;
ALTER TABLE orders.orders DROP COLUMN delivery_max_days;
ALTER TABLE orders.orders DROP COLUMN delivery_min_days;
