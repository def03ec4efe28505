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
	r.Use(s.detachUnlessHonoured)
	r.Use(deadline.Edge(deadline.EdgeOptions{
		Default: s.cfg.Budget,
		Max:     s.cfg.MaxBudget,
		Stamp:   func() bool { return s.settings.Load().Mechanisms.EdgeDeadline },
		Reject: func(w http.ResponseWriter, r *http.Request, err error) {
			problem.Write(w, r, http.StatusBadRequest, err.Error())
		},
		Hooks: s.kit.DeadlineHooks(),
	}))
	r.Use(s.serverTiming)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, http.StatusNotFound, "no such route")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
	})

	pool := s.kit.Inbound.Middleware
	r.With(pool(classBrowse)).Get("/api/products", s.listProducts)
	r.With(pool(classBrowse)).Get("/api/products/{sku}", s.getProduct)
	r.With(pool(classCheckout)).Post("/api/checkout", s.checkout)
	r.With(pool(classStatus)).Get("/api/orders/{id}", s.getOrder)
	return r
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
