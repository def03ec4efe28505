-- The shipping's schema: one shipment per order. Every name is qualified
-- by the schema, which postgres.Migrate creates before it runs this file.

-- +goose Up
CREATE SEQUENCE shipping.shipment_ids;

CREATE TABLE shipping.shipments (
    id         text        PRIMARY KEY DEFAULT 'shp-' || nextval('shipping.shipment_ids'),
    -- One shipment per order: Create is INSERT ... ON CONFLICT (order_id)
    -- DO NOTHING, and a retry reads the one that is there.
    order_id   text        NOT NULL UNIQUE,
    address    text        NOT NULL,
    -- The parcel's contents, written once and read whole: a document, so
    -- JSON ([{"SKU": ..., "Qty": ...}]), not a table of its own.
    items      jsonb       NOT NULL,
    status     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE shipping.shipments;
DROP SEQUENCE shipping.shipment_ids;
