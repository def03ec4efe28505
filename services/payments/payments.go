package payments

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
)

// Charge is money taken, or being taken, from a customer for one order.
type Charge struct {
	ID          string
	PaymentKey  string
	OrderID     string
	Customer    string
	AmountCents int64
	// RequestID names the client's logical checkout, so charges can be
	// counted per checkout even when keys are ignored.
	RequestID string
	Status    Status
	CreatedAt time.Time
}

// Status is where a charge is. Its text is what the store keeps.
type Status string

// Charge statuses.
const (
	// StatusPending: the provider has the charge and has not answered.
	StatusPending Status = "pending"
	// StatusSucceeded: the provider took the money.
	StatusSucceeded Status = "succeeded"
	// StatusFailed: no money was taken, and none will be under this key.
	StatusFailed Status = "failed"
)

// Stats count charges, for the duplicate-charge lesson.
type Stats struct {
	Charges   int `json:"charges"`
	Succeeded int `json:"succeeded"`
	// RequestIDs is the number of logical checkouts with a successful
	// charge; Duplicates the successful charges beyond one per checkout.
	RequestIDs int `json:"request_ids"`
	Duplicates int `json:"duplicates"`
}

// Store keeps charges, at most one per payment key.
type Store interface {
	// Claim stores c unless a charge with its payment key exists. It
	// returns the stored charge and whether this call created it; the
	// payment key's uniqueness is what makes a charge happen once.
	Claim(ctx context.Context, c Charge) (stored Charge, created bool, err error)
	// Settle gives the pending charge under key its final status. A charge
	// already settled keeps the status it has.
	Settle(ctx context.Context, key string, status Status) (Charge, error)
	GetByKey(ctx context.Context, key string) (Charge, error)
	Stats(ctx context.Context) (Stats, error)
	// Pending returns up to limit (0: no limit) charges still pending
	// that were created before before, oldest first.
	Pending(ctx context.Context, before time.Time, limit int) ([]Charge, error)
}

// pspTimeout bounds the provider's own work on one charge (budgeted; a
// naive wait ignores it, like a read with no timeout).
const pspTimeout = 2 * time.Minute

// Service is the payments use cases.
type Service struct {
	store    Store
	psp      sim.Simulator
	settings *mode.Live
	now      func() time.Time

	// asking holds the payment keys this process is asking the provider
	// about, so that ResendPending leaves them alone.
	asking sync.Map
}

// NewService returns a Service over store, with psp simulating the
// payment provider's work.
func NewService(store Store, psp sim.Simulator, settings *mode.Live) (*Service, error) {
	if store == nil || psp == nil || settings == nil {
		return nil, fmt.Errorf("payments: store, psp and settings are required")
	}
	return &Service{store: store, psp: psp, settings: settings, now: time.Now}, nil
}

// Limits on a charge request: the length of a payment key or request id
// (an Idempotency-Key's length), of an order id, and of a customer.
const (
	MaxKeyBytes      = 255
	MaxOrderIDBytes  = 64
	MaxCustomerBytes = 500
)

// validate reports what is wrong with a charge request.
func validate(c Charge) error {
	if err := checkKey(c.PaymentKey); err != nil {
		return err
	}
	switch {
	case c.OrderID == "":
		return apperr.New(apperr.Invalid, "order_id is required")
	case len(c.OrderID) > MaxOrderIDBytes:
		return apperr.New(apperr.Invalid, "order_id is longer than %d characters", MaxOrderIDBytes)
	case len(c.Customer) > MaxCustomerBytes:
		return apperr.New(apperr.Invalid, "customer is longer than %d bytes", MaxCustomerBytes)
	case len(c.RequestID) > MaxKeyBytes:
		return apperr.New(apperr.Invalid, "request_id is longer than %d characters", MaxKeyBytes)
	case c.AmountCents <= 0:
		return apperr.New(apperr.Invalid, "amount_cents must be positive, got %d", c.AmountCents)
	}
	return nil
}

// checkKey reports a payment key that is missing or too long.
func checkKey(key string) error {
	switch {
	case key == "":
		return apperr.New(apperr.Invalid, "payment_key is required")
	case len(key) > MaxKeyBytes:
		return apperr.New(apperr.Invalid, "payment_key is longer than %d characters", MaxKeyBytes)
	}
	return nil
}

// CreateCharge charges c.AmountCents under c.PaymentKey, once. The key is
// claimed first, so a second attempt — a retry, a duplicate, a
// reconciliation — gets the first charge back, whatever its status, and
// the provider is asked at most once per key.
//
// Once sent, the charge is the provider's: it completes however long the
// provider takes. In budgeted mode the caller stops waiting when its budget
// ends and gets DeadlineExceeded, while the charge stays pending until the
// provider answers — a timeout does not prove nothing was charged. In naive
// mode the caller waits as long as the provider takes.
func (s *Service) CreateCharge(ctx context.Context, c Charge) (Charge, error) {
	if err := validate(c); err != nil {
		return Charge{}, err
	}
	c.Status, c.CreatedAt = StatusPending, s.now()
	stored, created, err := s.store.Claim(ctx, c)
	if err != nil || !created {
		return stored, err
	}
	done := make(chan result, 1)
	s.asking.Store(stored.PaymentKey, true)
	go s.charge(context.WithoutCancel(ctx), stored, done)
	if !s.settings.For(ctx).Mechanisms.HonourCancel {
		r := <-done
		return r.charge, r.err
	}
	select {
	case r := <-done:
		return r.charge, r.err
	case <-ctx.Done():
		return Charge{}, apperr.Wrap(apperr.Timeout, context.Cause(ctx), "payment provider did not answer in time; the charge is pending")
	}
}

type result struct {
	charge Charge
	err    error
}

// charge asks the provider and records its answer. ctx is detached from
// the request (the charge is the provider's once sent), so the caller
// leaving never cuts the provider's wait short; pspTimeout bounds it when
// the mode honours cancellation.
func (s *Service) charge(ctx context.Context, c Charge, done chan<- result) {
	defer s.asking.Delete(c.PaymentKey)
	ctx, cancel := context.WithTimeout(ctx, pspTimeout)
	defer cancel()
	status := StatusSucceeded
	werr := s.psp.Work(ctx, sim.PaymentsCreateCharge)
	if werr != nil {
		status = StatusFailed
	}
	settled, err := s.store.Settle(ctx, c.PaymentKey, status)
	switch {
	case err != nil:
		done <- result{err: err}
	case errors.Is(werr, sim.ErrInjected):
		done <- result{charge: settled, err: apperr.Wrap(apperr.Unavailable, werr, "payment provider unavailable; nothing was charged")}
	default:
		done <- result{charge: settled, err: werr}
	}
}

// GetCharge returns the charge made under paymentKey.
func (s *Service) GetCharge(ctx context.Context, paymentKey string) (Charge, error) {
	if err := checkKey(paymentKey); err != nil {
		return Charge{}, err
	}
	return s.store.GetByKey(ctx, paymentKey)
}

// VoidCharge makes sure nothing will ever be charged under paymentKey: a
// key never claimed is stored as failed; a claimed one is returned as it is.
func (s *Service) VoidCharge(ctx context.Context, paymentKey string) (Charge, error) {
	if err := checkKey(paymentKey); err != nil {
		return Charge{}, err
	}
	stored, _, err := s.store.Claim(ctx, Charge{PaymentKey: paymentKey, Status: StatusFailed, CreatedAt: s.now()})
	return stored, err
}

// Stats counts the charges.
func (s *Service) Stats(ctx context.Context) (Stats, error) { return s.store.Stats(ctx) }
