package orders

import (
	"errors"
	"flag"
	"time"

	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/setting"
)

// Defaults: listen addresses from the port table in docs/deploy.md (the
// admin API on loopback, out of other machines' reach unless told
// otherwise), and each dependency's own cap (what lesson 7 calls a local
// timeout: each one a dependency's p99 with room to spare).
const (
	DefaultAddr      = ":8081"
	DefaultAdminAddr = "127.0.0.1:9081"

	DefaultCatalogCap  = 300 * time.Millisecond
	DefaultPaymentsCap = 800 * time.Millisecond
	// DefaultFraudCap is the fraud screen's: lesson 7's exercise 2 gives
	// it 300 ms.
	DefaultFraudCap    = 300 * time.Millisecond
	DefaultShippingCap = 300 * time.Millisecond
	// DefaultEstimateCap is the delivery estimate's short cap: an
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
	// EstimateCap is the cap of the optional delivery estimate.
	EstimateCap time.Duration
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config {
	c := Config{Common: serve.Defaults(DefaultAddr, DefaultAdminAddr)}
	setting.Default(append(c.addrSettings(), c.capSettings()...)...)
	return c
}

// addrSettings declares the addresses of the services orders calls.
func (c *Config) addrSettings() []setting.Setting {
	return []setting.Setting{
		setting.String(&c.CatalogAddr, "catalog-addr", "localhost:8082", "catalog's gRPC address", setting.NotEmpty),
		setting.String(&c.PaymentsAddr, "payments-addr", "localhost:8083", "payments' gRPC address", setting.NotEmpty),
		setting.String(&c.ShippingAddr, "shipping-addr", "localhost:8084", "shipping's gRPC address", setting.NotEmpty),
	}
}

// capSettings declares a cap for each dependency whose cap is a setting
// (graph).
func (c *Config) capSettings() []setting.Setting {
	var ss []setting.Setting
	for _, d := range graph(c) {
		if d.Flag != "" {
			ss = append(ss, setting.Duration(d.capVar, d.Flag, d.def, setting.Above(0, time.Hour), d.usage))
		}
	}
	return ss
}

// RegisterFlags binds c to flags on fs, keeping c's values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Common.RegisterFlags(fs)
	c.RegisterDependencyFlags(fs)
}

// RegisterDependencyFlags binds the dependencies' addresses and caps.
func (c *Config) RegisterDependencyFlags(fs *flag.FlagSet) {
	setting.Register(fs, c.addrSettings()...)
	c.RegisterCapFlags(fs)
}

// RegisterCapFlags binds the dependencies' caps only.
func (c *Config) RegisterCapFlags(fs *flag.FlagSet) { setting.Register(fs, c.capSettings()...) }

// Validate reports every problem with c.
func (c Config) Validate() error {
	return errors.Join(c.Common.Validate(), setting.Check(append(c.addrSettings(), c.capSettings()...)...))
}
