package shop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/services/orders"
	"github.com/mercado-lab/mercado/services/payments"
)

// degradedAnswer is the part of a checkout's answer this file reads.
type degradedAnswer struct {
	Status           string `json:"status"`
	DeliveryEstimate *struct {
		Min int32 `json:"min_business_days"`
		Max int32 `json:"max_business_days"`
	} `json:"delivery_estimate"`
	Degraded []string `json:"degraded"`
}

// The optional dependency hung, end to end: budgeted answers 201 with the
// default estimate and the degraded marker, and never waits for the
// estimate's cap — the answer comes well before it would end; naive
// waits for the estimate in line and fails the checkout with it.
func TestHungEstimateEndToEnd(t *testing.T) {
	t.Parallel()
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		t.Run(string(m), func(t *testing.T) {
			// Budgeted: long, so that waiting for it would show. Naive:
			// short, since every layer tries it three times.
			estimateCap, tries := 600*time.Millisecond, 3
			if m == mode.Naive {
				estimateCap, tries = 200*time.Millisecond, 1
			}
			cfg := shop.EphemeralConfig()
			cfg.Shared.Mode = m
			// A naive shipping keeps hanging after orders gave up; do not
			// wait for it when the test is done.
			cfg.Shared.DrainTimeout = 200 * time.Millisecond
			cfg.Orders.EstimateCap = estimateCap
			cfg.Shipping.Faults = faults.Set{sim.ShippingEstimateDelivery: {Hang: time.Minute}}
			s := startShop(t, cfg)

			for i := range tries {
				start := time.Now()
				a, err := postCheckout(context.Background(), http.DefaultClient, s.GatewayURL(), fmt.Sprintf("hung-%s-%d", m, i), checkoutBody, "3000")
				took := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				var got degradedAnswer
				_ = json.Unmarshal(a.body, &got)
				if m == mode.Naive {
					if a.code == http.StatusCreated || took < estimateCap {
						t.Errorf("naive checkout %d with the estimate hung: %d after %v (%s); want it failed once the estimate's %v ran out",
							i, a.code, took, a.body, estimateCap)
					}
					continue
				}
				if a.code != http.StatusCreated || got.Status != "confirmed" {
					t.Fatalf("budgeted checkout %d: %d %s, want 201 confirmed", i, a.code, a.body)
				}
				if !slices.Equal(got.Degraded, []string{"delivery_estimate"}) || got.DeliveryEstimate == nil ||
					got.DeliveryEstimate.Min != 3 || got.DeliveryEstimate.Max != 5 {
					t.Errorf("budgeted checkout %d: %s; want the default 3–5 days, degraded [delivery_estimate]", i, a.body)
				}
				if took >= estimateCap {
					t.Errorf("budgeted checkout %d took %v: it waited for the optional estimate's %v cap", i, took, estimateCap)
				}
			}
		})
	}
}

// Orders' audit queue never sends payments a batch larger than payments
// takes in one call: the two services keep the limit apart, and this is
// where they meet.
func TestAuditBatchFitsThePaymentsLimit(t *testing.T) {
	if orders.MaxAuditBatch != payments.MaxAuditBatch {
		t.Errorf("orders sends batches of up to %d audit events, payments takes %d", orders.MaxAuditBatch, payments.MaxAuditBatch)
	}
	if b := orders.DefaultAuditSettings().Batch; b < 1 || b > payments.MaxAuditBatch {
		t.Errorf("orders' default audit batch is %d, want 1 to payments' %d", b, payments.MaxAuditBatch)
	}
}

// Every completed checkout reaches payments' audit trail, also those made
// while the trail was down: the queue retries until it is back.
func TestAuditEventsReachTheTrail(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.Mode = mode.Budgeted
	s := startShop(t, cfg)
	ctx := context.Background()
	payments := admin.Client{URL: "http://" + s.Payments.AdminAddr}
	if _, err := payments.SetFault(ctx, sim.PaymentsRecordAudit, faults.Spec{ErrorRate: 1}); err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		a, err := postCheckout(ctx, http.DefaultClient, s.GatewayURL(), fmt.Sprintf("audit-%d", i), checkoutBody, "2000")
		if err != nil || a.code != http.StatusCreated {
			t.Fatalf("checkout %d with the trail down: %d %s %v; want 201", i, a.code, a.body, err)
		}
	}
	entries := func() int {
		var v struct {
			Entries int `json:"entries"`
		}
		if err := payments.Read(ctx, "/admin/audit", &v); err != nil {
			t.Fatal(err)
		}
		return v.Entries
	}
	if got := entries(); got != 0 {
		t.Fatalf("%d entries while the trail fails every write", got)
	}
	if _, err := payments.ClearFaults(ctx, ""); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every checkout in the audit trail", func() bool { return entries() == n })

	// Orders counts a write as recorded once payments' answer is back,
	// a moment after payments has stored it: read its counters when the
	// last one is in.
	var fams driver.Families
	scrape := func() {
		var err error
		if fams, err = driver.Scrape(ctx, admin.Client{URL: "http://" + s.Orders.AdminAddr, HTTP: http.DefaultClient}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(outcome string) float64 {
		for _, m := range fams[telemetry.NameAuditEvents].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
		return -1
	}
	waitUntil(t, "orders counting every write recorded", func() bool { scrape(); return count(telemetry.AuditRecorded) == n })
	if count(telemetry.AuditQueued) != n || count(telemetry.AuditRecorded) != n || count(telemetry.AuditDroppedFull) != 0 {
		t.Errorf("orders counts %v queued, %v recorded, %v dropped; want %d, %d, 0",
			count(telemetry.AuditQueued), count(telemetry.AuditRecorded), count(telemetry.AuditDroppedFull), n, n)
	}
	if r := fams[telemetry.NameAuditRetries].GetMetric(); len(r) != 1 || r[0].GetCounter().GetValue() < 1 {
		t.Errorf("mercado_audit_retries_total = %v, want the retries made while the trail was down", r)
	}
}

// GET /admin/graph on orders shows the table and what the mode in force
// does with each dependency; a switch to naive makes every one critical.
func TestAdminGraph(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.Mode, cfg.Shared.Margin, cfg.Shared.Floor = mode.Budgeted, serve.DefaultMargin, serve.DefaultFloor
	s := startShop(t, cfg)
	ctx := context.Background()
	orders := admin.Client{URL: "http://" + s.Orders.AdminAddr}
	read := func() map[string]string {
		var v struct {
			Mode         string `json:"mode"`
			Dependencies []struct {
				Name, Now string
			} `json:"dependencies"`
		}
		if err := orders.Read(ctx, "/admin/graph", &v); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{"mode": v.Mode}
		for _, d := range v.Dependencies {
			out[d.Name] = d.Now
		}
		return out
	}
	got := read()
	want := map[string]string{"mode": "budgeted", "catalog": "critical", "fraud": "critical", "payments": "critical",
		"shipping": "deferred", "estimate": "optional", "audit": "fire_forward"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("budgeted GET /admin/graph = %v, want %v", got, want)
	}
	if _, err := orders.SwitchSelf(ctx, admin.ModeChange{Mode: mode.Naive}); err != nil {
		t.Fatal(err)
	}
	for name, now := range read() {
		if name != "mode" && now != "critical" {
			t.Errorf("naive: %s is %s, want critical", name, now)
		}
	}
	if !strings.Contains(fmt.Sprint(read()), "mode:naive") {
		t.Error("GET /admin/graph does not show the switch to naive")
	}
}
