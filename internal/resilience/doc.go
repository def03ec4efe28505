// Package resilience wires Mercado's mechanisms around every request and
// every call, switching them by the mode the request runs in.
//
// chains.go says in which order they run, one function per chain:
//
//   - ServerChain, every request of a gRPC service: the mode's snapshot,
//     admission, detach (naive), a worker from the pool and the budget
//     checked again after the wait.
//   - EdgeChain, every public HTTP request at the gateway: the mode's
//     snapshot, detach (naive), the edge's budget, and the route group's
//     pool.
//   - ClientChain, every call to one dependency: retries, a pool slot
//     (naive: one shared pool; budgeted: the dependency's own bulkhead),
//     the circuit breaker, and pkg/deadline's clip to the budget.
//
// inbound.go holds the server side's pools, outbound.go one dependency's
// bulkhead, breaker and retry budget. The mechanisms themselves live in
// pkg/: pkg/deadline holds the budget, pkg/resilience/bulkhead,
// pkg/resilience/breaker and pkg/resilience/retry the rest.
package resilience
