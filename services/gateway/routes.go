package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// routes lists every public route. Admin routes live on the admin port.
func (s *server) routes() http.Handler {
	edge := resilience.EdgeChain(resilience.EdgeOptions{
		ServerOptions: resilience.ServerOptions{
			Service: "gateway", Settings: s.settings, Metrics: s.kit.Metrics, Tracing: s.kit.Tracing, Log: s.kit.Log,
			Workers: s.cfg.Resilience.Workers, MaxWait: s.cfg.Resilience.MaxWait,
		},
		Routes:        []string{routeCheckout, routeBrowse, routeStatus, routeExport},
		RouteBulkhead: s.cfg.Resilience.Bulkhead,
		Budget: deadline.EdgeOptions{Default: s.cfg.Budget, Max: s.cfg.MaxBudget, Budgets: s.cfg.Budgets(),
			Reject: rejectDeadline},
	})
	r := chi.NewRouter()
	r.Use(s.recoverPanics)
	// Before the edge chain, so that the request's span is there to carry
	// the budget it arrived with.
	r.Use(s.kit.Tracing.HTTPMiddleware(routePattern))
	// The mode's snapshot, detach (naive), the budget: see EdgeChain.
	r.Use(edge.Request...)
	r.Use(s.serverTiming)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, http.StatusNotFound, "no such route")
	})
	r.MethodNotAllowed(methodNotAllowed)

	// Once routed, a request's answer is reported (answers.go), then it
	// waits for a worker of its route group (see EdgeChain).
	group := func(name string) chi.Router { return r.With(s.answers.route(name), edge.Route(name)) }
	group(routeBrowse).Get("/api/products", s.listProducts)
	group(routeBrowse).Get("/api/products/{sku}", s.getProduct)
	group(routeCheckout).Post("/api/checkout", s.checkout)
	group(routeStatus).Get("/api/orders/{id}", s.getOrder)
	group(routeExport).Get("/api/catalog/export", s.exportCatalog)
	return r
}

// routePattern is the route chi matched ("/api/orders/{id}"), known once
// the request has been routed: what names the request's span.
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	return ""
}
