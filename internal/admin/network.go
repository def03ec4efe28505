package admin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/internal/problem"
)

// The wire's admin API: the network faults of a shop's fault proxies
// (internal/netfault), served on an admin listener of their own.
//
//	GET    /admin/network          every link and its faults
//	PUT    /admin/network/{link}   replace the link's faults; the body is a spec, "latency=200ms,jitter=50ms"
//	DELETE /admin/network/{link}   clear the link's faults
//	DELETE /admin/network          clear every link
//
// Changes need the admin token, when one is set, like every admin API.

// NetworkOptions configure NetworkHandler.
type NetworkOptions struct {
	Network *netfault.Network
	// Token, when set, is required as a bearer token for every change.
	Token string
	Log   *slog.Logger
}

// NetworkView is the links as the wire's admin API shows them.
type NetworkView struct {
	Links []netfault.LinkView `json:"links"`
}

// maxSpecBody bounds a PUT's spec.
const maxSpecBody = 4 << 10

// NetworkHandler returns the wire's admin API, with /metrics.
func NetworkHandler(o NetworkOptions) http.Handler {
	w := &wire{o}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/network", w.list)
	mux.HandleFunc("PUT /admin/network/{link}", RequireToken(o.Token, w.set))
	mux.HandleFunc("DELETE /admin/network/{link}", RequireToken(o.Token, w.clear))
	mux.HandleFunc("DELETE /admin/network", RequireToken(o.Token, w.clear))
	mux.Handle("GET /metrics", o.Network.Metrics())
	mux.Handle("/", Fallback(mux, "no such admin route"))
	return mux
}

type wire struct{ NetworkOptions }

func (h *wire) list(w http.ResponseWriter, r *http.Request) {
	links := h.Network.List()
	if links == nil {
		links = []netfault.LinkView{}
	}
	writeJSON(w, http.StatusOK, NetworkView{links})
}

func (h *wire) set(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("link")
	if _, err := h.Network.Link(name); err != nil {
		problem.Write(w, r, http.StatusNotFound, err.Error())
		return
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSpecBody))
	if err != nil {
		problem.Write(w, r, http.StatusRequestEntityTooLarge, "the spec is longer than 4 KiB")
		return
	}
	text := strings.TrimSpace(string(b))
	if text == "" {
		problem.Write(w, r, http.StatusBadRequest, `spec: the body is empty: send a spec such as "latency=200ms" or "stall" (DELETE clears the link)`)
		return
	}
	spec, err := netfault.Parse(text)
	if err != nil {
		problem.Write(w, r, http.StatusBadRequest, "spec: "+err.Error())
		return
	}
	if err := h.Network.Set(name, spec); err != nil {
		problem.Write(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	h.Log.Info("network fault set", "link", name, "spec", spec.String())
	h.list(w, r)
}

func (h *wire) clear(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("link")
	if err := h.Network.Clear(name); errors.Is(err, netfault.ErrUnknownLink) {
		problem.Write(w, r, http.StatusNotFound, err.Error())
		return
	} else if err != nil {
		problem.Write(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	h.Log.Info("network faults cleared", "link", name)
	h.list(w, r)
}

// Network reads the wire's links and their faults (GET /admin/network).
func (c Client) Network(ctx context.Context) (NetworkView, error) {
	var v NetworkView
	err := c.call(ctx, http.MethodGet, "/admin/network", nil, &v)
	return v, err
}

// SetNetwork replaces link's faults with spec (PUT /admin/network/{link}).
func (c Client) SetNetwork(ctx context.Context, link string, spec netfault.Spec) (NetworkView, error) {
	var v NetworkView
	err := c.call(ctx, http.MethodPut, "/admin/network/"+url.PathEscape(link), textBody(spec.String()), &v)
	return v, err
}

// ClearNetwork clears link's faults, or every link's when link is ""
// (DELETE /admin/network[/{link}]).
func (c Client) ClearNetwork(ctx context.Context, link string) (NetworkView, error) {
	path := "/admin/network"
	if link != "" {
		path += "/" + url.PathEscape(link)
	}
	var v NetworkView
	err := c.call(ctx, http.MethodDelete, path, nil, &v)
	return v, err
}
