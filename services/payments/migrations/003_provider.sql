-- The charges become the payment provider's: it keeps each payment key's
-- first answer in a schema of its own, as a real provider keeps them in
-- its own system (services/payments/provider.go). Payments keeps no record
-- of a charge and asks the provider by key.
--
-- The provider answers every key it records, so no charge waits pending
-- in the store any more: one left pending by an earlier version, whose
-- answer nobody is left to record, is taken as declined.

-- +goose Up
CREATE SCHEMA IF NOT EXISTS psp;
ALTER TABLE payments.charges SET SCHEMA psp;
ALTER SEQUENCE payments.charge_ids SET SCHEMA psp;
UPDATE psp.charges SET status = 'failed' WHERE status = 'pending';

-- +goose Down
ALTER TABLE psp.charges SET SCHEMA payments;
ALTER SEQUENCE psp.charge_ids SET SCHEMA payments;
DROP SCHEMA psp;
