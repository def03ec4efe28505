package payments

import (
	"context"
	"encoding/json"
	"net/http"

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

// observeDuplicates exports the charge counts as gauges read at scrape
// time: mercado_charges and mercado_duplicate_charges.
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
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st, err := svc.Stats(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(charges, int64(st.Succeeded))
		o.ObserveInt64(dups, int64(st.Duplicates))
		return nil
	}, charges, dups)
	return err
}
