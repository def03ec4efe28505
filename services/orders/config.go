package orders

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/mercado-lab/mercado/internal/serve"
)

// Defaults: listen addresses from the port table in docs/deploy.md (the
// admin API on loopback, out of other machines' reach unless told
// otherwise), and each dependency's own cap, lesson 7's local timeouts
// (each one a dependency's p99 with room to spare).
const (
	DefaultAddr      = ":8081"
	DefaultAdminAddr = "127.0.0.1:9081"

	DefaultCatalogCap  = 300 * time.Millisecond
	DefaultPaymentsCap = 800 * time.Millisecond
	// DefaultFraudCap is the fraud screen's: lesson 7's exercise 2 gives
	// it 300 ms.
	DefaultFraudCap    = 300 * time.Millisecond
	DefaultShippingCap = 300 * time.Millisecond
	// DefaultEstimateCap is the delivery estimate's short slice: an
	// optional call gets little, so that it never holds the answer (the
	// carrier quotes in a few milliseconds when well).
	DefaultEstimateCap = 150 * time.Millisecond
)

// Config is the orders service's configuration.
type Config struct {
	serve.Common
	// Addresses of the three services orders calls.
	CatalogAddr, PaymentsAddr, ShippingAddr string
	// Each dependency's own timeout cap. The fraud screen is payments'
	// (at PaymentsAddr) but a dependency of its own, with its own cap.
	CatalogCap, FraudCap, PaymentsCap, ShippingCap time.Duration
	// EstimateCap is the slice of the optional delivery estimate.
	EstimateCap time.Duration
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config {
	return Config{
		Common:      serve.Defaults(DefaultAddr, DefaultAdminAddr),
		CatalogAddr: "localhost:8082", PaymentsAddr: "localhost:8083", ShippingAddr: "localhost:8084",
		CatalogCap: DefaultCatalogCap, FraudCap: DefaultFraudCap, PaymentsCap: DefaultPaymentsCap, ShippingCap: DefaultShippingCap,
		EstimateCap: DefaultEstimateCap,
	}
}

// RegisterFlags binds c to flags on fs, keeping c's values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Common.RegisterFlags(fs)
	c.RegisterDependencyFlags(fs)
}

// RegisterDependencyFlags binds the dependencies' addresses and caps.
func (c *Config) RegisterDependencyFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.CatalogAddr, "catalog-addr", c.CatalogAddr, "catalog's gRPC address")
	fs.StringVar(&c.PaymentsAddr, "payments-addr", c.PaymentsAddr, "payments' gRPC address")
	fs.StringVar(&c.ShippingAddr, "shipping-addr", c.ShippingAddr, "shipping's gRPC address")
	c.RegisterCapFlags(fs)
}

// RegisterCapFlags binds the dependencies' caps only: one flag for each
// dependency whose cap is a setting (graph).
func (c *Config) RegisterCapFlags(fs *flag.FlagSet) {
	for _, d := range graph(c) {
		if d.Flag != "" {
			fs.DurationVar(d.slice, d.Flag, *d.slice, d.usage)
		}
	}
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	errs := []error{c.Common.Validate()}
	for _, a := range []struct {
		name, v string
	}{{"catalog-addr", c.CatalogAddr}, {"payments-addr", c.PaymentsAddr}, {"shipping-addr", c.ShippingAddr}} {
		if a.v == "" {
			errs = append(errs, fmt.Errorf("%s: must not be empty", a.name))
		}
	}
	for _, d := range graph(&c) {
		if d.Flag != "" && (d.Slice <= 0 || d.Slice > time.Hour) {
			errs = append(errs, fmt.Errorf("%s: %v is outside (0, 1h]", d.Flag, d.Slice))
		}
	}
	return errors.Join(errs...)
}
