package loadtest

import (
	"context"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// Target is the shop under load, as the scenario runner needs it. The runner
// sends the traffic and measures it; the Target arranges each run (its mode,
// its faults) and reads what the services counted. lab/driver is one,
// over the services' admin APIs.
type Target interface {
	// URL is the gateway's base URL, where the traffic goes.
	URL() string
	// Switch puts the whole shop in mode m, with the overrides on top, on
	// fresh pools of workers slots each (zero: each service's own size,
	// its --workers).
	Switch(ctx context.Context, m mode.Mode, o mode.Overrides, workers int) error
	// SetFaults puts each service's faults in force, given in the --fault
	// syntax by service name ("shipping": "CreateShipment:hang=5s");
	// services not named have none.
	SetFaults(ctx context.Context, specs map[string]string) error
	// Settle waits until no service holds or queues work, or for at most
	// limit.
	Settle(ctx context.Context, limit time.Duration)
	// Counters reads what the services have counted since they started.
	Counters(ctx context.Context) (Counters, error)
	// Gauges reads the services' pool and breaker gauges.
	Gauges(ctx context.Context) (Gauges, error)
}

// NetworkTarget is a Target with fault proxies between its services, which
// a scenario with network faults needs (Scenario.UsesNetwork).
type NetworkTarget interface {
	Target
	// SetNetwork puts each link's network faults in force, given in
	// internal/netfault's grammar by link name ("orders-shipping":
	// "stall"); links not named have none.
	SetNetwork(ctx context.Context, specs map[string]string) error
}

// Counters are what the services have counted since they started, read at
// one moment; a run reports how much they grew (ServerFigures).
type Counters struct {
	LateCompletions float64
	LateWorkSeconds float64
	BreakerOpens    float64
	PoolRejections  float64
	Retries         float64
	// DuplicateCharges are payments' charges beyond one per logical
	// checkout.
	DuplicateCharges float64
	// Skipped counts calls and requests not served, by reason.
	Skipped map[string]float64
	// InsufficientBudget counts, by service, the calls it did not make
	// because less than the floor was left of the budget.
	InsufficientBudget map[string]float64
	// Requests counts the requests each service received, by service;
	// Methods by "service/Method" (the gRPC method's short name).
	Requests map[string]float64
	Methods  map[string]float64
	// Hops are each outbound hop's duration histogram, every outcome
	// together, by "service/dep"; Caps each hop's cap in seconds, by
	// "service/dep". Their growth over a span gives the hop's headroom
	// (ServerFigures.HeadroomMS).
	Hops map[string]Histogram
	Caps map[string]float64
	// HopTimeouts count each hop's calls that a deadline ended — its own
	// cap (outcome timeout) or the caller's budget (budget_exhausted) —
	// by "service/dep".
	HopTimeouts map[string]float64
	// HopBreakerOpens count each hop's breaker opening, by "service/dep".
	HopBreakerOpens map[string]float64
	// LockWait is the catalog's histogram of reservations' waits for
	// their products' locks, every outcome together.
	LockWait Histogram
}

// Gauges are the services' gauges at one moment.
type Gauges struct {
	// PoolInFlight is each pool's work in flight, by "service/pool".
	PoolInFlight map[string]float64
	// PoolCapacity is each pool's slots, by "service/pool".
	PoolCapacity map[string]float64
	// BreakerState is each breaker's state by "service/dep": 0 closed, 1
	// half-open, 2 open.
	BreakerState map[string]float64
}
