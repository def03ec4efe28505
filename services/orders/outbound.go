package orders

import (
	"strings"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// hopNames name each outbound method in Server-Timing and the lab's
// tables: each dependency's call by the dependency (graph), the other
// methods by dependency and verb.
var hopNames = func() map[string]string {
	names := map[string]string{
		catalogv1.CatalogService_ReleaseStock_FullMethodName: "catalog.release",
		paymentsv1.PaymentsService_GetCharge_FullMethodName:  "payments.get",
		// The audit queue writes in batches, as the same dependency.
		paymentsv1.PaymentsService_RecordAudits_FullMethodName: auditDep,
	}
	for _, d := range declared {
		names[d.Method] = d.Name
	}
	return names
}()

func hopName(method string) string {
	if n, ok := hopNames[method]; ok {
		return n
	}
	return method
}

// newChains builds each dependency's client chain
// (resilience.ClientChain: retries, pool, breaker, clip), by name: its own
// cap, and the mechanisms of the mode each call's request runs in. In
// naive mode the dependencies share one outbound pool (the vendor is not
// on a pool of its own) and every call is retried blind; in budgeted mode
// each has its own bulkhead and breaker, and this layer — the only one
// that retries — retries within the budget the calls the table says it
// retries. Every call orders makes is idempotent: a reservation, a charge
// and a shipment are each keyed by the order.
func newChains(kit *serve.Kit, cfg Config) map[string]grpc.UnaryClientInterceptor {
	r := cfg.Resilience
	shared := resilience.NewPoolRef(bulkhead.Settings{
		Name: "outbound", Capacity: r.Workers, MaxWait: -1,
	}, kit.Metrics)
	kit.Settings.OnSwitch(func(s mode.Settings) { shared.Resize(s.Workers) })
	chains := map[string]grpc.UnaryClientInterceptor{}
	// Each call's timeout is computed in the chain's last step, by
	// deadline.Policy.Decide (pkg/deadline/budget.go): budgeted
	// min(cap, remaining − margin), naive the cap, fragile none.
	for _, d := range Graph(cfg) {
		chains[d.Name] = resilience.ClientChain(resilience.NewOutbound(resilience.OutboundOptions{
			Name: d.Name, Cap: d.Cap, HopName: hopName,
			Settings: kit.Settings, Metrics: kit.Metrics, Tracing: kit.Tracing, Log: kit.Log,
			Shared:       shared,
			Bulkhead:     bulkhead.Settings{Capacity: r.Bulkhead, MaxWait: r.MaxWait},
			Breaker:      breaker.Settings{MinCalls: r.BreakerMinCalls, FailureRatio: r.BreakerRatio, Window: r.BreakerWindow, OpenFor: r.BreakerOpen},
			NaiveRetries: true, BudgetedRetries: d.Retried, Hedged: d.Hedged,
			Idempotent: func(string) bool { return true },
		}))
	}
	return chains
}

// Calls are the checkout's calls (Graph) under the settings s, as
// `mercado budget check` and GET /admin/budget read them: each one's cap
// and flag, how many times it is tried, how the mechanisms in force treat
// it, and its place in the checkout — the reservation and the fraud
// screen in one stage, at once when the fan-out is parallel, then the
// charge, the booking, and the estimate and the audit write.
func (c Config) Calls(s mode.Settings) []budgetcheck.Call {
	var out []budgetcheck.Call
	parallel := s.Mechanisms.Fanout == mode.FanoutParallel
	for i, d := range Graph(c) {
		to, method, _ := strings.Cut(d.Call, ".")
		stage := i + 1
		if d.Name == "fraud" && parallel {
			stage = 1
		}
		crit := d.treatment(s.Mechanisms)
		setting := ""
		if d.Flag != "" {
			setting = "--" + d.Flag
		}
		out = append(out, budgetcheck.Call{
			From: "orders", To: to, Dep: d.Name, Setting: setting, Cap: s.Cap(d.Cap),
			Attempts:    resilience.Attempts(s, true, d.Retried),
			Criticality: string(crit), Stage: stage, Parallel: stage == 1 && parallel,
			Route: "Checkout", Method: method,
		})
	}
	return out
}
