package orders

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// Status is where an order is. Its text is what the store keeps.
type Status string

// Order statuses.
const (
	// StatusPending: the chain is running.
	StatusPending Status = "pending"
	// StatusPaymentPending: the charge's outcome is unknown (it timed out,
	// or payments could not be reached); the reconciler settles it.
	StatusPaymentPending Status = "payment_pending"
	// StatusConfirmed: charged. The shipment may still be pending.
	StatusConfirmed Status = "confirmed"
	// StatusFailed: the checkout failed; Failure says at which step. Its
	// stock is given back.
	StatusFailed Status = "failed"
)

// ShipmentStatus is where a confirmed order's shipment is; empty before
// the order is confirmed.
type ShipmentStatus string

// Shipment statuses of a confirmed order.
const (
	// ShipmentPending: still to be booked (shipping failed after the
	// charge); the outbox books it.
	ShipmentPending ShipmentStatus = "pending"
	ShipmentBooked  ShipmentStatus = "booked"
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
	Status   Status
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
	// ShipmentStatus is pending or booked once the order is confirmed.
	ShipmentStatus ShipmentStatus
	// RequestID names the client's logical checkout.
	RequestID string
	// IdempotencyKey is the key the order was placed under, if any: the
	// sweeper answers it once it settles an abandoned order.
	IdempotencyKey string
	// StockHeld marks a failed order whose stock catalog could not take
	// back when it failed; a worker gives it back (reconcile.go).
	StockHeld bool
	// Failure says why a failed order failed.
	Failure string
	// DeliveryEstimate is shipping's quote, or DefaultDeliveryEstimate
	// when the quote did not come in time; zero until the checkout
	// confirms the order, and for an order the reconciler confirmed after
	// its checkout had answered.
	DeliveryEstimate DeliveryEstimate
	// Degraded names the parts of the answer that hold a default value
	// instead of an optional dependency's answer (PartDeliveryEstimate).
	Degraded  []string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DeliveryEstimate is a window of business days from the order.
type DeliveryEstimate struct {
	MinBusinessDays, MaxBusinessDays int32
}

// DefaultDeliveryEstimate is the answer's delivery window when shipping's
// quote does not come in time: wider than any quote the carrier gives, so
// the default promises nothing the carrier would not keep.
var DefaultDeliveryEstimate = DeliveryEstimate{MinBusinessDays: 3, MaxBusinessDays: 5}

// PartDeliveryEstimate is the degraded marker of an answer whose delivery
// estimate is the default.
const PartDeliveryEstimate = "delivery_estimate"

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
	MaxSKUBytes  = 64
	// MaxKeyBytes bounds an Idempotency-Key and a request id.
	MaxKeyBytes = 255
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
	case len(r.IdempotencyKey) > MaxKeyBytes:
		return apperr.New(apperr.Invalid, "idempotency_key is longer than %d characters", MaxKeyBytes)
	case len(r.RequestID) > MaxKeyBytes:
		return apperr.New(apperr.Invalid, "request_id is longer than %d characters", MaxKeyBytes)
	}
	for i, it := range r.Items {
		if it.SKU == "" || len(it.SKU) > MaxSKUBytes {
			return apperr.New(apperr.Invalid, "items[%d].sku must be 1 to %d characters", i, MaxSKUBytes)
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
	// List returns orders matching f, least recently updated first.
	List(ctx context.Context, f Filter) ([]Order, error)
	// ByIdempotencyKey returns the orders placed under key, newest first.
	ByIdempotencyKey(ctx context.Context, key string) ([]Order, error)
}

// Filter selects orders for the background workers.
type Filter struct {
	Status Status
	// ShipmentStatus, when set, must match too.
	ShipmentStatus ShipmentStatus
	// UpdatedBefore keeps orders last updated before it.
	UpdatedBefore time.Time
	// StockHeld keeps only orders whose stock is still to be given back.
	StockHeld bool
	Limit     int
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

// Payments charges an order under its payment key.
type Payments interface {
	Charge(ctx context.Context, o Order) (Charge, error)
	// Get returns the charge under key; an error with code NotFound when
	// there is none.
	Get(ctx context.Context, key string) (Charge, error)
	// Void makes sure nothing will be charged under key, and returns the
	// charge if one was made after all.
	Void(ctx context.Context, key string) (Charge, error)
}

// Charge is payments' record of a payment key.
type Charge struct {
	ID     string
	Status ChargeStatus
}

// ChargeStatus is where a charge is, as payments tells it.
type ChargeStatus string

// Charge statuses.
const (
	// ChargePending: the provider has not answered yet.
	ChargePending ChargeStatus = "pending"
	// ChargeSucceeded: the money was taken.
	ChargeSucceeded ChargeStatus = "succeeded"
	// ChargeFailed: no money was taken, and none will be under its key.
	ChargeFailed ChargeStatus = "failed"
)

// Fraud screens an order before it is charged (payments' fraud screen).
type Fraud interface {
	Screen(ctx context.Context, o Order) (Screening, error)
}

// Screening is the fraud screen's answer about an order.
type Screening struct {
	Approved bool
	// Score is the risk the screen saw, 0 to 100.
	Score int
}

// Shipping books an order's shipment and quotes its delivery.
type Shipping interface {
	Ship(ctx context.Context, o Order) (shipmentID string, err error)
	// Estimate asks for the delivery window of o's parcel; it books
	// nothing.
	Estimate(ctx context.Context, o Order) (DeliveryEstimate, error)
}

// Audit records completed checkouts in the audit trail. Recording an
// order twice makes one entry, so a write may be retried.
type Audit interface {
	// Record records one event: the in-line write.
	Record(ctx context.Context, e AuditEvent) error
	// RecordBatch records events in one write: the audit queue's. Its
	// error is the write's, and then none was recorded; otherwise refused
	// holds, for each event, nil when it was recorded or why the trail
	// refused it.
	RecordBatch(ctx context.Context, events []AuditEvent) (refused []error, err error)
}

// AuditEvent is a completed checkout, as the audit trail keeps it.
type AuditEvent struct {
	OrderID     string
	Customer    string
	TotalCents  int64
	ChargeID    string
	RequestID   string
	ConfirmedAt time.Time
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
