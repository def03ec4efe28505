-- The catalog's schema: products with their stock, and the stock held for
-- each order. Every name is qualified by the schema, which
-- postgres.Migrate creates before it runs this file.

-- +goose Up
CREATE TABLE catalog.products (
    sku         text   PRIMARY KEY,
    name        text   NOT NULL,
    price_cents bigint NOT NULL CHECK (price_cents >= 0),
    -- The last line of defence of "stock never goes negative": Reserve
    -- checks first, under row locks, and this refuses what slips through.
    stock       bigint NOT NULL CHECK (stock >= 0)
);

CREATE SEQUENCE catalog.reservation_ids;

CREATE TABLE catalog.reservations (
    id          text        PRIMARY KEY DEFAULT 'res-' || nextval('catalog.reservation_ids'),
    -- One reservation per order: the unique index makes a second Reserve
    -- for the order wait for the first and then find it.
    order_id    text        NOT NULL UNIQUE,
    total_cents bigint      NOT NULL DEFAULT 0,
    released    boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE catalog.reservation_lines (
    reservation_id   text   NOT NULL REFERENCES catalog.reservations (id),
    line_no          int    NOT NULL,
    sku              text   NOT NULL REFERENCES catalog.products (sku),
    qty              bigint NOT NULL CHECK (qty > 0),
    unit_price_cents bigint NOT NULL,
    PRIMARY KEY (reservation_id, line_no)
);

-- +goose Down
DROP TABLE catalog.reservation_lines;
DROP TABLE catalog.reservations;
DROP SEQUENCE catalog.reservation_ids;
DROP TABLE catalog.products;
