// Package resilience wires Mercado's mechanisms around every call and
// every request, switching them by the mode in force:
//
//   - outbound.go: the client side of one dependency. Each call goes
//     through retries (naive: 3 blind attempts; budgeted: within the
//     budget and a retry budget), a pool (naive: one shared pool;
//     budgeted: the dependency's own bulkhead), a circuit breaker, and
//     pkg/deadline's clip-to-budget, in that order.
//   - inbound.go: the server side. Each request waits for a worker in a
//     pool (naive: one shared pool with an unbounded queue; budgeted:
//     bounded waits, and the budget checked again after the wait).
//
// The mechanisms themselves live in the subpackages bulkhead, breaker and
// retry; pkg/deadline holds the budget.
package resilience
