// Package console is Mercado's live console: one page, served by the
// binary with every asset embedded (no CDN, works offline), that shows a
// running shop as it works and drives it.
//
//	GET    /console/                       the page
//	GET    /console/events                 server-sent events: "tick" about once
//	                                       a second, "checkout" per traced checkout
//	GET    /console/api/state              what the page shows, once
//	PUT    /console/api/mode               {"mode":..., "mechanisms":{...}}: the whole shop
//	PUT    /console/api/faults/{svc}/{m}   a faults.Spec on one method of a service
//	DELETE /console/api/faults[/{svc}]     clear every service's faults, or one's
//	PUT    /console/api/network/{link}     {"spec": "latency=150ms"} on one link of the wire
//	DELETE /console/api/network[/{link}]   clear the wire's faults
//	PUT    /console/api/traffic            {"checkout": 20, "browse": 10, "export": 0, "deadline_ms": 1000}
//	DELETE /console/api/traffic            stop the traffic
//	POST   /console/api/checkout           one traced checkout, answered with its hops
//	POST   /console/api/scenario           {"name": "drill76", "quick": true}
//	DELETE /console/api/scenario           stop the run
//	GET    /console/runs/{n}/report.html   a finished run's report
//
// Every change needs the admin token as "Authorization: Bearer <token>"
// when the shop has one; the page has a field for it. The console acts
// on the shop only through the services' admin APIs and the public API,
// as any client does: the gateway serves it on its admin listener, so
// `mercado lab console`, `mercado serve all`, docker compose and
// Kubernetes all have it, on loopback. Living in the gateway's process,
// it also hears of every request the gateway answers (gateway.Answers):
// while it sends no traffic itself, its charts show those, so that a
// load sent from another terminal is seen too.
package console
