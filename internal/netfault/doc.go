// Package netfault puts a fault proxy on every connection between two of
// Mercado's services, so that what a real network does to a call can
// happen between them: latency and jitter, a thin pipe, a connection that
// stops carrying data while its socket stays open, a reset, a port that
// refuses. The proxies are Toxiproxy's (github.com/Shopify/toxiproxy/v2),
// used as a library; this package names the links, reads the one fault
// grammar (Parse) and sets, clears and lists each link's faults (Network).
//
// These are network faults, apart from the simulated work of
// internal/faults: that models a slow vendor behind a service that
// answers; this models the wire between the services, which the
// services' own code never sees.
package netfault
