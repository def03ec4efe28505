// Package shop runs all five of Mercado's services in one process on
// loopback: the embedded default behind `mercado serve all`, the labs and
// the end-to-end tests. Each service keeps its own listeners and talks to
// the others over real gRPC, exactly as when they run apart.
package shop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/services/catalog"
	"github.com/mercado-lab/mercado/services/gateway"
	"github.com/mercado-lab/mercado/services/orders"
	"github.com/mercado-lab/mercado/services/payments"
	"github.com/mercado-lab/mercado/services/shipping"
)

// Config is every service's configuration. The dependency addresses of
// gateway and orders are filled in by Start from where the others bound.
type Config struct {
	Gateway  gateway.Config
	Orders   orders.Config
	Catalog  catalog.Config
	Payments payments.Config
	Shipping shipping.Config
}

// DefaultConfig puts every service on host at its port from the table in
// docs/deploy.md ("127.0.0.1" for the embedded default).
func DefaultConfig(host string) Config {
	c := Config{
		Gateway: gateway.DefaultConfig(), Orders: orders.DefaultConfig(),
		Catalog: catalog.DefaultConfig(), Payments: payments.DefaultConfig(), Shipping: shipping.DefaultConfig(),
	}
	for _, com := range c.commons() {
		com.Addr, com.AdminAddr = host+com.Addr, host+com.AdminAddr
	}
	return c
}

// EphemeralConfig puts every service on a free loopback port, for tests
// and labs that must not collide with anything already running.
func EphemeralConfig() Config {
	c := DefaultConfig("127.0.0.1")
	for _, com := range c.commons() {
		com.Addr, com.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	}
	return c
}

// Defaults are each service's configuration, by name, as its code
// defaults it: what the deployment files must agree with.
func Defaults() map[string]serve.Common {
	c := DefaultConfig("")
	return map[string]serve.Common{
		faults.ServiceGateway: c.Gateway.Common, faults.ServiceOrders: c.Orders.Common,
		faults.ServiceCatalog: c.Catalog, faults.ServicePayments: c.Payments, faults.ServiceShipping: c.Shipping,
	}
}

func (c *Config) commons() []*serve.Common {
	return []*serve.Common{&c.Gateway.Common, &c.Orders.Common, &c.Catalog, &c.Payments, &c.Shipping}
}

// SetMode puts every service in mode m with the given margin and floor.
func (c *Config) SetMode(m mode.Mode, margin, floor time.Duration) {
	for _, com := range c.commons() {
		com.Mode, com.Margin, com.Floor = m, margin, floor
	}
}

// SetOverrides switches single mechanisms in every service.
func (c *Config) SetOverrides(o mode.Overrides) {
	for _, com := range c.commons() {
		com.Overrides = o
	}
}

// SetResilience sizes every service's pools and breakers.
func (c *Config) SetResilience(r serve.Resilience) {
	for _, com := range c.commons() {
		com.Resilience = r
	}
}

// SetDrainTimeout sets every service's drain timeout.
func (c *Config) SetDrainTimeout(d time.Duration) {
	for _, com := range c.commons() {
		com.DrainTimeout = d
	}
}

// SetDatabase keeps every service's state in the PostgreSQL database at
// url (one schema per service), each service with a pool of at most
// maxConns connections; an empty url keeps it in memory. The gateway keeps
// no state and opens no pool.
func (c *Config) SetDatabase(url string, maxConns int) {
	for _, com := range c.commons() {
		com.DatabaseURL, com.DBMaxConns = url, maxConns
	}
}

// Faults returns each service's fault set by name, for flags to fill.
func (c *Config) Faults() map[string]*faults.Set {
	return map[string]*faults.Set{
		faults.ServiceGateway: &c.Gateway.Faults, faults.ServiceOrders: &c.Orders.Faults, faults.ServiceCatalog: &c.Catalog.Faults,
		faults.ServicePayments: &c.Payments.Faults, faults.ServiceShipping: &c.Shipping.Faults,
	}
}

// Shop is the five running services.
type Shop struct {
	Gateway, Orders, Catalog, Payments, Shipping *serve.Process

	ctx     context.Context // ends when the shop is told to stop
	cancel  context.CancelFunc
	stopped chan struct{} // closed once the staged stop has run
}

// Stop shuts every service down gracefully, edge first, and waits for
// them.
func (s *Shop) Stop() error {
	s.cancel()
	return s.Wait()
}

// GatewayURL is the base URL of the public API.
func (s *Shop) GatewayURL() string { return "http://" + s.Gateway.Addr }

// Processes lists the services, edge first.
func (s *Shop) Processes() []*serve.Process {
	return []*serve.Process{s.Gateway, s.Orders, s.Catalog, s.Payments, s.Shipping}
}

// Wait blocks until every service has stopped.
func (s *Shop) Wait() error {
	var errs []error
	for _, p := range s.Processes() {
		if err := p.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		}
	}
	if s.ctx.Err() != nil {
		<-s.stopped
	}
	return errors.Join(errs...)
}

// stopInStages stops the services once ctx ends, one tier at a time from
// the edge in: the gateway drains while orders still serves it, orders
// while the leaves still serve it. Stopped all at once, a checkout the
// gateway accepted before the stop would fail at a leaf already gone; in
// a deployment the services stop apart, so work drains the same way.
func (s *Shop) stopInStages(tiers [][]stage) {
	defer close(s.stopped)
	<-s.ctx.Done()
	for _, tier := range tiers {
		for _, st := range tier {
			st.cancel()
		}
		for _, st := range tier {
			<-st.p.Done()
		}
	}
}

// stage is one service and what stops it.
type stage struct {
	p      *serve.Process
	cancel context.CancelFunc
}

// Start starts the leaves first (catalog, payments, shipping), then orders
// pointed at them, then the gateway, and serves until ctx ends; then it
// stops them in the reverse order (see stopInStages). If a service fails
// to start, those already started are stopped.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Shop, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := Shop{ctx: ctx, cancel: cancel, stopped: make(chan struct{})}
	var started []stage
	// run starts one service under a context of its own, which keeps
	// ctx's values but is ended by the staged stop rather than by ctx.
	run := func(name string, start func(context.Context) (*serve.Process, error)) (*serve.Process, error) {
		svcCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
		p, err := start(svcCtx)
		if err != nil {
			stop()
			cancel()
			for _, st := range started {
				st.cancel()
				_ = st.p.Wait()
			}
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		started = append(started, stage{p: p, cancel: stop})
		return p, nil
	}
	var err error
	if s.Catalog, err = run("catalog", func(c context.Context) (*serve.Process, error) { return catalog.Start(c, cfg.Catalog, log) }); err != nil {
		return nil, err
	}
	if s.Payments, err = run("payments", func(c context.Context) (*serve.Process, error) { return payments.Start(c, cfg.Payments, log) }); err != nil {
		return nil, err
	}
	if s.Shipping, err = run("shipping", func(c context.Context) (*serve.Process, error) { return shipping.Start(c, cfg.Shipping, log) }); err != nil {
		return nil, err
	}

	cfg.Orders.CatalogAddr, cfg.Orders.PaymentsAddr, cfg.Orders.ShippingAddr = s.Catalog.Addr, s.Payments.Addr, s.Shipping.Addr
	if s.Orders, err = run("orders", func(c context.Context) (*serve.Process, error) { return orders.Start(c, cfg.Orders, log) }); err != nil {
		return nil, err
	}

	cfg.Gateway.OrdersAddr, cfg.Gateway.CatalogAddr = s.Orders.Addr, s.Catalog.Addr
	cfg.Gateway.AdminPeers = nil
	for _, p := range []*serve.Process{s.Orders, s.Catalog, s.Payments, s.Shipping} {
		cfg.Gateway.AdminPeers = append(cfg.Gateway.AdminPeers, admin.Peer{Name: p.Name, URL: "http://" + p.AdminAddr})
	}
	if s.Gateway, err = run("gateway", func(c context.Context) (*serve.Process, error) { return gateway.Start(c, cfg.Gateway, log) }); err != nil {
		return nil, err
	}
	// started is leaves, orders, gateway: stopped the other way round.
	go s.stopInStages([][]stage{started[4:], started[3:4], started[:3]})
	return &s, nil
}
