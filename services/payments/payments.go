package payments

import (
	"context"
	"errors"
	"fmt"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
)

// Charge is money taken from a customer for one order.
type Charge struct {
	ID          string
	PaymentKey  string
	OrderID     string
	Customer    string
	AmountCents int64
	// RequestID names the client's logical checkout.
	RequestID string
	Status    string
}

// StatusSucceeded is the status of a charge the PSP accepted.
const StatusSucceeded = "succeeded"

// Store keeps charges, at most one per payment key.
type Store interface {
	// Create stores c unless a charge with its payment key exists, in
	// which case it returns that one and created is false.
	Create(ctx context.Context, c Charge) (stored Charge, created bool, err error)
	GetByKey(ctx context.Context, paymentKey string) (Charge, error)
}

// Service is the payments use cases.
type Service struct {
	store    Store
	psp      *faults.Injector
	settings *mode.Live
}

// NewService returns a Service over store, with psp simulating the
// payment provider's work.
func NewService(store Store, psp *faults.Injector, settings *mode.Live) (*Service, error) {
	if store == nil || psp == nil || settings == nil {
		return nil, fmt.Errorf("payments: store, psp and settings are required")
	}
	return &Service{store: store, psp: psp, settings: settings}, nil
}

// CreateCharge charges c.AmountCents under c.PaymentKey, once.
func (s *Service) CreateCharge(ctx context.Context, c Charge) (Charge, error) {
	switch {
	case c.PaymentKey == "":
		return Charge{}, apperr.New(apperr.Invalid, "payment_key is required")
	case len(c.PaymentKey) > 255:
		return Charge{}, apperr.New(apperr.Invalid, "payment_key is longer than 255 characters")
	case c.OrderID == "":
		return Charge{}, apperr.New(apperr.Invalid, "order_id is required")
	case c.AmountCents <= 0:
		return Charge{}, apperr.New(apperr.Invalid, "amount_cents must be positive, got %d", c.AmountCents)
	}
	if prior, err := s.store.GetByKey(ctx, c.PaymentKey); err == nil {
		return prior, nil
	}
	// The call to the PSP: the slow dependency of the lessons.
	if err := s.psp.Work(ctx, "CreateCharge", s.settings.Load().Mechanisms.HonourCancel); err != nil {
		if errors.Is(err, faults.ErrInjected) {
			return Charge{}, err
		}
		return Charge{}, apperr.Wrap(apperr.Timeout, err, "payment provider did not answer in time")
	}
	c.Status = StatusSucceeded
	stored, _, err := s.store.Create(ctx, c)
	return stored, err
}

// GetCharge returns the charge made under paymentKey.
func (s *Service) GetCharge(ctx context.Context, paymentKey string) (Charge, error) {
	if paymentKey == "" {
		return Charge{}, apperr.New(apperr.Invalid, "payment_key is required")
	}
	return s.store.GetByKey(ctx, paymentKey)
}
