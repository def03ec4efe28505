package shipping

import (
	"context"
	"errors"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/sim"
)

// Estimate is the carrier's quote for a parcel: a window of business days
// from the order.
type Estimate struct {
	MinBusinessDays, MaxBusinessDays int32
}

// The carrier's quote. The simulated carrier delivers anywhere in the
// same window; what makes the call interesting is how long it takes to
// answer (sim.ShippingEstimateDelivery), not what it says.
const (
	quoteMinDays = 2
	quoteMaxDays = 4
)

// EstimateDelivery asks the carrier how long a parcel to address would
// take. It books nothing and keeps nothing, so it can be asked any number
// of times.
func (s *Service) EstimateDelivery(ctx context.Context, address string, items []Item) (Estimate, error) {
	if err := validateParcel(address, items); err != nil {
		return Estimate{}, err
	}
	if err := s.carrier.Work(ctx, sim.ShippingEstimateDelivery); err != nil {
		if errors.Is(err, sim.ErrInjected) {
			return Estimate{}, err
		}
		return Estimate{}, apperr.Wrap(apperr.Timeout, err, "carrier did not quote in time")
	}
	return Estimate{MinBusinessDays: quoteMinDays, MaxBusinessDays: quoteMaxDays}, nil
}
