package shipping

import (
	"context"
	"errors"
	"fmt"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
)

// Item is one line of a shipment.
type Item struct {
	SKU string
	Qty int64
}

// Shipment is a parcel booked with the carrier for one order.
type Shipment struct {
	ID      string
	OrderID string
	Address string
	Items   []Item
	Status  string
}

// StatusBooked is the status of a shipment the carrier accepted.
const StatusBooked = "booked"

// Store keeps shipments, at most one per order.
type Store interface {
	// Create stores sh unless the order already has a shipment, in which
	// case it returns that one.
	Create(ctx context.Context, sh Shipment) (Shipment, error)
	Get(ctx context.Context, id string) (Shipment, error)
}

// Service is the shipping use cases.
type Service struct {
	store    Store
	carrier  *faults.Injector
	settings *mode.Live
}

// NewService returns a Service over store, with carrier simulating the
// carrier's work.
func NewService(store Store, carrier *faults.Injector, settings *mode.Live) (*Service, error) {
	if store == nil || carrier == nil || settings == nil {
		return nil, fmt.Errorf("shipping: store, carrier and settings are required")
	}
	return &Service{store: store, carrier: carrier, settings: settings}, nil
}

// CreateShipment books a shipment for an order.
func (s *Service) CreateShipment(ctx context.Context, sh Shipment) (Shipment, error) {
	switch {
	case sh.OrderID == "":
		return Shipment{}, apperr.New(apperr.Invalid, "order_id is required")
	case sh.Address == "":
		return Shipment{}, apperr.New(apperr.Invalid, "address is required")
	case len(sh.Items) == 0:
		return Shipment{}, apperr.New(apperr.Invalid, "a shipment needs at least one item")
	}
	// The call to the carrier: lesson 7's degraded dependency.
	if err := s.carrier.Work(ctx, "CreateShipment", s.settings.Load().Mechanisms.HonourCancel); err != nil {
		if errors.Is(err, faults.ErrInjected) {
			return Shipment{}, err
		}
		return Shipment{}, apperr.Wrap(apperr.Timeout, err, "carrier did not answer in time")
	}
	sh.Status = StatusBooked
	return s.store.Create(ctx, sh)
}

// GetShipment returns one shipment.
func (s *Service) GetShipment(ctx context.Context, id string) (Shipment, error) {
	if id == "" {
		return Shipment{}, apperr.New(apperr.Invalid, "shipment_id is required")
	}
	return s.store.Get(ctx, id)
}
