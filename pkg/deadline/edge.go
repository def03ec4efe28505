package deadline

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Defaults of [EdgeOptions].
const (
	DefaultBudget    = 1200 * time.Millisecond
	DefaultMaxBudget = 10 * time.Second
)

// EdgeMethod is the Method of the arrivals and late completions the edge
// reports to its hooks.
const EdgeMethod = "http"

// EdgeOptions configure [Edge]. The zero value is usable.
type EdgeOptions struct {
	// Default is the budget of a request that sent no X-Deadline-Ms
	// (DefaultBudget when zero).
	Default time.Duration
	// Max caps what a client may ask for (DefaultMaxBudget when zero).
	// Default and Max are the interactive class's budget.
	Max time.Duration
	// Budgets are the other classes' budgets (Interactive is ignored:
	// Default and Max are its); an unset figure is DefaultBudgets'.
	Budgets Budgets
	// Classes reports whether to honour the class a request asks for in
	// X-Request-Class. When it returns false every request is interactive
	// (one class, one budget), though a class that names none is still
	// refused. Nil means always honour it.
	Classes func(ctx context.Context) bool
	// Stamp reports whether to put the budget on the context (ctx) of the
	// request. When it returns false the client's deadline is still parsed
	// and recorded as the passive client deadline, but nothing is cut
	// short: the naive system. Nil means always stamp.
	Stamp func(ctx context.Context) bool
	// Reject writes the answer to a request with a bad header: err wraps
	// ErrBadHeader (X-Deadline-Ms) or ErrBadClass (X-Request-Class). Nil
	// writes a 400 application/problem+json.
	Reject func(w http.ResponseWriter, r *http.Request, err error)
	// Hooks observe arrivals (Method EdgeMethod) and late completions.
	Hooks Hooks
}

// Budget returns the budget for an interactive request whose
// X-Deadline-Ms value is header ("" when absent): the default when absent,
// the value capped at the maximum otherwise. A malformed value is an error
// wrapping ErrBadHeader.
func (o EdgeOptions) Budget(header string) (time.Duration, error) {
	return o.ClassBudget(Interactive, header)
}

// budgets returns the budgets of every class, the interactive one being
// Default and Max.
func (o EdgeOptions) budgets() Budgets {
	b := o.Budgets
	b.Interactive = ClassBudget{Default: o.Default, Max: o.Max}
	return b
}

// ClassBudget returns the budget of a request of class c whose
// X-Deadline-Ms value is header ("" when absent): the class's default when
// absent, the value capped at the class's maximum otherwise.
func (o EdgeOptions) ClassBudget(c Class, header string) (time.Duration, error) {
	cb := o.budgets().For(c)
	def, max := cb.Default, cb.Max
	if header == "" {
		return min(def, max), nil
	}
	d, err := ParseMillis(header)
	if err != nil {
		return 0, err
	}
	return min(d, max), nil
}

// Edge returns HTTP middleware, usable with chi or plain net/http, that
// reads each request's class (X-Request-Class, interactive when absent)
// and sets its budget: now + min(client X-Deadline-Ms, the class's max),
// or the class's default budget when the header is absent. The request's
// context then carries its class ([ClassOf]), the deadline (unless Stamp
// says otherwise) and the passive client deadline.
func Edge(o EdgeOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			class, err := ParseClass(r.Header.Get(HeaderClass))
			if err == nil && o.Classes != nil && !o.Classes(r.Context()) {
				class = Interactive
			}
			var budget time.Duration
			if err == nil {
				budget, err = o.ClassBudget(class, r.Header.Get(HeaderDeadline))
			}
			if err != nil {
				if o.Reject != nil {
					o.Reject(w, r, err)
				} else {
					writeProblem(w, err)
				}
				return
			}
			start := time.Now()
			if o.Hooks.OnArrival != nil {
				o.Hooks.OnArrival(r.Context(), ArrivalInfo{Method: EdgeMethod, Class: class, HasBudget: true, Remaining: budget})
			}
			ctx := WithClass(r.Context(), class)
			ctx = WithClientDeadline(ctx, start.Add(budget))
			if o.Stamp == nil || o.Stamp(r.Context()) {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadlineCause(ctx, start.Add(budget), ErrBudgetExhausted)
				defer cancel()
			}
			next.ServeHTTP(w, r.WithContext(ctx))
			if late, ok := lateBy(ctx, time.Now()); ok && o.Hooks.OnLate != nil {
				o.Hooks.OnLate(ctx, LateInfo{Method: EdgeMethod, Late: late})
			}
		})
	}
}

func writeProblem(w http.ResponseWriter, err error) {
	detail := "invalid " + HeaderDeadline + " header"
	if errors.Is(err, ErrBadHeader) || errors.Is(err, ErrBadClass) {
		detail = err.Error()
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":   "about:blank",
		"title":  http.StatusText(http.StatusBadRequest),
		"status": http.StatusBadRequest,
		"detail": detail,
	})
}
