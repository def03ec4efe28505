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
	"net"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/services/catalog"
	"github.com/mercado-lab/mercado/services/gateway"
	"github.com/mercado-lab/mercado/services/orders"
	"github.com/mercado-lab/mercado/services/payments"
	"github.com/mercado-lab/mercado/services/shipping"
)

// Config is the shop's configuration: the settings every service shares,
// once, and each service's own (its listeners, faults and caps).
type Config struct {
	// Shared is given to every service whose own Shared is left zero, as
	// DefaultConfig leaves it (see Start). A lab that wants one service
	// to differ gives that service a copy of its own on purpose.
	Shared serve.Shared

	// The dependency addresses of gateway and orders are filled in by
	// Start from where the others bound.
	Gateway  gateway.Config
	Orders   orders.Config
	Catalog  catalog.Config
	Payments payments.Config
	Shipping shipping.Config

	// Network, when on, puts a fault proxy on every link between two
	// services (internal/netfault): Start points each caller at its
	// proxy, on a free loopback port, and Shop.Network sets the links'
	// faults. Off (the default) there is no proxy and no cost.
	Network bool
	// NetworkAdminAddr is the wire's admin listener (GET /admin/network
	// and the rest), when Network is on: 127.0.0.1:9085 by default.
	NetworkAdminAddr string
}

// DefaultNetworkAdminPort is the wire's admin port (docs/deploy.md).
const DefaultNetworkAdminPort = "9085"

// DefaultConfig puts every service on host at its port from the table in
// docs/deploy.md ("127.0.0.1" for the embedded default), with the default
// shared settings.
func DefaultConfig(host string) Config {
	c := Config{
		Shared:  serve.DefaultShared(),
		Gateway: gateway.DefaultConfig(), Orders: orders.DefaultConfig(),
		Catalog: catalog.DefaultConfig(), Payments: payments.DefaultConfig(), Shipping: shipping.DefaultConfig(),
		NetworkAdminAddr: net.JoinHostPort(host, DefaultNetworkAdminPort),
	}
	for _, com := range c.commons() {
		com.Shared = serve.Shared{} // Start gives them c.Shared
		com.Addr, com.AdminAddr = onHost(host, com.Addr), onHost(host, com.AdminAddr)
	}
	return c
}

// onHost is the listen address addr with its host replaced by host.
func onHost(host, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // Validate reports it
	}
	return net.JoinHostPort(host, port)
}

// EphemeralConfig puts every service on a free loopback port, for tests
// and labs that must not collide with anything already running.
func EphemeralConfig() Config {
	c := DefaultConfig("127.0.0.1")
	c.UseEphemeralPorts()
	return c
}

// UseEphemeralPorts moves every service to a free loopback port, chosen
// by the kernel when it starts.
func (c *Config) UseEphemeralPorts() {
	for _, com := range c.commons() {
		com.Addr, com.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	}
	c.NetworkAdminAddr = "127.0.0.1:0"
}

// Defaults are each service's configuration, by name, as its code
// defaults it when served alone: what the deployment files must agree
// with.
func Defaults() map[string]serve.Common {
	return map[string]serve.Common{
		sim.ServiceGateway: gateway.DefaultConfig().Common, sim.ServiceOrders: orders.DefaultConfig().Common,
		sim.ServiceCatalog: catalog.DefaultConfig(), sim.ServicePayments: payments.DefaultConfig(),
		sim.ServiceShipping: shipping.DefaultConfig(),
	}
}

func (c *Config) commons() []*serve.Common {
	return []*serve.Common{&c.Gateway.Common, &c.Orders.Common, &c.Catalog, &c.Payments, &c.Shipping}
}

// Resolved is c as Start runs it: the one place where the shared
// settings reach the services. A service whose Shared is zero gets
// c.Shared; one given settings of its own keeps them.
func (c Config) Resolved() Config {
	for _, com := range c.commons() {
		if com.Shared == (serve.Shared{}) {
			com.Shared = c.Shared
		}
	}
	return c
}

// Validate reports every problem with c: the shared settings once, then
// each service's own, named by service.
func (c Config) Validate() error {
	if err := c.Shared.Validate(); err != nil {
		return err
	}
	c = c.Resolved()
	var errs []error
	for _, v := range []struct {
		name string
		err  error
	}{
		{sim.ServiceGateway, c.Gateway.Validate()}, {sim.ServiceOrders, c.Orders.Validate()},
		{sim.ServiceCatalog, c.Catalog.Validate()}, {sim.ServicePayments, c.Payments.Validate()}, {sim.ServiceShipping, c.Shipping.Validate()},
	} {
		if v.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.name, v.err))
		}
	}
	if c.Network && c.NetworkAdminAddr == "" {
		errs = append(errs, errors.New("netproxy: admin-addr: must not be empty"))
	}
	return errors.Join(errs...)
}

// Faults returns each service's fault set by name, for flags to fill.
func (c *Config) Faults() map[string]*faults.Set {
	return map[string]*faults.Set{
		sim.ServiceGateway: &c.Gateway.Faults, sim.ServiceOrders: &c.Orders.Faults, sim.ServiceCatalog: &c.Catalog.Faults,
		sim.ServicePayments: &c.Payments.Faults, sim.ServiceShipping: &c.Shipping.Faults,
	}
}

// Shop is the five running services.
type Shop struct {
	Gateway, Orders, Catalog, Payments, Shipping *serve.Process

	// Network sets, clears and lists the faults of the links between the
	// services, and Netproxy is its admin listener; both nil unless
	// Config.Network is on.
	Network  *netfault.Network
	Netproxy *serve.Process

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
	ps := s.Processes()
	if s.Netproxy != nil {
		ps = append(ps, s.Netproxy)
	}
	for _, p := range ps {
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

// Start checks cfg (Validate) and gives every service the shared
// settings (Resolved); then it starts the leaves first (catalog,
// payments, shipping), then orders pointed at them, then the gateway, and
// serves until ctx ends; then it stops them in the reverse order (see
// stopInStages). With cfg.Network on, each caller is pointed at a fault
// proxy in front of its callee instead (Shop.Network), and the proxies
// stop with the leaves, once no caller is left. If a service fails to
// start, those already started are stopped.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Shop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.Resolved()
	ctx, cancel := context.WithCancel(ctx)
	s := Shop{ctx: ctx, cancel: cancel, stopped: make(chan struct{})}
	var started []stage
	// fail stops what has started.
	fail := func(err error) error {
		cancel()
		for _, st := range started {
			st.cancel()
			_ = st.p.Wait()
		}
		return err
	}
	// run starts one service under a context of its own, which keeps
	// ctx's values but is ended by the staged stop rather than by ctx.
	run := func(name string, start func(context.Context) (*serve.Process, error)) (*serve.Process, error) {
		svcCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
		p, err := start(svcCtx)
		if err != nil {
			stop()
			return nil, fail(fmt.Errorf("starting %s: %w", name, err))
		}
		started = append(started, stage{p: p, cancel: stop})
		return p, nil
	}
	// via is the address a caller dials to reach upstream over link: the
	// link's proxy, with the network on; upstream itself, without.
	via := func(link, upstream string) (string, error) {
		if s.Network == nil {
			return upstream, nil
		}
		addr, err := s.Network.Add(link, "127.0.0.1:0", upstream)
		if err != nil {
			return "", fail(fmt.Errorf("starting netproxy: %w", err))
		}
		log.Info("network link", "service", "netproxy", "link", link, "listen", addr, "upstream", upstream)
		return addr, nil
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

	if cfg.Network {
		n := netfault.New()
		s.Network = n
		h := admin.NetworkHandler(admin.NetworkOptions{Network: n, Token: cfg.Shared.AdminToken, Log: log.With("service", "netproxy")})
		if s.Netproxy, err = run("netproxy", func(c context.Context) (*serve.Process, error) {
			return serve.StartAdminOnly(c, "netproxy", cfg.NetworkAdminAddr, h, n.Close, log)
		}); err != nil {
			n.Close()
			return nil, err
		}
		cfg.Gateway.NetworkAdmin = "http://" + s.Netproxy.AdminAddr
	}

	if cfg.Orders.CatalogAddr, err = via(netfault.OrdersCatalog, s.Catalog.Addr); err != nil {
		return nil, err
	}
	if cfg.Orders.PaymentsAddr, err = via(netfault.OrdersPayments, s.Payments.Addr); err != nil {
		return nil, err
	}
	if cfg.Orders.ShippingAddr, err = via(netfault.OrdersShipping, s.Shipping.Addr); err != nil {
		return nil, err
	}
	if s.Orders, err = run("orders", func(c context.Context) (*serve.Process, error) { return orders.Start(c, cfg.Orders, log) }); err != nil {
		return nil, err
	}

	if cfg.Gateway.OrdersAddr, err = via(netfault.GatewayOrders, s.Orders.Addr); err != nil {
		return nil, err
	}
	if cfg.Gateway.CatalogAddr, err = via(netfault.GatewayCatalog, s.Catalog.Addr); err != nil {
		return nil, err
	}
	cfg.Gateway.AdminPeers = nil
	for _, p := range []*serve.Process{s.Orders, s.Catalog, s.Payments, s.Shipping} {
		cfg.Gateway.AdminPeers = append(cfg.Gateway.AdminPeers, admin.Peer{Name: p.Name, URL: "http://" + p.AdminAddr})
	}
	if s.Gateway, err = run("gateway", func(c context.Context) (*serve.Process, error) { return gateway.Start(c, cfg.Gateway, log) }); err != nil {
		return nil, err
	}
	// started is the leaves (and the netproxy), orders, gateway: stopped
	// the other way round.
	n := len(started)
	go s.stopInStages([][]stage{started[n-1:], started[n-2 : n-1], started[:n-2]})
	return &s, nil
}
