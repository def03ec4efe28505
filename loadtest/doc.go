// Package loadtest is Mercado's open-loop load generator. Requests are
// sent on a fixed schedule whatever the shop does (vegeta's constant pacer
// with as many workers as the schedule needs), so an overloaded shop cannot
// slow the generator down and hide its own overload: latency is measured
// from each request's intended send time, not from when it happened to be
// sent (no coordinated omission).
//
// Traffic is a mix of classes (checkout, browse, order status), each with
// its own rate and the client's deadline: the client sends X-Deadline-Ms
// and gives up when the deadline passes, as a mobile app would.
//
// A scenario (loadtest/scenarios) runs its phases against a Shop: the
// runner sends the traffic and measures it, the Shop switches modes and
// faults and reads what the services counted (lab/driver does that
// through their admin APIs). The package knows the shop only through its
// public HTTP API and that interface. Package report shows the results.
package loadtest
