package deadline

import (
	"context"
	"time"
)

type clientDeadlineKey struct{}

// WithClientDeadline records the client's own deadline in ctx. Unlike the
// context's deadline it cancels nothing: it is a passive clock that lets a
// hop tell whether anybody is still waiting for its work.
func WithClientDeadline(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, clientDeadlineKey{}, t)
}

// ClientDeadline returns the client's deadline recorded in ctx.
func ClientDeadline(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(clientDeadlineKey{}).(time.Time)
	return t, ok
}

// lateBy reports how long after the client's deadline now is.
func lateBy(ctx context.Context, now time.Time) (time.Duration, bool) {
	cd, ok := ClientDeadline(ctx)
	if !ok || !now.After(cd) {
		return 0, false
	}
	return now.Sub(cd), true
}
