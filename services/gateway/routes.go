package gateway

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// routes lists every public route. Admin routes live on the admin port.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.recoverPanics)
	// Before the edge, so that the request's span is there to carry the
	// budget it arrived with.
	r.Use(s.kit.Tracing.HTTPMiddleware(routePattern))
	r.Use(s.detachUnlessHonoured)
	r.Use(deadline.Edge(deadline.EdgeOptions{
		Default: s.cfg.Budget,
		Max:     s.cfg.MaxBudget,
		Stamp:   func() bool { return s.settings.Load().Mechanisms.EdgeDeadline },
		Reject:  rejectDeadline,
		Hooks:   s.kit.DeadlineHooks(),
	}))
	r.Use(s.serverTiming)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, http.StatusNotFound, "no such route")
	})
	r.MethodNotAllowed(methodNotAllowed)

	pool := s.kit.Inbound.Middleware
	r.With(pool(classBrowse)).Get("/api/products", s.listProducts)
	r.With(pool(classBrowse)).Get("/api/products/{sku}", s.getProduct)
	r.With(pool(classCheckout)).Post("/api/checkout", s.checkout)
	r.With(pool(classStatus)).Get("/api/orders/{id}", s.getOrder)
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

// detachUnlessHonoured models a gateway that does not notice its client
// leaving: with HonourCancel off, the request's work goes on after the
// client has hung up.
func (s *server) detachUnlessHonoured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.settings.Load().Mechanisms.HonourCancel {
			r = r.WithContext(context.WithoutCancel(r.Context()))
		}
		next.ServeHTTP(w, r)
	})
}
