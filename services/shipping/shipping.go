package shipping

import (
	"context"
	"errors"
	"fmt"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/sim"
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

// Limits on a shipment, matching an order's: items, units per item, the
// length of an id (order, shipment, SKU) and of an address.
const (
	MaxItems        = 50
	MaxQty          = 1000
	MaxIDBytes      = 64
	MaxAddressBytes = 500
)

// validate reports what is wrong with a shipment request.
func validate(sh Shipment) error {
	switch {
	case sh.OrderID == "":
		return apperr.New(apperr.Invalid, "order_id is required")
	case len(sh.OrderID) > MaxIDBytes:
		return apperr.New(apperr.Invalid, "order_id is longer than %d characters", MaxIDBytes)
	}
	return validateParcel(sh.Address, sh.Items)
}

// validateParcel reports what is wrong with a parcel's address and items,
// booked or only quoted.
func validateParcel(address string, items []Item) error {
	switch {
	case address == "":
		return apperr.New(apperr.Invalid, "address is required")
	case len(address) > MaxAddressBytes:
		return apperr.New(apperr.Invalid, "address is longer than %d bytes", MaxAddressBytes)
	case len(items) == 0 || len(items) > MaxItems:
		return apperr.New(apperr.Invalid, "a shipment needs 1 to %d items, got %d", MaxItems, len(items))
	}
	for i, it := range items {
		switch {
		case it.SKU == "" || len(it.SKU) > MaxIDBytes:
			return apperr.New(apperr.Invalid, "items[%d].sku must be 1 to %d characters", i, MaxIDBytes)
		case it.Qty < 1 || it.Qty > MaxQty:
			return apperr.New(apperr.Invalid, "items[%d].qty must be 1 to %d, got %d", i, MaxQty, it.Qty)
		}
	}
	return nil
}

// Store keeps shipments, at most one per order.
type Store interface {
	// Create stores sh unless the order already has a shipment, in which
	// case it returns that one.
	Create(ctx context.Context, sh Shipment) (Shipment, error)
	Get(ctx context.Context, id string) (Shipment, error)
}

// Service is the shipping use cases.
type Service struct {
	store   Store
	carrier sim.Simulator
}

// NewService returns a Service over store, with carrier simulating the
// carrier's work.
func NewService(store Store, carrier sim.Simulator) (*Service, error) {
	if store == nil || carrier == nil {
		return nil, fmt.Errorf("shipping: store and carrier are required")
	}
	return &Service{store: store, carrier: carrier}, nil
}

// CreateShipment books a shipment for an order.
func (s *Service) CreateShipment(ctx context.Context, sh Shipment) (Shipment, error) {
	if err := validate(sh); err != nil {
		return Shipment{}, err
	}
	// The call to the carrier: lesson 7's degraded dependency.
	if err := s.carrier.Work(ctx, sim.ShippingCreateShipment); err != nil {
		if errors.Is(err, sim.ErrInjected) {
			return Shipment{}, err
		}
		return Shipment{}, apperr.Wrap(apperr.Timeout, err, "carrier did not answer in time")
	}
	sh.Status = StatusBooked
	return s.store.Create(ctx, sh)
}

// GetShipment returns one shipment.
func (s *Service) GetShipment(ctx context.Context, id string) (Shipment, error) {
	switch {
	case id == "":
		return Shipment{}, apperr.New(apperr.Invalid, "shipment_id is required")
	case len(id) > MaxIDBytes:
		return Shipment{}, apperr.New(apperr.Invalid, "shipment_id is longer than %d characters", MaxIDBytes)
	}
	return s.store.Get(ctx, id)
}
