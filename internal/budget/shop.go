package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Observed is what a running shop measured of each dependency: the p99 of
// its hop histogram (mercado_hop_duration_seconds), every outcome merged,
// by "service/dep" ("orders/catalog").
type Observed struct {
	P99   map[string]time.Duration
	Count map[string]uint64
}

// Hop histogram labels.
const (
	labelService = "service"
	labelDep     = "dep"
	labelOutcome = "outcome"
)

// Observe reads the hop histograms of every service of the shop whose
// gateway admin API is at url: the gateway's own /metrics, and those of
// the peers it lists (GET /admin/peers).
func Observe(ctx context.Context, url, token string) (Observed, error) {
	hists, _, err := scrapeHops(ctx, url, token)
	if err != nil {
		return Observed{}, err
	}
	o := Observed{P99: map[string]time.Duration{}, Count: map[string]uint64{}}
	for k, h := range hists {
		if h.hist.GetSampleCount() == 0 {
			continue
		}
		o.P99[k] = Quantile(0.99, h.hist)
		o.Count[k] = h.hist.GetSampleCount()
	}
	return o, nil
}

// hop is one dependency's merged histogram and how many of its calls
// timed out.
type hop struct {
	hist     *dto.Histogram
	timedOut uint64
}

// scrapeHops reads every service's hop histograms, by "service/dep", and
// the admin clients of the services (the gateway's first).
func scrapeHops(ctx context.Context, url, token string) (map[string]*hop, []admin.Client, error) {
	gw := admin.Client{URL: strings.TrimSuffix(url, "/"), Token: token}
	peers, err := gw.Peers(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("--from %s: %w", url, err)
	}
	hists := map[string]*hop{}
	clients := append([]admin.Client{gw}, peerClients(peers, token)...)
	for _, c := range clients {
		fams, err := c.Metrics(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("--from %s: %w", url, err)
		}
		addHops(hists, fams[telemetry.NameHopDuration])
	}
	return hists, clients, nil
}

func peerClients(peers []admin.Peer, token string) []admin.Client {
	var out []admin.Client
	for _, p := range peers {
		out = append(out, admin.Client{URL: p.URL, Token: token})
	}
	return out
}

// addHops merges fam's histograms into hists by service/dep, summing the
// buckets of every outcome but skipped (a skipped call took no time), and
// counting the calls that timed out.
func addHops(hists map[string]*hop, fam *dto.MetricFamily) {
	if fam == nil {
		return
	}
	for _, m := range fam.Metric {
		var svc, dep, outcome string
		for _, l := range m.Label {
			switch l.GetName() {
			case labelService:
				svc = l.GetValue()
			case labelDep:
				dep = l.GetValue()
			case labelOutcome:
				outcome = l.GetValue()
			}
		}
		h := m.GetHistogram()
		if dep == "" || h == nil || outcome == string(deadline.OutcomeSkipped) {
			continue
		}
		k := svc + "/" + dep
		acc, ok := hists[k]
		if !ok {
			acc = &hop{hist: &dto.Histogram{SampleCount: new(uint64)}}
			hists[k] = acc
		}
		if outcome == string(deadline.OutcomeTimeout) {
			acc.timedOut += h.GetSampleCount()
		}
		*acc.hist.SampleCount += h.GetSampleCount()
		for _, b := range h.Bucket {
			i := slices.IndexFunc(acc.hist.Bucket, func(a *dto.Bucket) bool { return a.GetUpperBound() == b.GetUpperBound() })
			if i < 0 {
				acc.hist.Bucket = append(acc.hist.Bucket, &dto.Bucket{UpperBound: new(float64), CumulativeCount: new(uint64)})
				i = len(acc.hist.Bucket) - 1
				*acc.hist.Bucket[i].UpperBound = b.GetUpperBound()
			}
			*acc.hist.Bucket[i].CumulativeCount += b.GetCumulativeCount()
		}
		sort.Slice(acc.hist.Bucket, func(i, j int) bool { return acc.hist.Bucket[i].GetUpperBound() < acc.hist.Bucket[j].GetUpperBound() })
	}
}

// Quantile estimates the q quantile of a histogram of seconds as
// Prometheus's histogram_quantile does: linear within the bucket the rank
// falls in, and the highest finite bound when it falls past them all.
func Quantile(q float64, h *dto.Histogram) time.Duration {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range h.Bucket {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if math.IsInf(upper, +1) {
			break
		}
		if count >= rank {
			in := count - below
			v := upper
			if in > 0 {
				v = lower + (upper-lower)*(rank-below)/in
			}
			return time.Duration(v * float64(time.Second))
		}
		lower, below = upper, count
	}
	return time.Duration(lower * float64(time.Second))
}

// Apply puts the shop's p99s into f's calls, each rounded up to the
// millisecond (measuredCall says which dependency a call is). Calls the
// shop has not measured keep the file's p99. It returns the calls it
// filled, and an error for a name more than one service reports.
func (o Observed) Apply(f *File) ([]string, error) {
	var filled []string
	for _, c := range f.Graph.Calls() {
		key, err := measuredCall(c.Name, o.P99)
		if err != nil {
			return nil, err
		}
		if key == "" {
			continue
		}
		c.P99 = ceilMS(o.P99[key])
		filled = append(filled, fmt.Sprintf("%s (%s, %d calls)", c.Name, key, o.Count[key]))
	}
	return filled, nil
}

// measuredCall finds the shop's "service/dep" for a call of the file: a
// call named "service/dep" is that dependency, a call named "dep" is it
// when one service alone reports it. "" when the shop has not measured
// it.
func measuredCall[V any](name string, measured map[string]V) (string, error) {
	if strings.Contains(name, "/") {
		if _, ok := measured[name]; ok {
			return name, nil
		}
		return "", nil
	}
	var from []string
	for k := range measured {
		if strings.HasSuffix(k, "/"+name) {
			from = append(from, k)
		}
	}
	sort.Strings(from)
	switch len(from) {
	case 0:
		return "", nil
	case 1:
		return from[0], nil
	}
	return "", fmt.Errorf("call %q: more than one service calls it (%s): name it %s", name, strings.Join(from, ", "), strings.Join(from, " or "))
}

// ceilMS rounds d up to the millisecond, at least one.
func ceilMS(d time.Duration) time.Duration {
	r := max(d.Round(time.Millisecond), time.Millisecond)
	if r < d {
		r += time.Millisecond
	}
	return r
}

// Names lists what the shop has measured, "service/dep" each, sorted.
func (o Observed) Names() string {
	var out []string
	for k := range o.P99 {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "nothing yet"
	}
	return strings.Join(out, ", ")
}

// Hops is what ObserveHops read of a running shop.
type Hops struct {
	// Calls are the shop's capped calls, each with its hop histogram.
	Calls []HopObservation
	// Budget is the edge's interactive budget (a request without a
	// deadline of its own).
	Budget time.Duration
}

// ErrNoTraffic is ObserveHops' answer when the shop has made no call yet.
var ErrNoTraffic = errors.New("the shop has made no call yet")

// ObserveHops reads, from the shop whose gateway admin API is at url,
// every service's contract (GET /admin/budget: each call's flag, cap,
// floor and place in the request, and the edge's budget) and hop
// histograms (/metrics), for Suggest. Nothing answering at url wraps
// admin.ErrNoAnswer; a shop with no traffic yet, ErrNoTraffic.
func ObserveHops(ctx context.Context, url, token string) (Hops, error) {
	hists, clients, err := scrapeHops(ctx, url, token)
	if err != nil {
		return Hops{}, err
	}
	var out Hops
	var calls uint64
	for _, c := range clients {
		var k budgetcheck.Contract
		if err := c.Read(ctx, "/admin/budget", &k); err != nil {
			return Hops{}, fmt.Errorf("--from %s: %s: %w", url, c.URL, err)
		}
		if k.Edge != nil {
			for _, b := range k.Edge.Budgets {
				if b.Class == deadline.Interactive {
					out.Budget = time.Duration(b.DefaultMS * float64(time.Millisecond))
				}
			}
		}
		var floor time.Duration
		if k.Mechanisms.ClipToBudget {
			floor = time.Duration(k.FloorMS * float64(time.Millisecond))
		}
		for _, call := range k.Calls {
			if call.Setting == "" {
				continue // fixed in code, such as the audit write's
			}
			o := HopObservation{From: k.Service, To: call.Dep, Callee: call.To, Setting: call.Setting,
				Cap: time.Duration(call.CapMS * float64(time.Millisecond)), Floor: floor,
				Criticality: call.Criticality, Stage: call.Stage, Parallel: call.Parallel, Route: call.Route, Method: call.Method}
			if h := hists[k.Service+"/"+call.Dep]; h != nil {
				o.Durations, o.TimedOut = h.hist, h.timedOut
				calls += h.hist.GetSampleCount()
			}
			out.Calls = append(out.Calls, o)
		}
	}
	if calls == 0 {
		return out, fmt.Errorf("--from %s: %w", url, ErrNoTraffic)
	}
	return out, nil
}

// Apply puts what the shop measured into f's calls for Predict: each
// measured call's hop histogram and p99 (measuredCall says which
// dependency a call is), and its cap in the shop where the file gives
// none; the shop's floor where the file gives none. It returns the calls
// it filled.
func (h Hops) Apply(f *File) ([]string, error) {
	byKey := map[string]HopObservation{}
	for _, o := range h.Calls {
		if o.Durations != nil && o.Durations.GetSampleCount() > 0 {
			byKey[o.From+"/"+o.To] = o
		}
	}
	var filled []string
	for _, c := range f.Graph.Calls() {
		key, err := measuredCall(c.Name, byKey)
		if err != nil {
			return nil, err
		}
		if key == "" {
			continue
		}
		o := byKey[key]
		c.Measured, c.P99 = o.Durations, ceilMS(Quantile(0.99, o.Durations))
		if c.Cap == 0 {
			c.Cap = o.Cap
		}
		if f.Floor == 0 {
			f.Floor = o.Floor
		}
		filled = append(filled, fmt.Sprintf("%s (%s, %d calls)", c.Name, key, o.Durations.GetSampleCount()))
	}
	return filled, nil
}
