// Package serve runs Mercado's servers: a gRPC or HTTP serving listener
// plus an admin HTTP listener (/healthz, /readyz) on its own port, both
// stopped gracefully when the context ends: readiness turns false, new work
// is refused, work in flight drains for up to a drain timeout, and whatever
// is still running after it is cut off.
package serve
