package shop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/shop"
)

// The shop's shared settings reach every service, from one place.
func TestResolvedGivesEveryServiceTheSharedSettings(t *testing.T) {
	cfg := shop.EphemeralConfig()
	off := false
	cfg.Shared.Mode, cfg.Shared.Margin, cfg.Shared.Floor = mode.Naive, 7*time.Millisecond, 30*time.Millisecond
	cfg.Shared.Overrides = mode.Overrides{Breakers: &off}
	cfg.Shared.Resilience.Workers, cfg.Shared.Resilience.Bulkhead = 7, 9
	cfg.Shared.AdminToken, cfg.Shared.DrainTimeout = "s3cret", 2*time.Second
	cfg.Shared.DatabaseURL, cfg.Shared.DBMaxConns = "postgres://mercado@127.0.0.1:5432/mercado", 4

	r := cfg.Resolved()
	for name, got := range map[string]serve.Shared{
		"gateway": r.Gateway.Shared, "orders": r.Orders.Shared, "catalog": r.Catalog.Shared,
		"payments": r.Payments.Shared, "shipping": r.Shipping.Shared,
	} {
		if got != cfg.Shared {
			t.Errorf("%s runs with %+v, want the shop's %+v", name, got, cfg.Shared)
		}
	}
}

// A lab may give one service settings of its own, on purpose; the others
// keep the shop's.
func TestResolvedKeepsAServicesOwnSettings(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Orders.Shared = cfg.Shared
	cfg.Orders.Margin = 80 * time.Millisecond

	r := cfg.Resolved()
	if r.Orders.Margin != 80*time.Millisecond {
		t.Errorf("orders' margin = %v, want its own 80ms", r.Orders.Margin)
	}
	if r.Gateway.Margin != serve.DefaultMargin || r.Catalog.Margin != serve.DefaultMargin {
		t.Errorf("gateway's margin %v, catalog's %v; want the shop's %v", r.Gateway.Margin, r.Catalog.Margin, serve.DefaultMargin)
	}
}

// A bad shared setting is reported once, not once per service; a bad
// setting of one service names the service.
func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*shop.Config)
		want   string // the whole error; empty means valid
		// prefix: the error only starts with want (it goes on).
		prefix bool
	}{
		{"defaults", func(*shop.Config) {}, "", false},
		{"a bad shared floor", func(c *shop.Config) { c.Shared.Floor = 2 * time.Minute }, "floor: 2m0s is outside 0 to 1m", false},
		{"zero workers", func(c *shop.Config) { c.Shared.Resilience.Workers = 0 }, "workers: 0 is outside 1 to 100000", false},
		{"a floor above the gateway's budget", func(c *shop.Config) { c.Shared.Floor = 2 * time.Second },
			"gateway: floor: 2s is not below budget 1.2s: every request without X-Deadline-Ms would be turned away", false},
		{"a margin that leaves no time", func(c *shop.Config) { c.Shared.Margin = 1190 * time.Millisecond },
			"gateway: margin: 1.19s plus floor 20ms is not below budget 1.2s: no request without X-Deadline-Ms would get a call made", false},
		{"a bad cap of orders", func(c *shop.Config) { c.Orders.PaymentsCap = 0 }, "orders: payments-cap: 0s is outside (0, 1h]", false},
		// Settings of its own must be whole: a copy of the shared ones,
		// then changed (as the waterfall lab does).
		{"a service's own settings, left half set", func(c *shop.Config) { c.Orders.Margin = time.Millisecond }, "orders: mode:", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := shop.EphemeralConfig()
			tt.change(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want == "":
			case err == nil:
				t.Fatalf("Validate() = nil, want %q", tt.want)
			case tt.prefix && !strings.HasPrefix(err.Error(), tt.want):
				t.Errorf("Validate() = %q, want it to start with %q", err, tt.want)
			case !tt.prefix && err.Error() != tt.want:
				t.Errorf("Validate() = %q, want %q", err, tt.want)
			}
		})
	}
}
