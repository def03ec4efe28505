package orders

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// Order statuses.
const (
	StatusPending   = "pending"
	StatusConfirmed = "confirmed"
	StatusFailed    = "failed"
)

// Item is one line of an order.
type Item struct {
	SKU            string
	Qty            int64
	UnitPriceCents int64
}

// Order is a customer's checkout and where it got to.
type Order struct {
	ID       string
	Status   string
	Customer string
	Items    []Item
	Address  string
	// PaymentKey is derived once per order and reused for every charge
	// attempt, so payments can charge it at most once.
	PaymentKey    string
	ReservationID string
	TotalCents    int64
	ChargeID      string
	ShipmentID    string
	// Failure says why a failed order failed.
	Failure   string
	CreatedAt time.Time
}

// PlaceRequest is a checkout as orders receives it.
type PlaceRequest struct {
	Customer       string
	Items          []Item
	Address        string
	IdempotencyKey string
	RequestID      string
}

// Limits on a checkout.
const (
	MaxItems     = 50
	MaxQty       = 1000
	MaxTextBytes = 500
)

// Validate reports what is wrong with r, if anything.
func (r PlaceRequest) Validate() error {
	switch {
	case r.Customer == "" || len(r.Customer) > MaxTextBytes:
		return apperr.New(apperr.Invalid, "customer must be 1 to %d bytes", MaxTextBytes)
	case r.Address == "" || len(r.Address) > MaxTextBytes:
		return apperr.New(apperr.Invalid, "address must be 1 to %d bytes", MaxTextBytes)
	case len(r.Items) == 0 || len(r.Items) > MaxItems:
		return apperr.New(apperr.Invalid, "an order needs 1 to %d items, got %d", MaxItems, len(r.Items))
	}
	for i, it := range r.Items {
		if it.SKU == "" {
			return apperr.New(apperr.Invalid, "items[%d].sku is required", i)
		}
		if it.Qty < 1 || it.Qty > MaxQty {
			return apperr.New(apperr.Invalid, "items[%d].qty must be 1 to %d, got %d", i, MaxQty, it.Qty)
		}
	}
	return nil
}

// Store keeps orders.
type Store interface {
	Create(ctx context.Context, o Order) error
	Update(ctx context.Context, o Order) error
	Get(ctx context.Context, id string) (Order, error)
}

// Catalog reserves and releases stock.
type Catalog interface {
	Reserve(ctx context.Context, orderID string, items []Item) (Reservation, error)
	Release(ctx context.Context, reservationID string) error
}

// Reservation is the stock held for an order, with prices.
type Reservation struct {
	ID         string
	Items      []Item
	TotalCents int64
}

// Payments charges an order.
type Payments interface {
	Charge(ctx context.Context, o Order, requestID string) (chargeID string, err error)
}

// Shipping books an order's shipment.
type Shipping interface {
	Ship(ctx context.Context, o Order) (shipmentID string, err error)
}

// Service is the orders use cases.
type Service struct {
	store    Store
	catalog  Catalog
	payments Payments
	shipping Shipping
	log      *slog.Logger
	now      func() time.Time
}

// NewService returns a Service; every dependency is required.
func NewService(store Store, c Catalog, p Payments, s Shipping, log *slog.Logger) (*Service, error) {
	if store == nil || c == nil || p == nil || s == nil || log == nil {
		return nil, errors.New("orders: store, catalog, payments, shipping and log are required")
	}
	return &Service{store: store, catalog: c, payments: p, shipping: s, log: log, now: time.Now}, nil
}

// bookkeepingTimeout bounds writes that must outlive the request (marking
// an order failed, releasing its stock) once the request's own budget is
// gone.
const bookkeepingTimeout = 2 * time.Second

// PlaceOrder runs the checkout chain: reserve stock, charge, ship. When a
// step fails the order is stored as failed, its stock released, and the
// step's error returned with its code (a timeout stays a timeout).
func (s *Service) PlaceOrder(ctx context.Context, req PlaceRequest) (Order, error) {
	if err := req.Validate(); err != nil {
		return Order{}, err
	}
	o := Order{
		ID: newID("ord"), Status: StatusPending, Customer: req.Customer,
		Items: req.Items, Address: req.Address, CreatedAt: s.now(),
	}
	o.PaymentKey = "pay_" + o.ID
	if err := s.store.Create(ctx, o); err != nil {
		return Order{}, err
	}

	res, err := s.catalog.Reserve(ctx, o.ID, o.Items)
	if err != nil {
		return s.fail(ctx, o, apperr.FromGRPC(err, "reserving stock"))
	}
	o.ReservationID, o.Items, o.TotalCents = res.ID, res.Items, res.TotalCents

	if o.ChargeID, err = s.payments.Charge(ctx, o, req.RequestID); err != nil {
		return s.fail(ctx, o, apperr.FromGRPC(err, "charging"))
	}
	if o.ShipmentID, err = s.shipping.Ship(ctx, o); err != nil {
		return s.fail(ctx, o, apperr.FromGRPC(err, "booking the shipment"))
	}

	o.Status = StatusConfirmed
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := s.store.Update(bctx, o); err != nil {
		return Order{}, err
	}
	return o, nil
}

// bookkeeping returns a context for writes that must land even when the
// request's budget is gone: the request's values without its deadline or
// cancellation, bounded by a timeout of its own.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
}

// fail records o as failed because of cause and gives its stock back.
// A charge already taken stays on the order for reconciliation.
func (s *Service) fail(ctx context.Context, o Order, cause error) (Order, error) {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	o.Status, o.Failure = StatusFailed, cause.Error()
	if o.ReservationID != "" {
		if err := s.catalog.Release(bctx, o.ReservationID); err != nil {
			s.log.Error("releasing stock of a failed order", "order_id", o.ID, "reservation_id", o.ReservationID, "err", err)
		}
	}
	if err := s.store.Update(bctx, o); err != nil {
		s.log.Error("recording a failed order", "order_id", o.ID, "err", err)
	}
	return o, fmt.Errorf("order %s: %w", o.ID, cause)
}

// GetOrder returns one order.
func (s *Service) GetOrder(ctx context.Context, id string) (Order, error) {
	if id == "" || len(id) > 64 {
		return Order{}, apperr.New(apperr.Invalid, "order_id must be 1 to 64 bytes")
	}
	return s.store.Get(ctx, id)
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
