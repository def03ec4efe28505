package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/loadtest"
)

// State is what the console's controls show: every service's mode and
// faults, the wire's links, the traffic and the scenario run.
type State struct {
	Services []ServiceState `json:"services"`
	// Network is the wire's links; nil when the shop has no fault proxies.
	Network []netfault.LinkView `json:"network"`
	// NetworkError says why the wire did not answer, when it has one.
	NetworkError string `json:"network_error,omitempty"`
	Traffic      Rates  `json:"traffic"`
	// Run is the scenario run in progress or the last one; nil before any.
	Run *RunState `json:"run"`
	// Modes and Scenarios are what the controls offer.
	Modes     []mode.Mode `json:"modes"`
	Scenarios []string    `json:"scenarios"`
	Presets   []Preset    `json:"presets"`
	// Preset is the lesson preset last applied ("" before any): the
	// shop may have been changed by hand since.
	Preset string `json:"preset,omitempty"`
	// TokenRequired tells the page that changes need the admin token.
	TokenRequired bool `json:"token_required"`
}

// ServiceState is one service as its admin API shows it.
type ServiceState struct {
	Name string `json:"name"`
	// Mode is nil when the service did not answer; Error says why.
	Mode   *admin.ModeView `json:"mode"`
	Faults faults.Set      `json:"faults"`
	// Methods are the methods whose work the service simulates: where a
	// fault can go.
	Methods []string `json:"methods"`
	Error   string   `json:"error,omitempty"`
}

// services are the shop's services the console knows, edge first.
func (c *Console) services() []string {
	var out []string
	for _, name := range faults.Services() {
		if _, ok := c.admin[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// state reads every service's mode and faults, and the wire's links, at
// once.
func (c *Console) state(ctx context.Context) State {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	names := c.services()
	st := State{Services: make([]ServiceState, len(names)), Modes: mode.Modes(), Scenarios: loadtest.Builtin(),
		Traffic: c.traffic.rates(), Run: c.runs.current(), TokenRequired: c.o.Token != "", Presets: Presets}
	c.mu.Lock()
	st.Preset = c.preset
	c.mu.Unlock()
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			s := ServiceState{Name: name, Methods: faults.Methods(name), Faults: faults.Set{}}
			m, err := c.admin[name].Mode(ctx)
			if err == nil {
				s.Mode = &m
				var f admin.FaultsView
				if f, err = c.admin[name].Faults(ctx); err == nil && f.Faults != nil {
					s.Faults = f.Faults
				}
			}
			if err != nil {
				s.Error = err.Error()
			}
			st.Services[i] = s
		})
	}
	if c.network != nil {
		wg.Go(func() {
			v, err := c.network.Network(ctx)
			if err != nil {
				st.NetworkError = err.Error()
			}
			st.Network = v.Links
			if st.Network == nil {
				st.Network = []netfault.LinkView{}
			}
		})
	}
	wg.Wait()
	return st
}

func (c *Console) getState(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, c.state(r.Context()))
}

// putMode switches the whole shop through the gateway's admin API, which
// passes the switch on to every service.
func (c *Console) putMode(w http.ResponseWriter, r *http.Request) {
	var ch admin.ModeChange
	if !decode(w, r, &ch) {
		return
	}
	if _, err := mode.Parse(string(ch.Mode)); err != nil {
		problem.Write(w, r, http.StatusBadRequest, "mode must be "+mode.Names())
		return
	}
	// The mode buttons change the mechanisms only: the pools keep the
	// size in force, which a lesson preset may have set.
	gw := c.admin[sim.ServiceGateway]
	if ch.Workers == 0 {
		v, err := gw.Mode(r.Context())
		if err != nil {
			upstreamError(w, r, err)
			return
		}
		ch.Workers = v.Workers
	}
	results, err := gw.Switch(r.Context(), ch)
	if err != nil {
		upstreamError(w, r, err)
		return
	}
	c.o.Log.Info("mode switched from the console", "mode", ch.Mode, "workers", ch.Workers)
	writeJSON(w, http.StatusOK, struct {
		Services []admin.PeerResult `json:"services"`
	}{results})
}

// service is the admin client of the service the request names, or false
// once it has answered 404.
func (c *Console) service(w http.ResponseWriter, r *http.Request) (admin.Client, bool) {
	name := r.PathValue("service")
	cl, ok := c.admin[name]
	if !ok {
		problem.Write(w, r, http.StatusNotFound, "service must be one of "+strings.Join(c.services(), ", "))
	}
	return cl, ok
}

func (c *Console) putFault(w http.ResponseWriter, r *http.Request) {
	cl, ok := c.service(w, r)
	if !ok {
		return
	}
	var spec faults.Spec
	if !decode(w, r, &spec) {
		return
	}
	v, err := cl.SetFault(r.Context(), r.PathValue("method"), spec)
	if err != nil {
		upstreamError(w, r, err)
		return
	}
	c.o.Log.Info("fault set from the console", "fault_service", v.Service, "method", r.PathValue("method"), "spec", spec.String())
	writeJSON(w, http.StatusOK, v)
}

// clearFaults clears one service's faults, or every service's.
func (c *Console) clearFaults(w http.ResponseWriter, r *http.Request) {
	names := c.services()
	if r.PathValue("service") != "" {
		if _, ok := c.service(w, r); !ok {
			return
		}
		names = []string{r.PathValue("service")}
	}
	for _, name := range names {
		if _, err := c.admin[name].ClearFaults(r.Context(), ""); err != nil {
			upstreamError(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// NetworkChange is the body of PUT /console/api/network/{link}: a spec in
// internal/netfault's grammar ("latency=150ms", "stall").
type NetworkChange struct {
	Spec string `json:"spec"`
}

// errNoProxies is a network fault asked of a shop without fault proxies.
var errNoProxies = errors.New("this shop has no fault proxies between its services (serve it with --network-proxy)")

// wire is the wire's admin client, or false once it has answered 409 for
// a shop without fault proxies.
func (c *Console) wire(w http.ResponseWriter, r *http.Request) (*admin.Client, bool) {
	if c.network == nil {
		problem.Write(w, r, http.StatusConflict, errNoProxies.Error())
		return nil, false
	}
	if link := r.PathValue("link"); link != "" {
		if err := netfault.CheckLink(link); err != nil {
			problem.Write(w, r, http.StatusNotFound, err.Error())
			return nil, false
		}
	}
	return c.network, true
}

func (c *Console) putNetwork(w http.ResponseWriter, r *http.Request) {
	cl, ok := c.wire(w, r)
	if !ok {
		return
	}
	var ch NetworkChange
	if !decode(w, r, &ch) {
		return
	}
	spec, err := netfault.Parse(ch.Spec)
	if err != nil || len(spec) == 0 {
		detail := `spec: empty: send a spec such as "latency=150ms" or "stall" (DELETE clears the link)`
		if err != nil {
			detail = "spec: " + err.Error()
		}
		problem.Write(w, r, http.StatusBadRequest, detail)
		return
	}
	v, err := cl.SetNetwork(r.Context(), r.PathValue("link"), spec)
	if err != nil {
		upstreamError(w, r, err)
		return
	}
	c.o.Log.Info("network fault set from the console", "link", r.PathValue("link"), "spec", spec.String())
	writeJSON(w, http.StatusOK, v)
}

func (c *Console) clearNetwork(w http.ResponseWriter, r *http.Request) {
	cl, ok := c.wire(w, r)
	if !ok {
		return
	}
	v, err := cl.ClearNetwork(r.Context(), r.PathValue("link"))
	if err != nil {
		upstreamError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
