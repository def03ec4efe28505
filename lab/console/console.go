package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/jsonbody"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/services/gateway"
)

// Options configure a Console.
type Options struct {
	// Gateway is the public API's base URL, where the console's traffic
	// and traced checkouts go.
	Gateway string
	// Admin are the services' admin base URLs, by service name; the
	// gateway's is required (a mode switch goes through it to the rest).
	Admin map[string]string
	// Network is the wire's admin URL (the fault proxies between the
	// services); empty when the shop has none.
	Network string
	// Token, when set, is the admin token: every change through the
	// console needs it as a bearer token, and the console sends it on.
	Token string
	// Answers, when the console runs in the gateway's process, tells it
	// of every request the gateway answers, so that while it sends no
	// traffic itself its charts show traffic sent from elsewhere. Without
	// it they are empty then.
	Answers *gateway.Answers
	Log     *slog.Logger
}

// Console serves the live console. It works until the context New was
// given ends: then its event streams end, and its traffic and scenario
// runs stop.
type Console struct {
	o       Options
	ctx     context.Context
	shop    *driver.Driver // modes, faults, network faults, metrics
	admin   map[string]admin.Client
	network *admin.Client
	mux     *http.ServeMux

	hub     *hub
	gauges  *gauges
	traffic *traffic
	chain   *chain
	runs    *runs

	answered  *answered  // the gateway's answers, whoever sent them
	shopBands *shopBands // the shop's modes and faults, tick by tick

	mu     sync.Mutex
	preset string // the lesson preset last applied, "" before any
}

// Tick is how often the console samples the shop and pushes a tick.
const Tick = time.Second

// readTimeout bounds each read of an admin API while sampling: a service
// that does not answer costs a tick that long, not the console.
const readTimeout = 2 * time.Second

//go:embed static
var static embed.FS

// New returns the console for the shop o describes, working until ctx
// ends.
func New(ctx context.Context, o Options) (*Console, error) {
	if err := checkURL("gateway", o.Gateway); err != nil {
		return nil, err
	}
	if _, ok := o.Admin[sim.ServiceGateway]; !ok {
		return nil, errors.New("console: the gateway's admin URL is required")
	}
	for name, u := range o.Admin {
		if err := checkURL(name+" admin", u); err != nil {
			return nil, err
		}
	}
	if o.Network != "" {
		if err := checkURL("network admin", o.Network); err != nil {
			return nil, err
		}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	httpClient := &http.Client{Timeout: admin.DefaultTimeout}
	c := &Console{o: o, ctx: ctx, shop: driver.New(o.Gateway, o.Admin, o.Token), admin: map[string]admin.Client{},
		hub: newHub(), gauges: newGauges(), answered: newAnswered(), shopBands: &shopBands{}}
	for name, u := range o.Admin {
		c.admin[name] = admin.Client{URL: strings.TrimSuffix(u, "/"), Token: o.Token, HTTP: httpClient}
	}
	if o.Network != "" {
		c.shop.UseNetwork(o.Network)
		c.network = &admin.Client{URL: strings.TrimSuffix(o.Network, "/"), Token: o.Token, HTTP: httpClient}
	}
	c.chain = newChain(o.Gateway, c.hub, c.admin[sim.ServiceGateway].Mode)
	c.traffic = newTraffic(ctx, o.Gateway, c.chain)
	c.runs = newRuns(ctx, c.shop, o.Network != "", c.traffic)
	c.mux = c.routes()
	if o.Answers != nil {
		o.Answers.Observe(c.answered.observe)
	}
	go c.sample(ctx)
	return c, nil
}

func checkURL(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("console: %s: %q is not an http(s) URL", what, s)
	}
	return nil
}

// Gateway is the console a gateway serves on its admin listener: the
// shop it reaches is the gateway's own listeners, its peers and its wire.
func Gateway(log *slog.Logger) gateway.ConsoleFunc {
	return func(ctx context.Context, at gateway.Listening) http.Handler {
		urls := map[string]string{sim.ServiceGateway: at.AdminURL}
		for _, p := range at.Peers {
			urls[p.Name] = p.URL
		}
		c, err := New(ctx, Options{Gateway: at.URL, Admin: urls, Network: at.NetworkAdmin, Token: at.Token,
			Answers: at.Answers, Log: log.With("service", "console")})
		if err != nil {
			log.Error("the console cannot start", "err", err)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				problem.Write(w, r, http.StatusServiceUnavailable, "the console could not start: see the gateway's log")
			})
		}
		return c
	}
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

// routes lists every route of the console.
func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	guard := func(h http.HandlerFunc) http.HandlerFunc { return admin.RequireToken(c.o.Token, h) }
	assets, _ := fs.Sub(static, "static")
	mux.HandleFunc("GET /console/{$}", c.page)
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", noSniff(http.FileServerFS(assets))))
	mux.HandleFunc("GET /console/events", c.events)
	mux.HandleFunc("GET /console/api/state", c.getState)
	mux.HandleFunc("PUT /console/api/mode", guard(c.putMode))
	mux.HandleFunc("PUT /console/api/faults/{service}/{method}", guard(c.putFault))
	mux.HandleFunc("DELETE /console/api/faults", guard(c.clearFaults))
	mux.HandleFunc("DELETE /console/api/faults/{service}", guard(c.clearFaults))
	mux.HandleFunc("PUT /console/api/network/{link}", guard(c.putNetwork))
	mux.HandleFunc("DELETE /console/api/network", guard(c.clearNetwork))
	mux.HandleFunc("DELETE /console/api/network/{link}", guard(c.clearNetwork))
	mux.HandleFunc("PUT /console/api/traffic", guard(c.putTraffic))
	mux.HandleFunc("DELETE /console/api/traffic", guard(c.stopTraffic))
	mux.HandleFunc("POST /console/api/checkout", guard(c.postCheckout))
	mux.HandleFunc("POST /console/api/scenario", guard(c.postScenario))
	mux.HandleFunc("POST /console/api/presets/{name}", guard(c.postPreset))
	mux.HandleFunc("DELETE /console/api/scenario", guard(c.stopScenario))
	mux.HandleFunc("GET /console/runs/{n}/report.html", c.getReport)
	mux.Handle("/", admin.Fallback(mux, "no such console route"))
	return mux
}

// page serves the console's one page. Its policy lets it load nothing
// but what this server sends, so that it works offline and no request
// of it leaves for another host.
func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		problem.Write(w, r, http.StatusInternalServerError, "the page is missing from the binary")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

func noSniff(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// maxBody bounds a request body of the console's API.
const maxBody = 16 << 10

// decode reads a JSON body strictly (internal/jsonbody), answering the
// request itself with a problem when it is refused.
func decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	if status, err := jsonbody.Decode(w, r, maxBody, dst); err != nil {
		problem.Write(w, r, status, err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// upstreamError answers a change an admin API refused or did not answer:
// its own status for a refusal of the request (a 4xx, passed on with its
// detail), 502 for anything else.
func upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var se *admin.StatusError
	if errors.As(err, &se) && se.Status >= 400 && se.Status < 500 {
		detail := se.Detail
		if detail == "" {
			detail = se.Error()
		}
		problem.Write(w, r, se.Status, detail)
		return
	}
	problem.Write(w, r, http.StatusBadGateway, err.Error())
}
