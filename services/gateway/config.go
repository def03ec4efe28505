package gateway

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Defaults: listen addresses from the port table in docs/deploy.md (the
// public API on every interface, the admin API on loopback, out of other
// machines' reach unless told otherwise); the edge budget (lesson 7's
// 1200 ms mobile deadline) and the most a client may ask for (Drill 76's
// edge budget of 8 s fits under it); no cap of its own on the call to
// orders, as in lesson 7, and a browse cap on catalog.
const (
	DefaultAddr      = ":8080"
	DefaultAdminAddr = "127.0.0.1:9080"

	DefaultBudget     = deadline.DefaultBudget
	DefaultMaxBudget  = deadline.DefaultMaxBudget
	DefaultCatalogCap = 300 * time.Millisecond
	DefaultMaxBody    = 64 << 10
)

// Config is the gateway's configuration.
type Config struct {
	serve.Common
	// Addresses of orders and catalog.
	OrdersAddr, CatalogAddr string
	// Budget is the edge budget of a request without X-Deadline-Ms.
	Budget time.Duration
	// MaxBudget caps what a client may ask for. Budget and MaxBudget are
	// the interactive class's budget.
	MaxBudget time.Duration
	// Background and Batch are the budgets of requests sent with
	// X-Request-Class: background or batch.
	Background, Batch deadline.ClassBudget
	// OrdersCap and CatalogCap are the gateway's own timeouts for its
	// calls; zero means none.
	OrdersCap, CatalogCap time.Duration
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// AdminPeers are the other services' admin APIs, which a mode switch
	// at the gateway fans out to.
	AdminPeers Peers
	// NetworkAdmin is the wire's admin URL (the fault proxies between the
	// services, mercado serve netproxy), for the console; empty when the
	// shop has none.
	NetworkAdmin string
	// Console, when set, is served under /console/ on the admin listener
	// (see console.go). Not a flag: whoever starts the gateway gives it.
	Console ConsoleFunc
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config {
	c := Config{Common: serve.Defaults(DefaultAddr, DefaultAdminAddr)}
	setting.Default(append(c.peerSettings(), c.edgeSettings()...)...)
	return c
}

// peerSettings declares where the gateway finds the other services.
func (c *Config) peerSettings() []setting.Setting {
	return []setting.Setting{
		setting.String(&c.OrdersAddr, "orders-addr", "localhost:8081", "orders' gRPC address", setting.NotEmpty),
		setting.String(&c.CatalogAddr, "catalog-addr", "localhost:8082", "catalog's gRPC address", setting.NotEmpty),
		setting.Var(&c.AdminPeers, "admin-peers",
			"orders=http://localhost:9081,catalog=http://localhost:9082,payments=http://localhost:9083,shipping=http://localhost:9084",
			"admin URLs a mode switch fans out to, as name=url,...", c.checkPeers),
		setting.String(&c.NetworkAdmin, "network-admin", "",
			"the wire's admin URL (mercado serve netproxy), for the console's network faults; empty: none", checkNetworkAdmin),
	}
}

// edgeSettings declares what the gateway alone decides at the edge: the
// budgets, its own caps and the largest body. The budgets are checked
// against each other (Validate).
func (c *Config) edgeSettings() []setting.Setting {
	defaults := deadline.DefaultBudgets()
	return []setting.Setting{
		setting.Duration(&c.Budget, "budget", DefaultBudget, setting.Any[time.Duration](), "edge budget of a request without "+deadline.HeaderDeadline),
		setting.Duration(&c.MaxBudget, "max-budget", DefaultMaxBudget, setting.Any[time.Duration](), "most a client may ask for with "+deadline.HeaderDeadline),
		setting.Duration(&c.Background.Default, "background-budget", defaults.Background.Default, setting.Any[time.Duration](),
			"edge budget of a background request ("+deadline.HeaderClass+": background) without "+deadline.HeaderDeadline),
		setting.Duration(&c.Background.Max, "background-max-budget", defaults.Background.Max, setting.Any[time.Duration](),
			"most a background request may ask for"),
		setting.Duration(&c.Batch.Default, "batch-budget", defaults.Batch.Default, setting.Any[time.Duration](),
			"edge budget of a batch request ("+deadline.HeaderClass+": batch) without "+deadline.HeaderDeadline),
		setting.Duration(&c.Batch.Max, "batch-max-budget", defaults.Batch.Max, setting.Any[time.Duration](), "most a batch request may ask for"),
		setting.Duration(&c.OrdersCap, "orders-cap", 0, setting.Within(0, time.Hour), "own timeout of each call to orders (0: none)"),
		setting.Duration(&c.CatalogCap, "browse-cap", DefaultCatalogCap, setting.Within(0, time.Hour), "own timeout of each browse call to catalog (0: none)"),
		setting.Int64(&c.MaxBodyBytes, "max-body-bytes", DefaultMaxBody, setting.Within[int64](1<<10, 10<<20), "largest request body accepted"),
	}
}

// RegisterFlags binds c to flags on fs, keeping c's values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Common.RegisterFlags(fs)
	setting.Register(fs, c.peerSettings()...)
	c.RegisterEdgeFlags(fs)
}

// RegisterEdgeFlags binds what the gateway alone decides at the edge.
// (`serve all` registers these, and not the addresses, which it sets
// itself.)
func (c *Config) RegisterEdgeFlags(fs *flag.FlagSet) { setting.Register(fs, c.edgeSettings()...) }

// Validate reports every problem with c.
func (c Config) Validate() error {
	errs := []error{c.Common.Validate(), setting.Check(append(c.peerSettings(), c.edgeSettings()...)...)}
	if c.Budget <= 0 || c.MaxBudget <= 0 {
		errs = append(errs, errors.New("budget and max-budget: must be positive"))
	} else if c.Budget > c.MaxBudget {
		errs = append(errs, fmt.Errorf("budget: %v is above max-budget %v", c.Budget, c.MaxBudget))
	}
	// A request arriving with less than the floor is turned away, and a
	// call is made only if the budget less the margin is at least the
	// floor: past these, budgeted mode would fail every request sent
	// without X-Deadline-Ms.
	if c.Budget > 0 && c.Floor >= c.Budget {
		errs = append(errs, fmt.Errorf("floor: %v is not below budget %v: every request without %s would be turned away",
			c.Floor, c.Budget, deadline.HeaderDeadline))
	} else if c.Budget > 0 && c.Margin+c.Floor >= c.Budget {
		errs = append(errs, fmt.Errorf("margin: %v plus floor %v is not below budget %v: no request without %s would get a call made",
			c.Margin, c.Floor, c.Budget, deadline.HeaderDeadline))
	}
	errs = append(errs, c.checkClasses()...)
	return errors.Join(errs...)
}

// checkPeers reports a peer whose URL is not an http(s) one.
func (c *Config) checkPeers() error {
	var errs []error
	for _, p := range c.AdminPeers {
		if !isHTTPURL(p.URL) {
			errs = append(errs, fmt.Errorf("%s=%q is not an http(s) URL", p.Name, p.URL))
		}
	}
	return errors.Join(errs...)
}

func checkNetworkAdmin(v string) error {
	if v != "" && !isHTTPURL(v) {
		return fmt.Errorf("%q is not an http(s) URL", v)
	}
	return nil
}

func isHTTPURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Budgets are the traffic classes' budgets at the edge.
func (c Config) Budgets() deadline.Budgets {
	return deadline.Budgets{
		Interactive: deadline.ClassBudget{Default: c.Budget, Max: c.MaxBudget},
		Background:  c.Background, Batch: c.Batch,
	}
}

// checkClasses reports a class budget that makes no sense. (A maximum
// above a class's default maximum is allowed: the gateway may spend it on
// its own work, but every budgeted gRPC server still caps the deadline it
// accepts at the class's default maximum.)
func (c Config) checkClasses() []error {
	var errs []error
	for _, x := range []struct {
		flag, maxFlag string
		b             deadline.ClassBudget
	}{
		{"background-budget", "background-max-budget", c.Background},
		{"batch-budget", "batch-max-budget", c.Batch},
	} {
		switch {
		case x.b.Default <= 0 || x.b.Max <= 0:
			errs = append(errs, fmt.Errorf("%s and %s: must be positive", x.flag, x.maxFlag))
		case x.b.Default > x.b.Max:
			errs = append(errs, fmt.Errorf("%s: %v is above %s %v", x.flag, x.b.Default, x.maxFlag, x.b.Max))
		}
	}
	return errs
}

// Peers is a list of admin peers, a flag.Value written name=url,...
type Peers []admin.Peer

// Set implements flag.Value; it replaces the list.
func (p *Peers) Set(text string) error {
	var out Peers
	for _, kv := range strings.Split(text, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, u, ok := strings.Cut(kv, "=")
		if !ok || name == "" || u == "" {
			return fmt.Errorf("%q: want name=url", kv)
		}
		out = append(out, admin.Peer{Name: name, URL: u})
	}
	*p = out
	return nil
}

// String implements flag.Value.
func (p *Peers) String() string {
	if p == nil {
		return ""
	}
	parts := make([]string, len(*p))
	for i, x := range *p {
		parts[i] = x.Name + "=" + x.URL
	}
	return strings.Join(parts, ",")
}

// Calls are the gateway's calls to orders and catalog under the settings
// s: their caps and flags, and how many times each is tried (naive mode
// retries blind at this layer too; budgeted mode leaves retrying to
// orders). `mercado budget check` and GET /admin/budget read them.
func (c Config) Calls(s mode.Settings) []budgetcheck.Call {
	attempts := resilience.Attempts(s, true, false)
	return []budgetcheck.Call{
		{From: sim.ServiceGateway, To: sim.ServiceOrders, Dep: "orders", Setting: "--orders-cap", Cap: s.Cap(c.OrdersCap),
			Attempts: attempts, Criticality: budgetcheck.Critical, Stage: 1, Route: "Checkout", Method: "Checkout"},
		{From: sim.ServiceGateway, To: sim.ServiceCatalog, Dep: "catalog", Setting: "--browse-cap", Cap: s.Cap(c.CatalogCap),
			Attempts: attempts, Criticality: budgetcheck.Critical, Stage: 1, Route: sim.CatalogListProducts, Method: sim.CatalogListProducts},
	}
}

// Accepts is the longest deadline the edge gives a request of class k
// under the settings s: the class's maximum when the edge puts the budget
// on the request (interactive's when classes are off); zero otherwise.
func (c Config) Accepts(s mode.Settings, k deadline.Class) time.Duration {
	if !s.Mechanisms.EdgeDeadline {
		return 0
	}
	return c.Budgets().For(s.Class(k)).Max
}

// WriteTimeout is the public HTTP server's write timeout: the longest
// budget any class may ask for, plus the usual time to write an answer,
// so that the server never cuts an answer the budget still allows.
func (c Config) WriteTimeout() time.Duration {
	b := c.Budgets()
	longest := max(b.For(deadline.Interactive).Max, b.For(deadline.Background).Max, b.For(deadline.Batch).Max)
	return longest + serve.WriteTimeout
}

// Edge is what the gateway decides at the edge under the settings s, for
// the budget check: with caps off, the HTTP server keeps net/http's
// defaults, no write timeout (see resilience.EdgeChain); its idle timeout
// is the same in every mode.
func (c Config) Edge(s mode.Settings) *budgetcheck.Edge {
	return &budgetcheck.Edge{Service: sim.ServiceGateway, Budgets: c.Budgets(), WriteTimeout: s.Cap(c.WriteTimeout()), IdleTimeout: serve.IdleTimeout}
}
