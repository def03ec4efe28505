package payments

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/sim"
)

// The fraud screen: a simulated risk vendor asked about an order before it
// is charged. It needs no price, so orders can ask it while catalog
// reserves the stock (the fan-out, services/orders/service.go).

// Verdict is the screen's answer about an order.
type Verdict string

// Verdicts.
const (
	// Approved: the order may be charged.
	Approved Verdict = "approved"
	// Declined: the order must not be charged.
	Declined Verdict = "declined"
)

// Screening is what the fraud screen said about one order.
type Screening struct {
	Verdict Verdict
	// Score is the risk seen, 0 (none) to 100.
	Score int
}

// ScreenItem is one line of an order, as the screen reads it.
type ScreenItem struct {
	SKU string
	Qty int64
}

// ScreenRequest is an order to screen.
type ScreenRequest struct {
	OrderID  string
	Customer string
	Address  string
	Items    []ScreenItem
}

// Limits on a screening request, an order's own (services/orders).
const (
	MaxScreenItems = 50
	MaxScreenQty   = 1000
	MaxTextBytes   = 500
	MaxSKUBytes    = 64
)

// The simulated vendor's rule. A customer on its watch list scores 100
// and is declined; any other order scores by its size, one point per 20
// units up to 50, below DeclineScore, and is approved. The watch list is
// the lab's way to see a declined checkout: `"customer": "mallory"`.
const DeclineScore = 80

// watchList are the customers the simulated vendor declines, compared
// without regard to case or surrounding space.
var watchList = []string{"mallory"}

// validateScreen reports what is wrong with a screening request.
func validateScreen(r ScreenRequest) error {
	switch {
	case r.OrderID == "":
		return apperr.New(apperr.Invalid, "order_id is required")
	case len(r.OrderID) > MaxOrderIDBytes:
		return apperr.New(apperr.Invalid, "order_id is longer than %d characters", MaxOrderIDBytes)
	case r.Customer == "" || len(r.Customer) > MaxTextBytes:
		return apperr.New(apperr.Invalid, "customer must be 1 to %d bytes", MaxTextBytes)
	case r.Address == "" || len(r.Address) > MaxTextBytes:
		return apperr.New(apperr.Invalid, "address must be 1 to %d bytes", MaxTextBytes)
	case len(r.Items) == 0 || len(r.Items) > MaxScreenItems:
		return apperr.New(apperr.Invalid, "an order needs 1 to %d items, got %d", MaxScreenItems, len(r.Items))
	}
	for i, it := range r.Items {
		if it.SKU == "" || len(it.SKU) > MaxSKUBytes {
			return apperr.New(apperr.Invalid, "items[%d].sku must be 1 to %d characters", i, MaxSKUBytes)
		}
		if it.Qty < 1 || it.Qty > MaxScreenQty {
			return apperr.New(apperr.Invalid, "items[%d].qty must be 1 to %d, got %d", i, MaxScreenQty, it.Qty)
		}
	}
	return nil
}

// ScreenOrder asks the simulated fraud vendor about r. The vendor's work
// is the ScreenOrder fault's (its latency, error rate or hang), under the
// mode's cancellation rule: budgeted, the wait ends with the caller's
// deadline; naive, it runs to its end. Nothing is stored: a screening can
// be asked again at no cost.
func (s *Service) ScreenOrder(ctx context.Context, r ScreenRequest) (Screening, error) {
	if err := validateScreen(r); err != nil {
		return Screening{}, err
	}
	if err := s.psp.Work(ctx, sim.PaymentsScreenOrder); err != nil {
		if errors.Is(err, sim.ErrInjected) {
			return Screening{}, apperr.Wrap(apperr.Unavailable, err, "fraud screen unavailable")
		}
		return Screening{}, err
	}
	return score(r), nil
}

// score is the simulated vendor's verdict on r.
func score(r ScreenRequest) Screening {
	if slices.Contains(watchList, strings.ToLower(strings.TrimSpace(r.Customer))) {
		return Screening{Verdict: Declined, Score: 100}
	}
	var units int64
	for _, it := range r.Items {
		units += it.Qty
	}
	return Screening{Verdict: Approved, Score: int(min(units/20, 50))}
}
