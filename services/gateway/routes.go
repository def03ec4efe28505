package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// routes lists every public route. Admin routes live on the admin port.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.recoverPanics)
	r.Use(deadline.Edge(deadline.EdgeOptions{
		Default: s.cfg.Budget,
		Max:     s.cfg.MaxBudget,
		Stamp:   func() bool { return s.settings.Load().Mechanisms.EdgeDeadline },
		Reject: func(w http.ResponseWriter, r *http.Request, err error) {
			problem.Write(w, r, http.StatusBadRequest, err.Error())
		},
	}))
	r.Use(s.serverTiming)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, http.StatusNotFound, "no such route")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
	})

	r.Get("/api/products", s.listProducts)
	r.Get("/api/products/{sku}", s.getProduct)
	r.Post("/api/checkout", s.checkout)
	r.Get("/api/orders/{id}", s.getOrder)
	return r
}
