package lab

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// TestShopSpecSizesTheShop: what a scenario's shop section sets reaches
// the in-process shop's configuration, what it leaves zero keeps the
// default, and every cap a scenario may name is one the shop has.
func TestShopSpecSizesTheShop(t *testing.T) {
	for _, name := range loadtest.CapNames() {
		if !slices.ContainsFunc(capList, func(c capSetting) bool { return c.flag == "--"+name }) {
			t.Errorf("scenarios may set %s, which the in-process shop has not", name)
		}
	}
	if len(capList) != len(loadtest.CapNames()) {
		t.Errorf("the shop has %d caps, scenarios may set %d", len(capList), len(loadtest.CapNames()))
	}
	cfg := shop.EphemeralConfig()
	def := cfg
	sp := loadtest.ShopSpec{Workers: 200, Bulkhead: 25, BreakerMinCalls: 20, BreakerRatio: 0.5, BreakerWindow: loadtest.Duration(12 * time.Second), BreakerOpen: loadtest.Duration(30 * time.Second),
		Margin: loadtest.Duration(100 * time.Millisecond), Floor: loadtest.Duration(100 * time.Millisecond),
		Caps: map[string]loadtest.Duration{"shipping-cap": loadtest.Duration(5 * time.Second), "orders-cap": loadtest.Duration(9 * time.Second)}}
	if err := applyShopSpec(sp, &cfg); err != nil {
		t.Fatal(err)
	}
	r := cfg.Shared.Resilience
	if r.Workers != 200 || r.Bulkhead != 25 || r.BreakerMinCalls != 20 || r.BreakerWindow != 12*time.Second || r.BreakerRatio != 0.5 || r.BreakerOpen != 30*time.Second {
		t.Errorf("resilience %+v", r)
	}
	if cfg.Shared.Margin != 100*time.Millisecond || cfg.Shared.Floor != 100*time.Millisecond {
		t.Errorf("margin %v, floor %v; want 100ms each", cfg.Shared.Margin, cfg.Shared.Floor)
	}
	if cfg.Shared.ConnectTimeout != def.Shared.ConnectTimeout {
		t.Errorf("connect timeout %v, want the default %v (the scenario left it zero)", cfg.Shared.ConnectTimeout, def.Shared.ConnectTimeout)
	}
	if cfg.Orders.ShippingCap != 5*time.Second || cfg.Gateway.OrdersCap != 9*time.Second || cfg.Orders.PaymentsCap != def.Orders.PaymentsCap {
		t.Errorf("caps: shipping %v, gateway → orders %v, payments %v", cfg.Orders.ShippingCap, cfg.Gateway.OrdersCap, cfg.Orders.PaymentsCap)
	}

	bad := loadtest.Scenario{Name: "x", Deadline: loadtest.Duration(time.Second), Classes: map[string]loadtest.ClassSpec{"browse": {Rate: 1}},
		Phases: []loadtest.Phase{{Name: "p", Duration: loadtest.Duration(time.Second)}},
		Shop:   loadtest.ShopSpec{BreakerRatio: 2, Caps: map[string]loadtest.Duration{"carrier-cap": loadtest.Duration(time.Second)}}}
	err := bad.Validate()
	for _, want := range []string{"breaker_ratio", `unknown cap "carrier-cap"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
}
