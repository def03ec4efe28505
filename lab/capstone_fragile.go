package lab

import (
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/lab/shop"
)

// fragile is stage 0's mode: naive with no read caps.
const fragile = mode.Naive

// capsOn switches the read caps on in a stage's overrides.
const capsOn = ""

// capped reports a stage whose calls are bounded by read caps.
func capped(st capstoneStage, _ mode.Mechanisms) bool { return st.suggested }

// withoutCaps stands for the caps switched off: every call waits an hour.
func withoutCaps(cfg *shop.Config, st capstoneStage) {
	if st.suggested {
		return
	}
	cfg.Orders.CatalogCap, cfg.Orders.FraudCap, cfg.Orders.PaymentsCap, cfg.Orders.ShippingCap, cfg.Orders.EstimateCap =
		time.Hour, time.Hour, time.Hour, time.Hour, time.Hour
	cfg.Gateway.OrdersCap, cfg.Gateway.CatalogCap = 0, 0
}
