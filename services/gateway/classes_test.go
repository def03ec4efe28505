package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/services/catalog"
	"github.com/mercado-lab/mercado/services/gateway"
)

// X-Request-Class names one of three classes, exactly; anything else is
// a 400 problem+json before any work, like a bad X-Deadline-Ms.
func TestRequestClassHeader(t *testing.T) {
	a := startShop(t)
	for _, tt := range []struct {
		value string
		code  int
	}{
		{"interactive", http.StatusOK}, {"background", http.StatusOK}, {"batch", http.StatusOK},
		{"Batch", http.StatusBadRequest}, {"urgent", http.StatusBadRequest}, {"batch,interactive", http.StatusBadRequest},
	} {
		t.Run(tt.value, func(t *testing.T) {
			r := a.get(t, "/api/products", map[string]string{"X-Request-Class": tt.value})
			if tt.code == http.StatusOK {
				if r.code != http.StatusOK {
					t.Errorf("status = %d, want 200 (body %s)", r.code, r.body)
				}
				return
			}
			checkProblem(t, r, tt.code, "invalid X-Request-Class header")
		})
	}
}

// Each class has its own default and maximum budget: a batch checkout may
// ask for far more than interactive's 10 s, a background one without the
// header gets 30 s.
func TestClassBudgets(t *testing.T) {
	a := startShop(t)
	for _, tt := range []struct {
		name     string
		header   map[string]string
		min, max time.Duration
	}{
		{"batch, huge value", map[string]string{"X-Request-Class": "batch", "X-Deadline-Ms": "9999999999"},
			deadline.DefaultBatchMaxBudget - time.Second, deadline.DefaultBatchMaxBudget},
		{"background, no header", map[string]string{"X-Request-Class": "background"},
			deadline.DefaultBackgroundBudget - time.Second, deadline.DefaultBackgroundBudget},
		{"interactive, huge value", map[string]string{"X-Request-Class": "interactive", "X-Deadline-Ms": "9999999999"},
			gateway.DefaultMaxBudget - time.Second, gateway.DefaultMaxBudget},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := a.checkout(t, oneTea, tt.header)
			if r.code != http.StatusCreated {
				t.Fatalf("status = %d, want 201 (body %s)", r.code, r.body)
			}
			hops := serverTiming(t, r)
			if len(hops) == 0 || hops[0].Name != "orders" {
				t.Fatalf("first hop = %+v, want orders", hops)
			}
			if got := hops[0].Timeout; got < tt.min || got > tt.max {
				t.Errorf("orders call timeout = %v, want within [%v, %v]", got, tt.min, tt.max)
			}
		})
	}
}

func TestExport(t *testing.T) {
	a := startShop(t)
	r := a.get(t, "/api/catalog/export?page_size=100", map[string]string{"X-Request-Class": "batch"})
	if r.code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (body %s)", r.code, r.body)
	}
	e := decode[gateway.Export](t, r)
	if len(e.Products) != catalog.SeedSize || e.Pages != 6 || e.Class != "batch" || e.Refused != 0 {
		t.Errorf("export = %d products in %d pages, class %q, %d refused; want the %d seeded in 6 pages, batch, none refused",
			len(e.Products), e.Pages, e.Class, e.Refused, catalog.SeedSize)
	}
	for _, bad := range []struct{ query, detail string }{
		{"?page_size=0", "page_size must be"},
		{"?page_size=101", "page_size must be"},
		{"?page_size=ten", "page_size must be"},
		{"?page_size=1&page_size=2", "page_size is given 2 times"},
		{"?pagesize=10", `unknown query parameter "pagesize"`},
		{"?page_token=tea-001", `unknown query parameter "page_token" (this route takes page_size)`},
	} {
		t.Run(bad.query, func(t *testing.T) {
			checkProblem(t, a.get(t, "/api/catalog/export"+bad.query, map[string]string{"X-Request-Class": "batch"}),
				http.StatusBadRequest, bad.detail)
		})
	}
}

func TestClassBudgetFlagsValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*gateway.Config)
		want   string
	}{
		{"batch default above its max", func(c *gateway.Config) { c.Batch.Default = 2 * c.Batch.Max }, "batch-budget:"},
		{"zero background max", func(c *gateway.Config) { c.Background.Max = 0 }, "background-budget and background-max-budget"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := gateway.DefaultConfig()
			tt.change(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error with %q", err, tt.want)
			}
		})
	}
	if err := gateway.DefaultConfig().Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

// A batch export whose page finds catalog's workers all busy is refused
// there (batch first), and the export asks for the page again after a
// backoff: it completes once shoppers leave it room, counting the
// refusals.
func TestExportWaitsOutAFullCatalog(t *testing.T) {
	cfg := shop.EphemeralConfig()
	own := cfg.Shared
	own.Resilience.Workers = 2
	cfg.Catalog.Shared = own
	cfg.Catalog.Faults = faults.Set{sim.CatalogListProducts: {Latency: 500 * time.Millisecond}}
	a, s := startShopWith(t, cfg)

	// Two shoppers browsing hold both of catalog's workers for 500 ms.
	for range 2 {
		go a.get(t, "/api/products", nil)
	}
	deadline := time.Now().Add(5 * time.Second)
	for catalogInFlight(t, s.Catalog.AdminAddr) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the browses never held both catalog workers")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r := a.get(t, "/api/catalog/export", map[string]string{"X-Request-Class": "batch"})
	if r.code != http.StatusOK {
		t.Fatalf("export = %d %s, want 200", r.code, r.body)
	}
	if e := decode[gateway.Export](t, r); len(e.Products) != catalog.SeedSize || e.Refused < 1 {
		t.Errorf("export = %d products, %d refusals; want all, and at least one refusal while catalog was full", len(e.Products), e.Refused)
	}
}

// catalogInFlight reads catalog's worker pool's in-flight gauge.
func catalogInFlight(t *testing.T, adminAddr string) float64 {
	return sumMetric(t, adminAddr, func(line string) bool {
		return strings.HasPrefix(line, `mercado_pool_in_flight{pool="workers"`)
	})
}

// sumMetric adds up the samples of the metrics at adminAddr whose lines
// match.
func sumMetric(t *testing.T, adminAddr string, match func(line string) bool) float64 {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for line := range strings.SplitSeq(string(b), "\n") {
		if match(line) {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			sum += v
		}
	}
	return sum
}

// An export whose pages time out on the gateway's cap to catalog opens
// batch's breaker to catalog, not the one browsing passes: shoppers browse
// on while it is open, and the exports wait it out, asking for their
// pages again, and complete once catalog is quick again.
func TestExportTimeoutsOpenOnlyBatchsBreaker(t *testing.T) {
	const exports = 4
	cfg := shop.EphemeralConfig()
	own := cfg.Shared
	own.Resilience.BreakerMinCalls = exports
	own.Resilience.BreakerOpen = time.Second
	cfg.Gateway.Shared = own
	// A page takes longer than the gateway's 300 ms cap on a call to catalog.
	cfg.Catalog.Faults = faults.Set{sim.CatalogExportCatalog: {Latency: 500 * time.Millisecond}}
	a, s := startShopWith(t, cfg)
	a.c.Timeout = 20 * time.Second

	// The exports' first pages time out and fill batch's window.
	done := make(chan response, exports)
	for range exports {
		go func() { done <- a.get(t, "/api/catalog/export", map[string]string{"X-Request-Class": "batch"}) }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for gatewayBreakerOpens(t, s.Gateway.AdminAddr) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no breaker to catalog opened while %d exports' pages timed out", exports)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Browsing passes its own breaker, closed.
	for i := range 5 {
		if r := a.get(t, "/api/products", nil); r.code != http.StatusOK {
			t.Fatalf("browse %d while batch's breaker is open = %d %s, want 200", i+1, r.code, r.body)
		}
	}

	// Catalog is quick again: the exports get their pages once batch's
	// breaker lets one through.
	if _, err := (admin.Client{URL: "http://" + s.Catalog.AdminAddr + "/"}).ClearFaults(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	for range exports {
		r := <-done
		if r.code != http.StatusOK {
			t.Fatalf("export = %d %s, want 200", r.code, r.body)
		}
		if e := decode[gateway.Export](t, r); len(e.Products) != catalog.SeedSize || e.Refused < 1 {
			t.Errorf("export = %d products, %d pages asked for again; want all, and at least one", len(e.Products), e.Refused)
		}
	}
	if opens := gatewayBreakerOpens(t, s.Gateway.AdminAddr); opens != 1 {
		t.Errorf("breakers to catalog opened %v times, want once (batch's)", opens)
	}
}

// gatewayBreakerOpens reads how often the gateway's breakers to catalog
// opened.
func gatewayBreakerOpens(t *testing.T, adminAddr string) float64 {
	return sumMetric(t, adminAddr, func(line string) bool {
		return strings.HasPrefix(line, "mercado_breaker_transitions_total{") && strings.Contains(line, `dep="catalog"`) && strings.Contains(line, `to="open"`)
	})
}
