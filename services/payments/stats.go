package payments

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/serve"
)

// chargesHandler serves GET /admin/charges: how many charges were taken,
// and how many of them were duplicates of a checkout already charged.
func chargesHandler(svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := svc.Stats(r.Context())
		if err != nil {
			problem.Write(w, r, http.StatusServiceUnavailable, "charges cannot be counted now")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
}

// auditHandler serves GET /admin/audit: how many completed checkouts the
// audit trail holds.
func auditHandler(a *AuditTrail) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := a.Count(r.Context())
		if err != nil {
			problem.Write(w, r, http.StatusServiceUnavailable, "the audit trail cannot be counted now")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Entries int `json:"entries"`
		}{n})
	})
}

// chargeGaugesEvery is how often the charge gauges read the store: at most
// once in that time, a scrape in between reporting the last reading.
// Counting the charges reads the whole table, tens of milliseconds of the
// database's time at fifty thousand charges, and a load run reads every
// service's gauges five times a second; a figure that must be exact, as
// a run's duplicate charges, is read from GET /admin/charges.
const chargeGaugesEvery = 5 * time.Second

// observeDuplicates exports the charge counts as gauges read at scrape
// time, from the store at most every chargeGaugesEvery:
// mercado_charges and mercado_duplicate_charges.
func observeDuplicates(kit *serve.Kit, svc *Service) error {
	m := kit.Metrics.Custom()
	charges, err := m.Int64ObservableGauge("mercado_charges", metric.WithDescription("Successful charges."))
	if err != nil {
		return err
	}
	dups, err := m.Int64ObservableGauge("mercado_duplicate_charges",
		metric.WithDescription("Successful charges beyond the first for one logical checkout (request id)."))
	if err != nil {
		return err
	}
	g := &chargeGauges{svc: svc}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st, err := g.read(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(charges, int64(st.Succeeded))
		o.ObserveInt64(dups, int64(st.Duplicates))
		return nil
	}, charges, dups)
	return err
}

// chargeGauges are the charge counts the gauges report: the store's, read
// at most every chargeGaugesEvery.
type chargeGauges struct {
	svc    *Service
	mu     sync.Mutex
	last   Stats
	readAt time.Time
}

func (g *chargeGauges) read(ctx context.Context) (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := g.svc.now(); g.readAt.IsZero() || now.Sub(g.readAt) >= chargeGaugesEvery {
		st, err := g.svc.Stats(ctx)
		if err != nil {
			return Stats{}, err
		}
		g.last, g.readAt = st, now
	}
	return g.last, nil
}
