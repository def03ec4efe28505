package resilience

import (
	"context"
	"log/slog"
	"math"
	"time"

	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// budgetLog writes, at debug level, the lesson's "each hop logs a
// monotonically decreasing remaining_ms": one line when a request arrives
// at a hop, one before and one after each attempt of each call it makes,
// each with the request's trace id and what was left of its budget.
// Within a hop the figure only falls; along the chain each callee arrives
// with less than its caller had left before the call (the caller's margin
// and the way there). A request with no budget (naive) logs budget=false
// and no remaining_ms. Nil, or a logger above debug, writes nothing.
type budgetLog struct{ log *slog.Logger }

// Events of the budget lines.
const (
	budgetArrival = "arrival"
	budgetCall    = "call"
	budgetReturn  = "return"
)

func (b budgetLog) enabled(ctx context.Context) bool {
	return b.log != nil && b.log.Enabled(ctx, slog.LevelDebug)
}

// arrival logs a request's budget as it reaches a server or the edge.
func (b budgetLog) arrival(ctx context.Context, a deadline.ArrivalInfo) {
	if !b.enabled(ctx) {
		return
	}
	attrs := []slog.Attr{slog.String("event", budgetArrival), slog.String("method", a.Method)}
	b.write(ctx, a.Remaining, a.HasBudget, attrs)
}

// call logs the budget left before an attempt of a call to dependency.
func (b budgetLog) call(ctx context.Context, dependency, method string, attempt int) {
	if !b.enabled(ctx) {
		return
	}
	left, ok := deadline.Remaining(ctx)
	b.write(ctx, left, ok, []slog.Attr{slog.String("event", budgetCall), slog.String("to", dependency),
		slog.String("method", method), slog.Int("attempt", attempt)})
}

// ret logs the budget left after the attempt, with its gRPC code.
func (b budgetLog) ret(ctx context.Context, dependency, method string, attempt int, err error) {
	if !b.enabled(ctx) {
		return
	}
	left, ok := deadline.Remaining(ctx)
	b.write(ctx, left, ok, []slog.Attr{slog.String("event", budgetReturn), slog.String("to", dependency),
		slog.String("method", method), slog.Int("attempt", attempt), slog.String("code", status.Code(err).String())})
}

func (b budgetLog) write(ctx context.Context, left time.Duration, hasBudget bool, attrs []slog.Attr) {
	attrs = append(attrs, slog.String("trace_id", telemetry.TraceID(ctx)), slog.Bool("budget", hasBudget))
	if hasBudget {
		attrs = append(attrs, slog.Float64("remaining_ms", millis(left)))
	}
	b.log.LogAttrs(ctx, slog.LevelDebug, "budget", attrs...)
}

// millis is d in milliseconds to a tenth, negative once the budget is
// spent.
func millis(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*10) / 10
}
