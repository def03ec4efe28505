package driver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/loadtest"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Driver drives a running shop through its services' admin APIs: the
// in-process shop of a lab, or a deployment (docker compose, Kubernetes,
// mercado serve all). It is the loadtest.Target every scenario runs against.
type Driver struct {
	gateway string
	// admin maps service names (gateway, orders, catalog, payments,
	// shipping) to clients of their admin APIs.
	admin  map[string]admin.Client
	token  string
	client *http.Client
	// network is the wire's admin API, when the shop has fault proxies.
	network *admin.Client
}

var _ loadtest.NetworkTarget = (*Driver)(nil)

// New drives the shop whose gateway serves at gateway and whose services'
// admin APIs are at admin, by service name. token is the admin bearer
// token, empty when the shop requires none.
func New(gateway string, adminURLs map[string]string, token string) *Driver {
	s := &Driver{gateway: strings.TrimSuffix(gateway, "/"), admin: map[string]admin.Client{}, token: token,
		client: &http.Client{Timeout: admin.DefaultTimeout}}
	for name, url := range adminURLs {
		s.add(name, url)
	}
	return s
}

// add drives service name through its admin API at url.
func (s *Driver) add(name, url string) {
	s.admin[name] = admin.Client{URL: strings.TrimSuffix(url, "/"), Token: s.token, HTTP: s.client}
}

// Discover drives a running shop known by its gateway's URLs: the other
// services' admin URLs are the gateway's peers (GET /admin/peers).
func Discover(ctx context.Context, gateway, gatewayAdmin, token string) (*Driver, error) {
	s := New(gateway, map[string]string{sim.ServiceGateway: gatewayAdmin}, token)
	peers, err := s.admin[sim.ServiceGateway].Peers(ctx)
	if err != nil {
		return nil, fmt.Errorf("reaching the gateway's admin API: %w", err)
	}
	for _, p := range peers {
		s.add(p.Name, p.URL)
	}
	return s, nil
}

// URL is the gateway's base URL.
func (s *Driver) URL() string { return s.gateway }

// Services are the names of the services driven, sorted.
func (s *Driver) Services() []string {
	names := make([]string, 0, len(s.admin))
	for name := range s.admin {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Switch puts the whole shop in mode m with the overrides on top, through
// the gateway's admin API (which passes the switch on to every peer, and
// resets breakers, pools and retry budgets), with pools of workers slots
// (zero: each service's own size).
func (s *Driver) Switch(ctx context.Context, m mode.Mode, o mode.Overrides, workers int) error {
	if _, err := s.admin[sim.ServiceGateway].Switch(ctx, admin.ModeChange{Mode: m, Mechanisms: o, Workers: workers}); err != nil {
		return fmt.Errorf("switching to %s: %w", m, err)
	}
	return nil
}

// SetFaults puts each service's faults in force, given in the --fault
// syntax by service name ("CreateShipment:hang=5s"); services not named
// have none.
func (s *Driver) SetFaults(ctx context.Context, specs map[string]string) error {
	sets := map[string]faults.Set{}
	for svc, spec := range specs {
		set, err := faults.Parse(spec)
		if err != nil {
			return fmt.Errorf("faults for %s: %w", svc, err)
		}
		sets[svc] = set
	}
	return s.PutFaults(ctx, sets)
}

// PutFaults puts each service's faults in force, by service name;
// services not named have none.
func (s *Driver) PutFaults(ctx context.Context, sets map[string]faults.Set) error {
	for svc := range sets {
		if _, ok := s.admin[svc]; !ok {
			return fmt.Errorf("faults for %s: no admin URL for it", svc)
		}
	}
	var errs []error
	for _, svc := range s.Services() {
		set := sets[svc]
		if set == nil {
			set = faults.Set{}
		}
		if _, err := s.admin[svc].SetFaults(ctx, set); err != nil {
			errs = append(errs, fmt.Errorf("faults for %s: %w", svc, err))
		}
	}
	return errors.Join(errs...)
}

// UseNetwork drives the shop's fault proxies through the wire's admin API
// at url (a shop served with --network-proxy: http://localhost:9085).
func (s *Driver) UseNetwork(url string) {
	s.network = &admin.Client{URL: strings.TrimSuffix(url, "/"), Token: s.token, HTTP: s.client}
}

// SetNetwork puts each link's network faults in force, given in
// internal/netfault's grammar by link ("orders-shipping": "stall"); the
// links not named have none.
func (s *Driver) SetNetwork(ctx context.Context, specs map[string]string) error {
	if s.network == nil {
		return errors.New("network faults: this shop has no fault proxies (serve it with --network-proxy)")
	}
	v, err := s.network.Network(ctx)
	if err != nil {
		return fmt.Errorf("network faults: %w", err)
	}
	var errs []error
	proxied := map[string]bool{}
	for _, l := range v.Links {
		proxied[l.Name] = true
		spec, err := netfault.Parse(specs[l.Name])
		if err != nil {
			errs = append(errs, fmt.Errorf("network faults for %s: %w", l.Name, err))
			continue
		}
		if spec.String() == l.Faults.String() {
			continue // in force already: setting it again would close a stall's connections
		}
		if len(spec) == 0 {
			_, err = s.network.ClearNetwork(ctx, l.Name)
		} else {
			_, err = s.network.SetNetwork(ctx, l.Name, spec)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("network faults for %s: %w", l.Name, err))
		}
	}
	for link := range specs {
		if !proxied[link] {
			errs = append(errs, fmt.Errorf("network faults for %s: the shop's fault proxies have no such link", link))
		}
	}
	return errors.Join(errs...)
}

// Settle waits until no pool of any service holds or queues work, or for
// at most limit.
func (s *Driver) Settle(ctx context.Context, limit time.Duration) {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		all, err := s.Scrape(ctx)
		if err != nil {
			return
		}
		busy := 0.0
		for _, f := range all {
			busy += f.Sum(telemetry.NamePoolInFlight, nil) + f.Sum(telemetry.NamePoolWaiting, nil)
		}
		if busy == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Counters reads what every service has counted since it started.
func (s *Driver) Counters(ctx context.Context) (loadtest.Counters, error) {
	all, err := s.Scrape(ctx)
	if err != nil {
		return loadtest.Counters{}, err
	}
	c := loadtest.Counters{Skipped: map[string]float64{}, Requests: map[string]float64{}, Methods: map[string]float64{},
		Hops: map[string]loadtest.Histogram{}, Caps: map[string]float64{},
		InsufficientBudget: map[string]float64{}, HopTimeouts: map[string]float64{}, HopBreakerOpens: map[string]float64{}}
	for svc, f := range all {
		c.LateCompletions += f.Sum(telemetry.NameLateCompletions, nil)
		c.LateWorkSeconds += f.Sum(telemetry.NameLateWork, nil)
		c.BreakerOpens += f.Sum(telemetry.NameBreakerTransitions, map[string]string{"to": "open"})
		c.PoolRejections += f.Sum(telemetry.NamePoolRejections, nil)
		c.Retries += f.Sum(telemetry.NameRetries, nil)
		for reason, v := range f.ByLabel(telemetry.NameSkipped, "reason") {
			c.Skipped[reason] += v
		}
		c.InsufficientBudget[svc] = f.Sum(telemetry.NameSkipped, map[string]string{"reason": telemetry.ReasonInsufficientBudget})
		for _, outcome := range []deadline.Outcome{deadline.OutcomeTimeout, deadline.OutcomeBudget} {
			for dep, v := range f.Count(telemetry.NameHopDuration, "outcome", string(outcome), "dep") {
				c.HopTimeouts[svc+"/"+dep] += v
			}
		}
		for dep, v := range f.Count(telemetry.NameBreakerTransitions, "to", "open", "dep") {
			c.HopBreakerOpens[svc+"/"+dep] = v
		}
		c.Requests[svc] = f.Sum(telemetry.NameRequests, nil)
		for method, v := range f.ByLabel(telemetry.NameRequests, "method") {
			c.Methods[svc+"/"+path.Base(method)] += v
		}
		for dep, h := range f.Histograms(telemetry.NameHopDuration, "dep") {
			c.Hops[svc+"/"+dep] = h
		}
		for dep, v := range f.ByLabel(telemetry.NameHopCap, "dep") {
			c.Caps[svc+"/"+dep] = v
		}
		if svc == sim.ServiceCatalog {
			c.LockWait = f.Histograms(telemetry.NameStockLockWait, "service")[svc]
		}
	}
	// Exact, from the store: payments' gauge of them reads it only every
	// few seconds.
	if _, ok := s.admin[sim.ServicePayments]; ok {
		ch, err := s.Charges(ctx)
		if err != nil {
			return loadtest.Counters{}, fmt.Errorf("counting payments' charges: %w", err)
		}
		c.DuplicateCharges = float64(ch.Duplicates)
	}
	return c, nil
}

// Gauges reads every service's pool and breaker gauges.
func (s *Driver) Gauges(ctx context.Context) (loadtest.Gauges, error) {
	all, err := s.Scrape(ctx)
	if err != nil {
		return loadtest.Gauges{}, err
	}
	g := loadtest.Gauges{PoolInFlight: map[string]float64{}, PoolCapacity: map[string]float64{}, BreakerState: map[string]float64{}}
	for svc, f := range all {
		for pool, v := range f.ByLabel(telemetry.NamePoolInFlight, "pool") {
			g.PoolInFlight[svc+"/"+pool] = v
		}
		for pool, v := range f.ByLabel(telemetry.NamePoolCapacity, "pool") {
			g.PoolCapacity[svc+"/"+pool] = v
		}
		for dep, v := range f.ByLabel(telemetry.NameBreakerState, "dep") {
			g.BreakerState[svc+"/"+dep] = v
		}
	}
	return g, nil
}

// Scrape reads every service's /metrics, by service name.
func (s *Driver) Scrape(ctx context.Context) (map[string]Families, error) {
	out := map[string]Families{}
	for svc, c := range s.admin {
		f, err := Scrape(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("scraping %s: %w", svc, err)
		}
		out[svc] = f
	}
	return out, nil
}

// Charges are payments' count of the charges it holds (GET /admin/charges).
type Charges struct {
	Charges   int `json:"charges"`
	Succeeded int `json:"succeeded"`
	// RequestIDs are the logical checkouts with a successful charge;
	// Duplicates the successful charges beyond one per checkout.
	RequestIDs int `json:"request_ids"`
	Duplicates int `json:"duplicates"`
}

// Charges reads payments' count of the charges it holds.
func (s *Driver) Charges(ctx context.Context) (Charges, error) {
	var c Charges
	p, ok := s.admin[sim.ServicePayments]
	if !ok {
		return c, errors.New("no admin URL for payments")
	}
	err := p.Read(ctx, "/admin/charges", &c)
	return c, err
}
