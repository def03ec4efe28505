package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"
)

// ErrUnknownLink is wrapped by the error of a call naming a link the
// Network does not proxy.
var ErrUnknownLink = errors.New("unknown link")

// Network is the fault proxies of a shop, one per link: each listens on
// its own port and forwards to the callee, through the link's faults.
// Its zero value is not usable; call New. Safe for concurrent use.
type Network struct {
	server *toxiproxy.ApiServer

	mu    sync.Mutex
	links map[string]*link

	registry  *prometheus.Registry
	faultsSet *prometheus.CounterVec
	inForce   *prometheus.GaugeVec
}

// link is one proxy and the faults it applies.
type link struct {
	proxy *toxiproxy.Proxy
	spec  Spec
}

// quietToxics silences zerolog's global logger, once: one of Toxiproxy's
// toxics (bandwidth) logs through it rather than through the proxy's
// logger, and a library does not log. Nothing else in Mercado uses
// zerolog.
var quietToxics sync.Once

// New returns a Network with no links yet.
func New() *Network {
	quietToxics.Do(func() { zlog.Logger = zerolog.Nop() })
	reg := prometheus.NewRegistry()
	n := &Network{
		// Toxiproxy's API server is only the proxies' home here (its HTTP
		// API is never served) and its logger is silent: a library does
		// not log.
		server:   toxiproxy.NewServer(toxiproxy.NewMetricsContainer(reg), zerolog.Nop()),
		links:    map[string]*link{},
		registry: reg,
		faultsSet: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mercado_netfault_faults_set_total",
			Help: "Network faults set on a link, by link and kind.",
		}, []string{"link", "kind"}),
		inForce: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mercado_netfault_faults",
			Help: "Network faults in force on a link, by link.",
		}, []string{"link"}),
	}
	reg.MustRegister(n.faultsSet, n.inForce)
	return n
}

// Add starts the proxy of the link name (one of Links), listening on
// listen ("127.0.0.1:0" for a free port) and forwarding to upstream, with
// no faults. It returns the address it listens on: the one to point the
// caller at.
func (n *Network) Add(name, listen, upstream string) (string, error) {
	if err := CheckLink(name); err != nil {
		return "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.links[name]; ok {
		return "", fmt.Errorf("link %s: added twice", name)
	}
	p := toxiproxy.NewProxy(n.server, name, listen, upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("link %s: listening on %s: %w", name, listen, err)
	}
	n.links[name] = &link{proxy: p, spec: Spec{}}
	n.inForce.WithLabelValues(name).Set(0)
	return p.Listen, nil
}

// lookup is the link name; the error names the links there are.
func (n *Network) lookup(name string) (*link, error) {
	l, ok := n.links[name]
	if !ok {
		names := slices.Sorted(maps.Keys(n.links))
		if err := CheckLink(name); err != nil {
			return nil, fmt.Errorf("%w: %s; this proxy has %s", ErrUnknownLink, strings.TrimPrefix(err.Error(), "unknown link "), strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("%w %s: this proxy has %s", ErrUnknownLink, name, strings.Join(names, ", "))
	}
	return l, nil
}

// Set replaces the faults of link name with spec. Connections already
// open feel the new faults at once: Toxiproxy changes the toxics of its
// live connections, and gRPC keeps one long-lived connection per callee,
// so a fault that only new connections saw would never be felt.
func (n *Network) Set(name string, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	l, err := n.lookup(name)
	if err != nil {
		return err
	}
	p := l.proxy
	// Removing a stall's toxic closes the connections it held (Toxiproxy's
	// timeout toxic closes its stream as it goes), while the port stays
	// open: the callers connect again at once, as after a reset on a real
	// network. A port closed and opened again instead refuses the callers
	// that are quicker than it, and gRPC then backs off for a second,
	// failing every call meanwhile.
	p.Toxics.ResetToxics(context.Background())
	l.spec = Spec{}
	if spec.Has(Down) {
		p.Stop() // closes the listener and the open connections
	} else if !p.Enabled {
		if err := p.Start(); err != nil { // the same port again
			return fmt.Errorf("link %s: listening again on %s: %w", name, p.Listen, err)
		}
	}
	for _, f := range spec {
		if f.Kind == Down {
			continue
		}
		for _, dir := range streams(f.Direction) {
			if _, err := p.Toxics.AddToxicJson(bytes.NewReader(toxicJSON(f, dir))); err != nil {
				p.Toxics.ResetToxics(context.Background())
				return fmt.Errorf("link %s: %s: %w", name, f.Kind, err)
			}
		}
	}
	l.spec = slices.Clone(spec)
	for _, f := range spec {
		n.faultsSet.WithLabelValues(name, string(f.Kind)).Inc()
	}
	n.inForce.WithLabelValues(name).Set(float64(len(spec)))
	return nil
}

// Clear removes the faults of link name; "" clears every link.
func (n *Network) Clear(name string) error {
	if name != "" {
		return n.Set(name, Spec{})
	}
	var errs []error
	for _, l := range n.List() {
		errs = append(errs, n.Set(l.Name, Spec{}))
	}
	return errors.Join(errs...)
}

// LinkView is one link as List shows it.
type LinkView struct {
	Name string `json:"link"`
	// Listen is the proxy's address, where the caller connects.
	Listen string `json:"listen"`
	// Upstream is the callee's address.
	Upstream string `json:"upstream"`
	Faults   Spec   `json:"faults"`
}

// List shows every link, in the order of Links.
func (n *Network) List() []LinkView {
	n.mu.Lock()
	defer n.mu.Unlock()
	var views []LinkView
	for _, name := range Links() {
		if l, ok := n.links[name]; ok {
			views = append(views, LinkView{Name: name, Listen: l.proxy.Listen, Upstream: l.proxy.Upstream, Faults: slices.Clone(l.spec)})
		}
	}
	return views
}

// Link shows one link.
func (n *Network) Link(name string) (LinkView, error) {
	for _, v := range n.List() {
		if v.Name == name {
			return v, nil
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, err := n.lookup(name)
	return LinkView{}, err
}

// Metrics serves the proxies' metrics in the Prometheus text format.
func (n *Network) Metrics() http.Handler {
	return promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{})
}

// Close stops every proxy: the listeners close, and so do the connections
// through them.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.links {
		l.proxy.Stop()
	}
}

// streams are Toxiproxy's streams for direction d.
func streams(d Direction) []stream.Direction {
	switch d {
	case DirUp:
		return []stream.Direction{stream.Upstream}
	case DirDown:
		return []stream.Direction{stream.Downstream}
	}
	return []stream.Direction{stream.Upstream, stream.Downstream}
}

// toxicJSON is fault f on stream dir as Toxiproxy's API takes a toxic.
func toxicJSON(f Fault, dir stream.Direction) []byte {
	var typ string
	attrs := map[string]int64{}
	switch f.Kind {
	case Latency:
		typ, attrs["latency"], attrs["jitter"] = "latency", f.Latency.Milliseconds(), f.Jitter.Milliseconds()
	case Bandwidth:
		typ, attrs["rate"] = "bandwidth", f.RateKB
	case Stall:
		typ, attrs["timeout"] = "timeout", 0 // 0: the data stops, the socket is never closed
	case Reset:
		typ, attrs["timeout"] = "reset_peer", 0
	}
	b, _ := json.Marshal(map[string]any{
		"name": string(f.Kind) + "_" + dir.String(), "type": typ, "stream": dir.String(),
		"toxicity": 1.0, "attributes": attrs,
	})
	return b
}
