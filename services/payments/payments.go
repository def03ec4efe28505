package payments

import (
	"context"
	"errors"
	"fmt"
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

// Store is the payment provider's memory: one charge per payment key,
// as the provider answered it.
type Store interface {
	// Record stores c unless a charge under its payment key is stored,
	// and returns the stored charge and whether it is c: the key's
	// uniqueness is what makes a charge happen once.
	Record(ctx context.Context, c Charge) (stored Charge, created bool, err error)
	GetByKey(ctx context.Context, key string) (Charge, error)
	Stats(ctx context.Context) (Stats, error)
}

// pspTimeout bounds the provider's own work on one charge (budgeted; a
// naive wait ignores it, like a read with no timeout).
const pspTimeout = 2 * time.Minute

// Service is the payments use cases.
type Service struct {
	provider *provider
	// psp simulates the vendors' work: the provider's and the fraud
	// screen's.
	psp      sim.Simulator
	settings *mode.Live
	now      func() time.Time
}

// NewService returns a Service whose payment provider remembers its
// answers in store, with psp simulating the provider's work.
func NewService(store Store, psp sim.Simulator, settings *mode.Live) (*Service, error) {
	if store == nil || psp == nil || settings == nil {
		return nil, fmt.Errorf("payments: store, psp and settings are required")
	}
	return &Service{provider: newProvider(psp, store), psp: psp, settings: settings, now: time.Now}, nil
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

// CreateCharge charges c.AmountCents under c.PaymentKey, once: the
// provider answers a key it has answered before — a retry, a duplicate,
// a reconciliation — with its first answer, whatever it was.
//
// Once sent, the charge is the provider's: it completes however long the
// provider takes. In budgeted mode the caller stops waiting when its budget
// ends and gets DeadlineExceeded, while the provider goes on — a timeout
// does not prove nothing was charged. In naive mode the caller waits as
// long as the provider takes.
func (s *Service) CreateCharge(ctx context.Context, c Charge) (Charge, error) {
	if err := validate(c); err != nil {
		return Charge{}, err
	}
	done := make(chan result, 1)
	go s.charge(context.WithoutCancel(ctx), c, done)
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

// charge asks the provider. ctx is detached from the request (the charge
// is the provider's once sent), so the caller leaving never cuts the
// provider's work short; pspTimeout bounds it when the mode honours
// cancellation.
func (s *Service) charge(ctx context.Context, c Charge, done chan<- result) {
	ctx, cancel := context.WithTimeout(ctx, pspTimeout)
	defer cancel()
	stored, err := s.provider.charge(ctx, c)
	if errors.Is(err, sim.ErrInjected) {
		err = apperr.Wrap(apperr.Unavailable, err, "payment provider unavailable; nothing was charged")
	}
	done <- result{charge: stored, err: err}
}

// GetCharge returns the charge made under paymentKey, as the provider
// tells it: pending while it has not answered.
func (s *Service) GetCharge(ctx context.Context, paymentKey string) (Charge, error) {
	if err := checkKey(paymentKey); err != nil {
		return Charge{}, err
	}
	return s.provider.lookup(ctx, paymentKey)
}

// VoidCharge makes sure nothing will ever be charged under paymentKey: a
// key the provider never had is remembered as failed; one it had is
// returned as it is.
func (s *Service) VoidCharge(ctx context.Context, paymentKey string) (Charge, error) {
	if err := checkKey(paymentKey); err != nil {
		return Charge{}, err
	}
	return s.provider.void(ctx, paymentKey)
}

// Stats counts the charges.
func (s *Service) Stats(ctx context.Context) (Stats, error) { return s.provider.store.Stats(ctx) }
