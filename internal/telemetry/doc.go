// Package telemetry gives each Mercado service its own metrics: an
// OpenTelemetry MeterProvider exported through its own Prometheus registry,
// served on the service's admin port at /metrics.
//
// Every service gets a separate registry because `mercado serve all` runs
// all five services in one process, each with its own admin port. A global
// meter provider or prometheus.DefaultRegisterer would mix their series, so
// nothing here touches global state: every series a [Metrics] exposes
// carries service="<name>" and only that service's data.
//
// The recording methods run on every request (most are fed by the hooks of
// pkg/deadline). They are safe for concurrent use and, once a label value
// has been seen, they do not allocate. A nil *Metrics records nothing, so
// code under test may leave metrics out.
//
// The package never logs.
package telemetry
