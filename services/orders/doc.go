// Package orders is Mercado's orders service. PlaceOrder runs lesson 7's
// checkout chain: catalog reserves the stock while payments screens the
// order for fraud (at once in budgeted mode, one after the other in naive:
// fanout.go), then payments charges and shipping books the shipment
// (service.go). Beside the chain, shipping's delivery estimate is optional
// (optional.go); after it, the audit event is fire-forward (audit.go);
// graph.go says what each dependency's failure does.
//
// Each outbound call goes through its dependency's client chain, built in
// outbound.go with the dependency's own cap (catalog 300 ms, fraud screen
// 300 ms, payments 800 ms, shipping 300 ms, estimate 150 ms by default).
// In budgeted mode the call gets min(cap, remaining − margin) and is
// skipped below the floor; in naive mode it gets its cap, blind to the
// clock. A checkout's Idempotency-Key is claimed before the chain runs, so
// that a retry replays the answer instead of charging again
// (idempotency.go), and the reconciler settles what a fault left
// unfinished (reconcile.go).
package orders
