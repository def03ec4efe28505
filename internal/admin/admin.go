package admin

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/jsonbody"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/problem"
)

// Peer is another service whose admin API the gateway fans out to.
type Peer struct {
	Name string `json:"name"`
	// URL is the peer's admin base URL, such as "http://orders:9081".
	URL string `json:"url"`
}

// Options configure Handler.
type Options struct {
	// Service is the service's name; the faults it takes are on the
	// methods faults.Methods(Service) lists.
	Service  string
	Settings *mode.Live
	Faults   *faults.Injector
	// Metrics serves /metrics; may be nil.
	Metrics http.Handler
	// Token, when set, is required as a bearer token for every change.
	Token string
	// Peers are the services a mode switch fans out to (the gateway's).
	Peers []Peer
	// Client makes the calls to the peers; nil means a client with a 5 s
	// timeout whose connections are bounded by ConnectTimeout.
	Client *http.Client
	// ConnectTimeout bounds the connect to a peer of the default Client,
	// apart from the call's 5 s (zero: 5 s too), so that a peer whose
	// address accepts nothing costs the switch that much, not the call's
	// whole timeout.
	ConnectTimeout time.Duration
	Log            *slog.Logger
	// Routes are extra read routes of one service, by ServeMux pattern.
	Routes map[string]http.Handler
	// Budget returns the service's budget contract, served at
	// GET /admin/budget (budgetcheck.Contract); nil serves none.
	Budget func() any
}

// maxBody bounds an admin request body.
const maxBody = 64 << 10

// Handler returns the admin API.
func Handler(o Options) http.Handler {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Second, Transport: connectTransport(o.ConnectTimeout)}
	}
	a := &api{Options: o, workers: o.Settings.Load().Workers}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/mode", a.getMode)
	mux.HandleFunc("PUT /admin/mode", a.guard(a.putMode))
	mux.HandleFunc("GET /admin/peers", a.getPeers)
	mux.HandleFunc("GET /admin/faults", a.getFaults)
	mux.HandleFunc("PUT /admin/faults", a.guard(a.putFaults))
	mux.HandleFunc("PUT /admin/faults/{method}", a.guard(a.putMethodFault))
	mux.HandleFunc("DELETE /admin/faults", a.guard(a.clearFaults))
	mux.HandleFunc("DELETE /admin/faults/{method}", a.guard(a.clearFaults))
	if o.Budget != nil {
		mux.HandleFunc("GET /admin/budget", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, o.Budget()) })
	}
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	for pattern, h := range o.Routes {
		mux.Handle(pattern, h)
	}
	mux.Handle("/", Fallback(mux, "no such admin route"))
	return mux
}

// probeMethods are the methods fallback tries a path with.
var probeMethods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete}

// Fallback answers a request no route of mux took: 405 with Allow when
// the path has routes for other methods, 404 with notFound otherwise,
// both as problem documents (ServeMux's own answers are plain text, and
// its catch-all "/" would turn every wrong method into a 404).
func Fallback(mux *http.ServeMux, notFound string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range probeMethods {
			probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
			if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			problem.Write(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
			return
		}
		problem.Write(w, r, http.StatusNotFound, notFound)
	})
}

type api struct {
	Options
	// workers is the pools' size the service started with: what a switch
	// that names none goes back to.
	workers int
}

// guard lets a change through only with the admin token, when one is set.
func (a *api) guard(next http.HandlerFunc) http.HandlerFunc { return RequireToken(a.Token, next) }

// RequireToken lets a request through only with token as its bearer
// token, when token is set: every admin API's changes go through it, and
// so do the live console's.
func RequireToken(token string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if token != "" {
			// ConstantTimeCompare: how long the check takes says nothing
			// about how much of a guess was right.
			got := bearerToken(r)
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mercado-admin"`)
				problem.Write(w, r, http.StatusUnauthorized, "changes need the admin token: Authorization: Bearer <token>")
				return
			}
		}
		next(w, r)
	}
}

// bearerToken is the token of r's bearer authorization (the scheme in any
// case), empty when it has none.
func bearerToken(r *http.Request) string {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return token
}

// ModeView is the settings in force as the admin API shows them.
type ModeView struct {
	Service    string          `json:"service"`
	Mode       mode.Mode       `json:"mode"`
	Mechanisms mode.Mechanisms `json:"mechanisms"`
	MarginMS   int64           `json:"margin_ms"`
	FloorMS    int64           `json:"floor_ms"`
	// ConnectTimeoutMS is the connect timeout configured; it bounds a
	// connection attempt while mechanisms.connect_timeout is on.
	ConnectTimeoutMS int64 `json:"connect_timeout_ms"`
	// Workers is the size of the service's worker pools in force.
	Workers int `json:"workers"`
}

func (a *api) view() ModeView {
	s := a.Settings.Load()
	return ModeView{Service: a.Service, Mode: s.Mode, Mechanisms: s.Mechanisms,
		MarginMS: s.Margin.Milliseconds(), FloorMS: s.Floor.Milliseconds(),
		ConnectTimeoutMS: s.Connect.Milliseconds(), Workers: s.Workers}
}

func (a *api) getMode(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.view())
}

// ModeChange is the body of PUT /admin/mode: a mode, and switches on top
// of its preset.
type ModeChange struct {
	Mode       mode.Mode      `json:"mode"`
	Mechanisms mode.Overrides `json:"mechanisms"`
	// Workers, when set, is the size of the worker pools the switch puts
	// in force, as --workers sets it at start: a lesson sized for smaller
	// pools can run on a shop already serving. Left out, the pools are of
	// the size the service started with, so that no switch inherits a
	// lesson's pools unawares.
	Workers int `json:"workers,omitempty"`
}

// MaxWorkers bounds ModeChange.Workers, as it bounds --workers.
const MaxWorkers = 100_000

// PeerResult is one service's answer to a fanned-out switch.
type PeerResult struct {
	Service  string    `json:"service"`
	OK       bool      `json:"ok"`
	Settings *ModeView `json:"settings,omitempty"`
	Error    string    `json:"error,omitempty"`
}

func (a *api) putMode(w http.ResponseWriter, r *http.Request) {
	var ch ModeChange
	if !decode(w, r, &ch) {
		return
	}
	// The refusals name the values accepted, not the one sent: it is the
	// client's, and may be anything up to the body limit.
	if _, err := mode.Parse(string(ch.Mode)); err != nil {
		problem.Write(w, r, http.StatusBadRequest, "mode must be "+mode.Names())
		return
	}
	if err := ch.Mechanisms.Validate(); err != nil {
		problem.Write(w, r, http.StatusBadRequest,
			fmt.Sprintf("mechanisms.retries must be %q, %q or %q", mode.RetriesNaive, mode.RetriesBudgeted, mode.RetriesOff))
		return
	}
	if ch.Workers < 0 || ch.Workers > MaxWorkers {
		problem.Write(w, r, http.StatusBadRequest, fmt.Sprintf("workers must be 1 to %d, or left out for the size the service started with", MaxWorkers))
		return
	}
	s := a.Settings.Load()
	s.Mode, s.Mechanisms = ch.Mode, ch.Mode.Mechanisms().Apply(ch.Mechanisms)
	s.Workers = a.workers
	if ch.Workers > 0 {
		s.Workers = ch.Workers
	}
	a.Settings.Switch(s)
	a.Log.Info("mode switched", "mode", s.Mode, "mechanisms", s.Mechanisms, "workers", s.Workers)

	local := a.view()
	if len(a.Peers) == 0 || r.URL.Query().Get("scope") == "self" {
		writeJSON(w, http.StatusOK, local)
		return
	}
	// The gateway switches the whole shop: every peer, each result
	// reported. The caller's token, which let the switch through here, is
	// what lets it through on every peer.
	results := []PeerResult{{Service: a.Service, OK: true, Settings: &local}}
	token := bearerToken(r)
	status := http.StatusOK
	for _, p := range a.Peers {
		res := PeerResult{Service: p.Name}
		c := Client{URL: p.URL, Token: token, HTTP: a.Client}
		if v, err := c.SwitchSelf(r.Context(), ch); err != nil {
			res.Error, status = err.Error(), http.StatusBadGateway
		} else {
			res.OK, res.Settings = true, &v
		}
		results = append(results, res)
	}
	writeJSON(w, status, struct {
		Services []PeerResult `json:"services"`
	}{results})
}

// getPeers lists the services a mode switch here fans out to, so a load
// generator given the gateway's admin URL can find the rest.
func (a *api) getPeers(w http.ResponseWriter, r *http.Request) {
	peers := a.Peers
	if peers == nil {
		peers = []Peer{}
	}
	writeJSON(w, http.StatusOK, struct {
		Service string `json:"service"`
		Peers   []Peer `json:"peers"`
	}{a.Service, peers})
}

// FaultsView is the faults in force.
type FaultsView struct {
	Service string     `json:"service"`
	Faults  faults.Set `json:"faults"`
}

func (a *api) getFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, FaultsView{Service: a.Service, Faults: a.Faults.Set()})
}

func (a *api) putFaults(w http.ResponseWriter, r *http.Request) {
	// Each method's spec is read on its own, so that a refusal names the
	// method it is about.
	var raw map[string]json.RawMessage
	if !decode(w, r, &raw) {
		return
	}
	set := faults.Set{}
	for _, m := range slices.Sorted(maps.Keys(raw)) {
		if err := a.validMethod(m); err != nil {
			problem.Write(w, r, http.StatusBadRequest, err.Error())
			return
		}
		var spec faults.Spec
		if err := json.Unmarshal(raw[m], &spec); err != nil {
			problem.Write(w, r, http.StatusBadRequest, m+": "+err.Error())
			return
		}
		set[m] = spec
	}
	a.Faults.Replace(set)
	a.Log.Info("faults replaced", "faults", set.String())
	a.getFaults(w, r)
}

func (a *api) putMethodFault(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	if err := a.validMethod(method); err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	var spec faults.Spec
	if !decode(w, r, &spec) {
		return
	}
	set := a.Faults.Set()
	if set == nil {
		set = faults.Set{}
	}
	set[method] = spec
	a.Faults.Replace(set)
	a.Log.Info("fault set", "method", method, "spec", spec.String())
	a.getFaults(w, r)
}

func (a *api) clearFaults(w http.ResponseWriter, r *http.Request) {
	set := faults.Set{}
	if method := r.PathValue("method"); method != "" {
		if err := a.validMethod(method); err != nil {
			problem.Write(w, r, http.StatusBadRequest, err.Error())
			return
		}
		set = a.Faults.Set()
		delete(set, method)
	}
	a.Faults.Replace(set)
	a.Log.Info("faults cleared", "method", r.PathValue("method"))
	a.getFaults(w, r)
}

// validMethod refuses a method this service does not simulate, naming the
// ones it does. The shape is checked first, so that the refusal never
// echoes more than 64 letters and digits of the client's.
func (a *api) validMethod(m string) error {
	if m == faults.AllMethods {
		return nil
	}
	if m == "" || len(m) > 64 {
		return errors.New("method must be 1 to 64 characters")
	}
	for _, c := range m {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("method %q: letters and digits only, or *", m)
		}
	}
	return faults.CheckMethod(a.Service, m)
}

// decode reads a JSON body strictly (see internal/jsonbody): JSON content
// type, at most maxBody bytes, no unknown fields, one value. It answers
// the request itself and returns false when the body is refused.
func decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	if status, err := jsonbody.Decode(w, r, maxBody, dst); err != nil {
		problem.Write(w, r, status, err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
