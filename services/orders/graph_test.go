package orders_test

import (
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/orders"
)

// The table declares each dependency once; what a mode does with it
// follows from the mechanism behind it: budgeted keeps the declared
// criticality, naive makes every dependency critical and in line, and a
// single switch off turns only its own dependencies critical.
func TestGraphTreatments(t *testing.T) {
	cfg := orders.DefaultConfig()
	budgetedNoCrit := mode.Budgeted.Mechanisms()
	budgetedNoCrit.Criticality = false
	for _, tc := range []struct {
		name string
		mech mode.Mechanisms
		want map[string]orders.Criticality
	}{
		{"budgeted", mode.Budgeted.Mechanisms(), map[string]orders.Criticality{
			"catalog": orders.Critical, "fraud": orders.Critical, "payments": orders.Critical, "shipping": orders.Deferred,
			"estimate": orders.Optional, "audit": orders.FireForward}},
		{"naive", mode.Naive.Mechanisms(), map[string]orders.Criticality{
			"catalog": orders.Critical, "fraud": orders.Critical, "payments": orders.Critical, "shipping": orders.Critical,
			"estimate": orders.Critical, "audit": orders.Critical}},
		{"budgeted, criticality=off", budgetedNoCrit, map[string]orders.Criticality{
			"catalog": orders.Critical, "fraud": orders.Critical, "payments": orders.Critical, "shipping": orders.Deferred,
			"estimate": orders.Critical, "audit": orders.Critical}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := orders.ViewGraph(cfg, orders.AuditSettings{}, mode.Settings{Mode: mode.Budgeted, Mechanisms: tc.mech})
			if len(v.Dependencies) != len(tc.want) {
				t.Fatalf("%d dependencies, want %d: %+v", len(v.Dependencies), len(tc.want), v.Dependencies)
			}
			for _, d := range v.Dependencies {
				if d.Now != tc.want[d.Name] {
					t.Errorf("%s: now %q, want %q", d.Name, d.Now, tc.want[d.Name])
				}
				if d.Now == orders.Critical && d.Criticality != orders.Critical && !strings.Contains(d.OnFailure, "the checkout fails") {
					t.Errorf("%s made critical says %q on failure", d.Name, d.OnFailure)
				}
			}
		})
	}
	v := orders.ViewGraph(cfg, orders.AuditSettings{}, mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms()})
	for _, d := range v.Dependencies {
		switch d.Name {
		case "estimate":
			if d.CapMS != 150 || d.Default != "3–5 business days" {
				t.Errorf("estimate: cap %d ms, default %q; want 150 ms and 3–5 business days", d.CapMS, d.Default)
			}
		case "audit":
			if d.CapMS != orders.AuditTimeout.Milliseconds() || d.LifetimeMS != orders.DefaultAuditSettings().Lifetime.Milliseconds() {
				t.Errorf("audit: cap %d ms, lifetime %d ms", d.CapMS, d.LifetimeMS)
			}
		case "catalog":
			if d.CapMS != cfg.CatalogCap.Milliseconds() {
				t.Errorf("catalog: cap %d ms, want its --catalog-cap", d.CapMS)
			}
		}
	}
}
