-- The audit trail: one entry per completed checkout, written by orders'
-- fire-forward queue (services/payments/audit.go).

-- +goose Up
CREATE TABLE payments.audit_entries (
    -- A retried write makes no second entry: Record is
    -- INSERT ... ON CONFLICT (order_id) DO NOTHING.
    order_id     text        PRIMARY KEY,
    customer     text        NOT NULL,
    total_cents  bigint      NOT NULL,
    charge_id    text        NOT NULL,
    request_id   text        NOT NULL,
    confirmed_at timestamptz NOT NULL,
    recorded_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE payments.audit_entries;
