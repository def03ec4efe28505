package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/loadtest"
)

// Shop is a running shop driven through its services' admin APIs: the
// in-process shop of a lab, or a deployment (docker compose, Kubernetes,
// mercado serve all). It is the loadtest.Shop every scenario runs against.
type Shop struct {
	gateway string
	// admin maps service names (gateway, orders, catalog, payments,
	// shipping) to admin base URLs.
	admin  map[string]string
	token  string
	client *http.Client
}

var _ loadtest.Shop = (*Shop)(nil)

// New drives the shop whose gateway serves at gateway and whose services'
// admin APIs are at admin, by service name. token is the admin bearer
// token, empty when the shop requires none.
func New(gateway string, admin map[string]string, token string) *Shop {
	a := make(map[string]string, len(admin))
	for name, url := range admin {
		a[name] = strings.TrimSuffix(url, "/")
	}
	return &Shop{gateway: strings.TrimSuffix(gateway, "/"), admin: a, token: token,
		client: &http.Client{Timeout: 10 * time.Second}}
}

// Discover drives a running shop known by its gateway's URLs: the other
// services' admin URLs are the gateway's peers (GET /admin/peers).
func Discover(ctx context.Context, gateway, gatewayAdmin, token string) (*Shop, error) {
	s := New(gateway, map[string]string{"gateway": gatewayAdmin}, token)
	var peers struct {
		Peers []struct{ Name, URL string } `json:"peers"`
	}
	if err := s.get(ctx, "gateway", "/admin/peers", &peers); err != nil {
		return nil, fmt.Errorf("reaching the gateway's admin API: %w", err)
	}
	for _, p := range peers.Peers {
		s.admin[p.Name] = strings.TrimSuffix(p.URL, "/")
	}
	return s, nil
}

// URL is the gateway's base URL.
func (s *Shop) URL() string { return s.gateway }

// Services are the names of the services driven, sorted.
func (s *Shop) Services() []string {
	names := make([]string, 0, len(s.admin))
	for name := range s.admin {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Switch puts the whole shop in mode m with the overrides on top, through
// the gateway's admin API (which passes the switch on to every peer, and
// resets breakers, pools and retry budgets).
func (s *Shop) Switch(ctx context.Context, m mode.Mode, o mode.Overrides) error {
	if err := s.send(ctx, "gateway", http.MethodPut, "/admin/mode", map[string]any{"mode": m, "mechanisms": o}); err != nil {
		return fmt.Errorf("switching to %s: %w", m, err)
	}
	return nil
}

// SetFaults puts each service's faults in force, given in the --fault
// syntax by service name ("CreateShipment:hang=5s"); services not named
// have none.
func (s *Shop) SetFaults(ctx context.Context, specs map[string]string) error {
	sets := map[string]faults.Set{}
	for svc, spec := range specs {
		if _, ok := s.admin[svc]; !ok {
			return fmt.Errorf("faults for %s: no admin URL for it", svc)
		}
		set, err := faults.Parse(spec)
		if err != nil {
			return fmt.Errorf("faults for %s: %w", svc, err)
		}
		sets[svc] = set
	}
	var errs []error
	for _, svc := range s.Services() {
		set := sets[svc]
		if set == nil {
			set = faults.Set{}
		}
		if err := s.send(ctx, svc, http.MethodPut, "/admin/faults", set); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Settle waits until no pool of any service holds or queues work, or for
// at most limit.
func (s *Shop) Settle(ctx context.Context, limit time.Duration) {
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
func (s *Shop) Counters(ctx context.Context) (loadtest.Counters, error) {
	all, err := s.Scrape(ctx)
	if err != nil {
		return loadtest.Counters{}, err
	}
	c := loadtest.Counters{Skipped: map[string]float64{}, Requests: map[string]float64{}}
	for svc, f := range all {
		c.LateCompletions += f.Sum(telemetry.NameLateCompletions, nil)
		c.LateWorkSeconds += f.Sum(telemetry.NameLateWork, nil)
		c.BreakerOpens += f.Sum(telemetry.NameBreakerTransitions, map[string]string{"to": "open"})
		c.PoolRejections += f.Sum(telemetry.NamePoolRejections, nil)
		c.Retries += f.Sum(telemetry.NameRetries, nil)
		for reason, v := range f.ByLabel(telemetry.NameSkipped, "reason") {
			c.Skipped[reason] += v
		}
		c.Requests[svc] = f.Sum(telemetry.NameRequests, nil)
	}
	c.DuplicateCharges = all["payments"].Sum("mercado_duplicate_charges", nil)
	return c, nil
}

// Gauges reads every service's pool and breaker gauges.
func (s *Shop) Gauges(ctx context.Context) (loadtest.Gauges, error) {
	all, err := s.Scrape(ctx)
	if err != nil {
		return loadtest.Gauges{}, err
	}
	g := loadtest.Gauges{PoolInFlight: map[string]float64{}, BreakerState: map[string]float64{}}
	for svc, f := range all {
		for pool, v := range f.ByLabel(telemetry.NamePoolInFlight, "pool") {
			g.PoolInFlight[svc+"/"+pool] = v
		}
		for dep, v := range f.ByLabel(telemetry.NameBreakerState, "dep") {
			g.BreakerState[svc+"/"+dep] = v
		}
	}
	return g, nil
}

// Scrape reads every service's /metrics, by service name.
func (s *Shop) Scrape(ctx context.Context) (map[string]Families, error) {
	out := map[string]Families{}
	for svc, base := range s.admin {
		f, err := Scrape(ctx, s.client, base+"/metrics")
		if err != nil {
			return nil, err
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
func (s *Shop) Charges(ctx context.Context) (Charges, error) {
	var c Charges
	err := s.get(ctx, "payments", "/admin/charges", &c)
	return c, err
}

// get reads one service's admin resource as JSON into out.
func (s *Shop) get(ctx context.Context, service, path string, out any) error {
	resp, err := s.do(ctx, service, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("reading %s%s: %w", service, path, err)
	}
	return nil
}

// send writes body as JSON to one service's admin API.
func (s *Shop) send(ctx context.Context, service, method, path string, body any) error {
	resp, err := s.do(ctx, service, method, path, body)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// do calls one service's admin API; an answer other than 2xx is an error
// that quotes the answer.
func (s *Shop) do(ctx context.Context, service, method, path string, body any) (*http.Response, error) {
	base, ok := s.admin[service]
	if !ok {
		return nil, fmt.Errorf("no admin URL for %s", service)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s%s: HTTP %d: %s", method, service, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return resp, nil
}
