package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
)

// Kit is what every service process has, whatever it serves: the
// settings in force, its simulated faults, its metrics, traces and log,
// and its lifecycle — what to release when it stops, the background
// workers to stop, its readiness check and its admin routes.
//
// A Kit builds none of the mechanisms and decides nothing about their
// order. A request's chain is resilience.ServerChain (built by StartGRPC)
// or, at the gateway, resilience.EdgeChain; a call's chain is
// resilience.ClientChain, built where the service dials its dependency.
type Kit struct {
	Name     string
	Settings *mode.Live
	Faults   *faults.Injector
	Metrics  *telemetry.Metrics
	// Tracing is the service's own tracer provider; off unless an OTLP
	// endpoint is configured (see telemetry.NewTracing).
	Tracing *telemetry.Tracing
	Log     *slog.Logger
	// Peers receive the gateway's fanned-out mode switches.
	Peers []admin.Peer

	common    Common
	routes    map[string]http.Handler
	readiness func(context.Context) error
	budget    BudgetOptions
	// writeTimeout, when set, replaces WriteTimeout on the public HTTP
	// server (StartHTTP).
	writeTimeout time.Duration
	closers      []func()
	closeOnce    sync.Once
}

// SetReadiness sets a check for /readyz to run besides "not stopping":
// while check fails, /readyz answers 503 and the error, so that a load
// balancer stops sending the service work it cannot do (its database is
// unreachable, say), and sends it again once check passes. check gets a
// context bounded by ReadyTimeout. Call it before the service starts.
func (k *Kit) SetReadiness(check func(context.Context) error) { k.readiness = check }

// ready runs the readiness check, if there is one.
func (k *Kit) ready(ctx context.Context) error {
	if k.readiness == nil {
		return nil
	}
	return k.readiness(ctx)
}

// SetWriteTimeout sets the public HTTP server's write timeout (StartHTTP),
// in place of WriteTimeout: the gateway's covers its longest budget. Call
// it before the service starts.
func (k *Kit) SetWriteTimeout(d time.Duration) { k.writeTimeout = d }

// OnClose registers f to run when the process stops, after its work in
// flight has drained: releasing what the service holds, such as its
// database pool. Closers run last registered first, as deferred calls do.
func (k *Kit) OnClose(f func()) { k.closers = append(k.closers, f) }

// ConnectTimeout is the bound on an attempt to connect to a dependency in
// the mode in force when the attempt starts (zero: gRPC's default). Pass
// it to dial.Options.
func (k *Kit) ConnectTimeout() time.Duration { return k.Settings.Load().ConnectTimeout() }

// RunWorkers runs a service's background workers (reconcilers, sweepers)
// in a goroutine until the process stops: their context keeps ctx's
// values but not its cancellation, and is cancelled, and the workers
// awaited, when the kit closes — after the work in flight has drained.
func (k *Kit) RunWorkers(ctx context.Context, run func(context.Context)) {
	workers, stop := context.WithCancel(context.WithoutCancel(ctx))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		run(workers)
	}()
	k.OnClose(func() {
		stop()
		<-stopped
	})
}

// Close runs the closers, once. The process calls it when it stops; a
// service whose Start fails after registering closers calls it itself.
func (k *Kit) Close() {
	k.closeOnce.Do(func() {
		for _, f := range slices.Backward(k.closers) {
			f()
		}
	})
}

// HandleAdmin adds a read route of the service's own to its admin API.
// Call it before the service starts.
func (k *Kit) HandleAdmin(pattern string, h http.Handler) {
	if k.routes == nil {
		k.routes = map[string]http.Handler{}
	}
	k.routes[pattern] = h
}

// KitOptions adjust a Kit.
type KitOptions struct {
	// Peers receive fanned-out mode switches (gateway).
	Peers []admin.Peer
}

// TraceFlushTimeout bounds how long a stopping service waits to send the
// spans it still holds.
const TraceFlushTimeout = 5 * time.Second

// NewKit builds a service's kit from its common configuration.
func NewKit(name string, c Common, o KitOptions, log *slog.Logger) (*Kit, error) {
	m, err := telemetry.New(name)
	if err != nil {
		return nil, fmt.Errorf("%s: metrics: %w", name, err)
	}
	// Tracing comes from the OTEL_* environment alone. Building it does no
	// I/O: the exporter connects on its first export.
	tr, err := telemetry.NewTracing(context.Background(), name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	settings := mode.NewLive(c.Settings())
	settings.OnSwitch(func(s mode.Settings) { m.ModeChange(context.Background(), string(s.Mode)) })
	k := &Kit{
		Name: name, Settings: settings, Faults: faults.NewInjector(c.Faults, settings), Metrics: m, Tracing: tr,
		Log: log.With("service", name), Peers: o.Peers, common: c,
	}
	// Registered first, so it runs last: the spans of the work drained and
	// of whatever the other closers do are sent before the process exits.
	k.OnClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), TraceFlushTimeout)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			k.Log.Warn("sending the last spans failed", "err", err)
		}
	})
	// Registered early, so it runs after the database pool has closed:
	// simulated work still blocked once the drain gave up ends, and can
	// write nothing more, as in a process that exited.
	k.OnClose(k.Faults.Halt)
	return k, nil
}

// AdminHandler is the kit's admin API.
func (k *Kit) AdminHandler() http.Handler {
	return admin.Handler(admin.Options{
		Service: k.Name, Settings: k.Settings, Faults: k.Faults, Metrics: k.Metrics.Handler(),
		Token: k.common.AdminToken, Peers: k.Peers, Log: k.Log, Routes: k.routes,
		ConnectTimeout: k.common.ConnectTimeout,
		Budget:         func() any { return k.Contract() },
	})
}
