package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
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

// start listens on both addresses and serves until ctx ends.
func start(ctx context.Context, o options, srv server) (*Process, error) {
	if o.release == nil {
		o.release = func() {}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.addr)
	if err != nil {
		o.release()
		return nil, err
	}
	adminLn, err := lc.Listen(ctx, "tcp", o.adminAddr)
	if err != nil {
		ln.Close()
		o.release()
		return nil, err
	}
	p := &Process{Name: o.name, Addr: ln.Addr().String(), AdminAddr: adminLn.Addr().String(), done: make(chan struct{})}
	admin := newAdminServer(p, o.admin, o.ready)
	if o.drain <= 0 {
		o.drain = DefaultDrainTimeout
	}
	log := o.log

	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	go func() { serveErr <- admin.Serve(adminLn) }()
	p.ready.Store(true)
	log.Info("serving", "addr", p.Addr, "admin_addr", p.AdminAddr)

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
