// Package gateway is Mercado's HTTP edge. It sets each request's budget
// (pkg/deadline's Edge middleware: now + min(client X-Deadline-Ms, max), or
// the default budget), answers every error as application/problem+json,
// and calls orders (checkout, order status) and catalog (browse) over gRPC.
// Every response carries Server-Timing with each downstream hop's
// measured duration, effective timeout and outcome.
//
// routes.go lists every route; errors.go is the one table from gRPC codes
// to HTTP statuses.
package gateway
