package mode

import "context"

// One reading of the mode per request. A request's server takes a snapshot
// of the settings in force as the request arrives (resilience.ServerChain,
// resilience.EdgeChain) and carries it in the request's context; every
// mechanism the request meets after that — admission, its pool, the
// timeout, retries, bulkhead and breaker of each call it makes, the
// outbox and the idempotency claim — reads that snapshot. A switch while
// the request runs changes the next request, never half of this one.

// requestKey is the context key of a request's settings.
type requestKey struct{}

// WithSettings returns a copy of ctx carrying s as the settings its
// request runs under.
func WithSettings(ctx context.Context, s Settings) context.Context {
	return context.WithValue(ctx, requestKey{}, &s)
}

// From returns the settings ctx's request runs under, and false when ctx
// carries none: it belongs to no request.
func From(ctx context.Context) (Settings, bool) {
	if s, ok := ctx.Value(requestKey{}).(*Settings); ok {
		return *s, true
	}
	return Settings{}, false
}

// Snapshot returns ctx carrying the settings its request runs under, and
// those settings. A context that already carries a snapshot keeps it: a
// request is in one mode from start to end. Otherwise the settings in
// force now are read, once, and carried from here on; a background worker
// calls Snapshot for every unit of work, which is its "request".
func (l *Live) Snapshot(ctx context.Context) (context.Context, Settings) {
	if s, ok := From(ctx); ok {
		return ctx, s
	}
	p := l.p.Load()
	return context.WithValue(ctx, requestKey{}, p), *p
}

// For returns the settings of ctx's request: its snapshot, or, for work
// that belongs to no request and took none, the settings in force now.
func (l *Live) For(ctx context.Context) Settings {
	if s, ok := From(ctx); ok {
		return s
	}
	return l.Load()
}
