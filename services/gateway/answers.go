package gateway

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Answer is one public request the gateway answered, as the gateway saw
// it.
type Answer struct {
	// Route is the request's route group: checkout, browse, status or
	// export.
	Route string
	// At is when the request reached its route; Took is how long the
	// gateway then took to answer it, its wait for a worker included.
	At   time.Time
	Took time.Duration
	// Status is the HTTP status the gateway answered with.
	Status int
	// Deadline is how long the client said it would wait: its
	// X-Deadline-Ms, or its class's default budget when it sent none.
	Deadline time.Duration
}

// Answers tells an observer of every public request the gateway answers
// on a route. The live console, which lives in the gateway's process, is
// its observer: so it can chart traffic it did not send itself (a load
// run from another terminal, curl) from the gateway's side. The observer
// runs on the request's goroutine once the answer is done, so it must
// return at once.
type Answers struct {
	observer atomic.Pointer[func(Answer)]
	budgets  deadline.Budgets
}

// newAnswers returns the gateway's Answers, with budgets the defaults of
// a request that sends no X-Deadline-Ms.
func newAnswers(budgets deadline.Budgets) *Answers { return &Answers{budgets: budgets} }

// Observe makes f the observer of every answer from now on, in place of
// any other.
func (a *Answers) Observe(f func(Answer)) { a.observer.Store(&f) }

// route is the middleware that reports the answers of a route group's
// requests. It runs once the request is routed, after the edge has read
// its class: a request refused before routing (a malformed header) is not
// reported.
func (a *Answers) route(group string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f := a.observer.Load()
			if f == nil {
				next.ServeHTTP(w, r)
				return
			}
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			(*f)(Answer{Route: group, At: start, Took: time.Since(start), Status: sw.status(), Deadline: a.deadlineOf(r)})
		})
	}
}

// deadlineOf is how long r's client said it would wait. The edge has
// already refused a malformed X-Deadline-Ms, and put the request's class
// (as the mode honours it) on its context.
func (a *Answers) deadlineOf(r *http.Request) time.Duration {
	if d, err := deadline.ParseMillis(r.Header.Get(deadline.HeaderDeadline)); err == nil {
		return d
	}
	return a.budgets.For(deadline.ClassOf(r.Context())).Default
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 && code >= http.StatusOK {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// status is the status answered: 200 when the handler wrote nothing, as
// net/http then sends.
func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
