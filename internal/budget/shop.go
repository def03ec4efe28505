package budget

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/telemetry"
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
)

// Observe reads the hop histograms of every service of the shop whose
// gateway admin API is at url: the gateway's own /metrics, and those of
// the peers it lists (GET /admin/peers).
func Observe(ctx context.Context, url, token string) (Observed, error) {
	gw := admin.Client{URL: strings.TrimSuffix(url, "/"), Token: token}
	peers, err := gw.Peers(ctx)
	if err != nil {
		return Observed{}, fmt.Errorf("--from %s: %w", url, err)
	}
	o := Observed{P99: map[string]time.Duration{}, Count: map[string]uint64{}}
	hists := map[string]*dto.Histogram{}
	for _, c := range append([]admin.Client{gw}, peerClients(peers, token)...) {
		fams, err := c.Metrics(ctx)
		if err != nil {
			return Observed{}, fmt.Errorf("--from %s: %w", url, err)
		}
		addHops(hists, fams[telemetry.NameHopDuration])
	}
	for k, h := range hists {
		if h.GetSampleCount() == 0 {
			continue
		}
		o.P99[k] = Quantile(0.99, h)
		o.Count[k] = h.GetSampleCount()
	}
	return o, nil
}

func peerClients(peers []admin.Peer, token string) []admin.Client {
	var out []admin.Client
	for _, p := range peers {
		out = append(out, admin.Client{URL: p.URL, Token: token})
	}
	return out
}

// addHops merges fam's histograms into hists by service/dep, summing every
// outcome's buckets.
func addHops(hists map[string]*dto.Histogram, fam *dto.MetricFamily) {
	if fam == nil {
		return
	}
	for _, m := range fam.Metric {
		var svc, dep string
		for _, l := range m.Label {
			switch l.GetName() {
			case labelService:
				svc = l.GetValue()
			case labelDep:
				dep = l.GetValue()
			}
		}
		h := m.GetHistogram()
		if dep == "" || h == nil {
			continue
		}
		k := svc + "/" + dep
		acc, ok := hists[k]
		if !ok {
			acc = &dto.Histogram{SampleCount: new(uint64)}
			hists[k] = acc
		}
		*acc.SampleCount += h.GetSampleCount()
		for _, b := range h.Bucket {
			i := slices.IndexFunc(acc.Bucket, func(a *dto.Bucket) bool { return a.GetUpperBound() == b.GetUpperBound() })
			if i < 0 {
				acc.Bucket = append(acc.Bucket, &dto.Bucket{UpperBound: new(float64), CumulativeCount: new(uint64)})
				i = len(acc.Bucket) - 1
				*acc.Bucket[i].UpperBound = b.GetUpperBound()
			}
			*acc.Bucket[i].CumulativeCount += b.GetCumulativeCount()
		}
		sort.Slice(acc.Bucket, func(i, j int) bool { return acc.Bucket[i].GetUpperBound() < acc.Bucket[j].GetUpperBound() })
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
// millisecond: a call named "service/dep" takes that dependency's, a call
// named "dep" takes it when one service alone reports it. Calls the shop
// has not measured keep the file's p99. It returns the calls it filled, and
// an error for a name more than one service reports.
func (o Observed) Apply(f *File) ([]string, error) {
	var filled []string
	for _, c := range f.Graph.Calls() {
		key := c.Name
		if !strings.Contains(key, "/") {
			var from []string
			for k := range o.P99 {
				if strings.HasSuffix(k, "/"+c.Name) {
					from = append(from, k)
				}
			}
			sort.Strings(from)
			if len(from) > 1 {
				return nil, fmt.Errorf("call %q: more than one service calls it (%s): name it %s", c.Name, strings.Join(from, ", "), strings.Join(from, " or "))
			}
			if len(from) == 0 {
				continue
			}
			key = from[0]
		}
		p, ok := o.P99[key]
		if !ok {
			continue
		}
		c.P99 = max(p.Round(time.Millisecond), time.Millisecond)
		if c.P99 < p {
			c.P99 += time.Millisecond
		}
		filled = append(filled, fmt.Sprintf("%s (%s, %d calls)", c.Name, key, o.Count[key]))
	}
	return filled, nil
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
