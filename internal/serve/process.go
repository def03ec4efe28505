package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mercado-lab/mercado/internal/problem"
)

// DefaultDrainTimeout bounds how long a stopping server waits for work in
// flight.
const DefaultDrainTimeout = 10 * time.Second

// Process is one running service: its serving and admin listeners.
type Process struct {
	// Name is the service's name.
	Name string
	// Addr is the serving listener's bound address (host:port).
	Addr string
	// AdminAddr is the admin listener's bound address.
	AdminAddr string

	ready atomic.Bool
	done  chan struct{}
	err   error
}

// Wait blocks until the process has stopped and returns why it stopped
// other than its context ending (nil after a clean shutdown).
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Done is closed once the process has stopped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Ready reports whether the process accepts new work.
func (p *Process) Ready() bool { return p.ready.Load() }

// server is what a Process runs: serve on a listener, stop gracefully
// within a context, or stop at once.
type server interface {
	Serve(net.Listener) error
	Drain(context.Context) error
	Halt()
}

type options struct {
	name, addr, adminAddr string
	drain                 time.Duration
	log                   *slog.Logger
	admin                 http.Handler                // extra admin routes, may be nil
	onStop                func()                      // runs first on shutdown, may be nil
	ready                 func(context.Context) error // readiness beyond "not stopping", may be nil
	release               func()                      // runs last on shutdown, and if start fails; may be nil
	metrics               interface{ Shutdown(context.Context) error }
}

// start listens on both addresses and serves until ctx ends. Then it
// stops in order: readiness fails first (/readyz answers 503, and onStop
// runs: the gRPC health service says NOT_SERVING), so a load balancer
// stops sending; the server drains (refusing new work, finishing work in
// flight; see drainingHTTP and GracefulStop) for up to the drain timeout,
// and is cut off past it; the admin listener closes last. A nil srv
// serves the admin listener alone (StartAdminOnly).
func start(ctx context.Context, o options, srv server) (*Process, error) {
	if o.release == nil {
		o.release = func() {}
	}
	var lc net.ListenConfig
	var ln net.Listener
	var err error
	if srv != nil {
		if ln, err = lc.Listen(ctx, "tcp", o.addr); err != nil {
			o.release()
			return nil, err
		}
	}
	adminLn, err := lc.Listen(ctx, "tcp", o.adminAddr)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		o.release()
		return nil, err
	}
	p := &Process{Name: o.name, AdminAddr: adminLn.Addr().String(), done: make(chan struct{})}
	if srv != nil {
		p.Addr = ln.Addr().String()
	} else {
		srv = nothingToServe{}
	}
	admin := newAdminServer(p, o.admin, o.ready)
	if o.drain <= 0 {
		o.drain = DefaultDrainTimeout
	}
	log := o.log

	serveErr := make(chan error, 2)
	if ln != nil {
		go func() { serveErr <- srv.Serve(ln) }()
	}
	go func() { serveErr <- admin.Serve(adminLn) }()
	p.ready.Store(true)
	if p.Addr != "" {
		log.Info("serving", "addr", p.Addr, "admin_addr", p.AdminAddr)
	} else {
		log.Info("serving", "admin_addr", p.AdminAddr)
	}

	go func() {
		defer close(p.done)
		select {
		case <-ctx.Done():
		case err := <-serveErr:
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.err = err
				log.Error("listener failed", "err", err)
			}
		}
		p.ready.Store(false)
		if o.onStop != nil {
			o.onStop()
		}
		drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drain)
		defer cancel()
		start := time.Now()
		if err := srv.Drain(drainCtx); err != nil {
			log.Warn("drain timed out; cutting off work still in flight", "drain_timeout", o.drain)
			srv.Halt()
		}
		_ = admin.Shutdown(drainCtx)
		if o.metrics != nil {
			_ = o.metrics.Shutdown(drainCtx)
		}
		o.release() // after the drain: work in flight may still need the database
		log.Info("stopped", "drained_in", time.Since(start).Round(time.Millisecond).String())
	}()
	return p, nil
}

// DrainRetryAfter is the Retry-After of the 503 a draining HTTP server
// answers: by then the load balancer has another replica to send the
// retry to, and a restarted process is back within seconds.
const DrainRetryAfter = time.Second

// drainingHTTP is an HTTP server that stops in three steps, so that no
// request is lost to a connection closed under it:
//
//  1. The gate closes: a request whose handler has not started yet is
//     answered 503 problem+json with Retry-After and "Connection: close"
//     (it reached this process on a connection opened before the drain;
//     the close sends the client's next attempt to a new connection,
//     which the load balancer gives to another replica). Handlers already
//     running go on.
//  2. The listener closes: a new connection is refused at once, before
//     anything is sent, so any client may retry it safely elsewhere.
//     Open keep-alive connections stay open meanwhile, and a request
//     sent on one gets the 503 of step 1, not a reset.
//  3. Once no handler runs any more, http.Server.Shutdown closes the
//     connections, idle by then, and returns.
//
// (/readyz has answered 503 since before step 1: see start.)
type drainingHTTP struct {
	srv  *http.Server
	gate gate

	mu sync.Mutex
	ln *onceCloseListener // nil until Serve
}

// drainHTTP wraps srv's handler in the drain gate.
func drainHTTP(srv *http.Server) *drainingHTTP {
	d := &drainingHTTP{srv: srv}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.gate.enter() {
			w.Header().Set("Connection", "close")
			problem.WriteRetry(w, r, http.StatusServiceUnavailable,
				"the service is shutting down; retry the request", DrainRetryAfter)
			return
		}
		defer d.gate.leave()
		next.ServeHTTP(w, r)
	})
	return d
}

func (d *drainingHTTP) Serve(ln net.Listener) error {
	l := &onceCloseListener{Listener: ln}
	d.mu.Lock()
	d.ln = l
	d.mu.Unlock()
	return d.srv.Serve(l)
}

func (d *drainingHTTP) Drain(ctx context.Context) error {
	idle := d.gate.close()
	d.mu.Lock()
	if d.ln != nil {
		_ = d.ln.Close()
	}
	d.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		return ctx.Err()
	}
	return d.srv.Shutdown(ctx)
}

func (d *drainingHTTP) Halt() { _ = d.srv.Close() }

// gate counts the handlers running and, once closed, admits no more.
// (A sync.WaitGroup cannot: its Add may not race its Wait.)
type gate struct {
	mu     sync.Mutex
	closed bool
	active int
	idle   chan struct{} // made by close; closed when closed and active == 0
}

// enter admits one handler, unless the gate is closed.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.active++
	return true
}

// leave is called by an admitted handler when it returns.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if g.closed && g.active == 0 {
		close(g.idle)
	}
}

// close admits no more handlers and returns a channel closed once every
// admitted one has returned. Call it once.
func (g *gate) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed, g.idle = true, make(chan struct{})
	if g.active == 0 {
		close(g.idle)
	}
	return g.idle
}

// onceCloseListener lets the drain close the listener before
// http.Server.Shutdown closes it again: the second Close does nothing
// and, above all, returns no error, which Shutdown would report.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// StartAdminOnly serves an admin listener alone on adminAddr (/healthz,
// /readyz and h) until ctx ends, for a process whose work listens on its
// own: the wire's fault proxies. release runs last on shutdown.
func StartAdminOnly(ctx context.Context, name, adminAddr string, h http.Handler, release func(), log *slog.Logger) (*Process, error) {
	return start(ctx, options{name: name, adminAddr: adminAddr, log: log.With("service", name), admin: h, release: release}, nil)
}

// nothingToServe is the serving side of an admin-only process: nothing
// to drain (it is never served).
type nothingToServe struct{}

func (nothingToServe) Serve(net.Listener) error    { return nil }
func (nothingToServe) Drain(context.Context) error { return nil }
func (nothingToServe) Halt()                       {}
