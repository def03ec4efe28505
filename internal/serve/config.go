package serve

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
)

// Defaults shared by every service. The margin covers the answer's way
// back over loopback or a data-centre network (well under a millisecond
// each way, plus serialisation), with room to spare; the floor is the least
// time in which any hop of the shop can answer, so a call with less is
// doomed. Drill 76 scales both to 100 ms for an 8 s budget.
const (
	DefaultMode   = mode.Budgeted
	DefaultMargin = 3 * time.Millisecond
	DefaultFloor  = 20 * time.Millisecond
)

// Common is the configuration every service shares.
type Common struct {
	// Addr is the serving listener's address.
	Addr string
	// AdminAddr is the admin listener's address.
	AdminAddr string
	// Mode presets the mechanisms.
	Mode mode.Mode
	// Margin is kept back from each call for the way back.
	Margin time.Duration
	// Floor is the least budget worth starting a call or a request with.
	Floor time.Duration
	// Faults simulate slow work.
	Faults faults.Set
	// DrainTimeout bounds a graceful shutdown.
	DrainTimeout time.Duration
	// Overrides switch single mechanisms on top of the mode's preset.
	Overrides mode.Overrides
	// AdminToken, when set, is required (as a bearer token) for changes
	// through the admin API.
	AdminToken string
	// Pools and breakers.
	Resilience Resilience
	// DatabaseURL, when set, keeps the service's state in PostgreSQL
	// (postgres://user:password@host:5432/db?sslmode=disable): one
	// database for the whole shop, one schema per service, migrated at
	// start-up. Unset, the service keeps its state in memory, the embedded
	// default. The gateway keeps no state and ignores it.
	DatabaseURL string
	// DBMaxConns bounds the service's pool of database connections.
	DBMaxConns int
}

// DefaultDBMaxConns is a service's pool of database connections: enough
// for its bulkheads' worth of concurrent requests, since each holds a
// connection only for the few statements of one store call.
const DefaultDBMaxConns = 10

// Resilience sizes the pools and breakers.
type Resilience struct {
	// Workers is the size of a service's worker pool (naive: shared by
	// every request, with an unbounded queue).
	Workers int
	// Bulkhead is the size of each budgeted bulkhead: per route at the
	// gateway, per dependency in orders.
	Bulkhead int
	// MaxWait bounds a budgeted wait for a worker or a bulkhead slot; the
	// remaining budget bounds it too.
	MaxWait time.Duration
	// The breakers open at BreakerRatio failures over the last
	// BreakerWindow calls, for BreakerOpen.
	BreakerWindow int
	BreakerRatio  float64
	BreakerOpen   time.Duration
}

// DefaultResilience are the lessons' figures: a servlet-like pool of 200,
// bulkheads of 25, breakers at 50% of the last 20 calls, open 30 s
// (Drill 76).
func DefaultResilience() Resilience {
	return Resilience{Workers: 200, Bulkhead: 25, MaxWait: 100 * time.Millisecond,
		BreakerWindow: 20, BreakerRatio: 0.5, BreakerOpen: 30 * time.Second}
}

// RegisterFlags binds r's fields to flags on fs.
func (r *Resilience) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&r.Workers, "workers", r.Workers, "worker pool size (naive: shared by every request)")
	fs.IntVar(&r.Bulkhead, "bulkhead", r.Bulkhead, "budgeted: slots per route (gateway) or per dependency (orders)")
	fs.DurationVar(&r.MaxWait, "max-wait", r.MaxWait, "budgeted: longest wait for a worker or a bulkhead slot")
	fs.IntVar(&r.BreakerWindow, "breaker-window", r.BreakerWindow, "breakers count the last N calls")
	fs.Float64Var(&r.BreakerRatio, "breaker-ratio", r.BreakerRatio, "breakers open at this share of failures in the window")
	fs.DurationVar(&r.BreakerOpen, "breaker-open", r.BreakerOpen, "how long an open breaker stays open")
}

// Validate reports every problem with r.
func (r Resilience) Validate() error {
	var errs []error
	if r.Workers < 1 || r.Workers > 100_000 {
		errs = append(errs, fmt.Errorf("workers: %d is outside 1 to 100000", r.Workers))
	}
	if r.Bulkhead < 1 || r.Bulkhead > 100_000 {
		errs = append(errs, fmt.Errorf("bulkhead: %d is outside 1 to 100000", r.Bulkhead))
	}
	if r.MaxWait < 0 || r.MaxWait > time.Minute {
		errs = append(errs, fmt.Errorf("max-wait: %v is outside 0 to 1m", r.MaxWait))
	}
	if r.BreakerWindow < 1 || r.BreakerWindow > 10_000 {
		errs = append(errs, fmt.Errorf("breaker-window: %d is outside 1 to 10000", r.BreakerWindow))
	}
	if !(r.BreakerRatio > 0 && r.BreakerRatio <= 1) {
		errs = append(errs, fmt.Errorf("breaker-ratio: %v is outside (0, 1]", r.BreakerRatio))
	}
	if r.BreakerOpen <= 0 || r.BreakerOpen > time.Hour {
		errs = append(errs, fmt.Errorf("breaker-open: %v is outside (0, 1h]", r.BreakerOpen))
	}
	return errors.Join(errs...)
}

// Defaults returns the common configuration of a service listening on the
// given addresses.
func Defaults(addr, adminAddr string) Common {
	return Common{
		Addr: addr, AdminAddr: adminAddr,
		Mode: DefaultMode, Margin: DefaultMargin, Floor: DefaultFloor,
		Faults: faults.Set{}, DrainTimeout: DefaultDrainTimeout,
		Resilience: DefaultResilience(), DBMaxConns: DefaultDBMaxConns,
	}
}

// RegisterFlags binds c's fields to flags on fs, keeping c's values as
// defaults.
func (c *Common) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "serving listen address")
	fs.StringVar(&c.AdminAddr, "admin-addr", c.AdminAddr, "admin listen address (/healthz, /readyz)")
	c.RegisterModeFlags(fs)
	fs.Var(&c.Faults, "fault", `simulated work, "[Method:]latency=280ms[,hang[=10s]]"; repeatable, or ";"-separated`)
	c.RegisterDatabaseFlags(fs)
}

// RegisterDatabaseFlags binds the database flags only. Prefer the
// environment (MERCADO_DATABASE_URL) for the URL: a flag's value, password
// included, shows in the process list.
func (c *Common) RegisterDatabaseFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL,
		"PostgreSQL URL for the service's state, e.g. postgres://mercado:mercado@127.0.0.1:5432/mercado?sslmode=disable (empty: in memory)")
	fs.IntVar(&c.DBMaxConns, "db-max-conns", c.DBMaxConns, "most database connections the service holds")
}

// RegisterModeFlags binds the mode, margin, floor and drain flags only.
func (c *Common) RegisterModeFlags(fs *flag.FlagSet) {
	fs.Var(&c.Mode, "mode", "naive or budgeted")
	fs.DurationVar(&c.Margin, "margin", c.Margin, "time kept back from each call for the way back")
	fs.DurationVar(&c.Floor, "floor", c.Floor, "least budget worth starting a call with")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "how long shutdown waits for work in flight")
	fs.Var(&c.Overrides, "mechanisms", `switch single mechanisms on top of the mode, e.g. "breakers=off,retries=naive"`)
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "bearer token required for admin changes (reads stay open)")
	c.Resilience.RegisterFlags(fs)
}

// Validate reports every problem with c.
func (c Common) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("addr: must not be empty"))
	}
	if c.AdminAddr == "" {
		errs = append(errs, errors.New("admin-addr: must not be empty"))
	}
	if c.Addr != "" && c.Addr == c.AdminAddr && !strings.HasSuffix(c.Addr, ":0") {
		errs = append(errs, errors.New("admin-addr: must differ from addr (admin never shares the serving port)"))
	}
	if _, err := mode.Parse(string(c.Mode)); err != nil {
		errs = append(errs, fmt.Errorf("mode: %w", err))
	}
	if c.Margin < 0 || c.Margin > time.Minute {
		errs = append(errs, fmt.Errorf("margin: %v is outside 0 to 1m", c.Margin))
	}
	if c.Floor < 0 || c.Floor > time.Minute {
		errs = append(errs, fmt.Errorf("floor: %v is outside 0 to 1m", c.Floor))
	}
	if err := c.Resilience.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Overrides.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("mechanisms: %w", err))
	}
	if c.DrainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("drain-timeout: %v must be positive", c.DrainTimeout))
	}
	if c.DBMaxConns < 1 || c.DBMaxConns > 1000 {
		errs = append(errs, fmt.Errorf("db-max-conns: %d is outside 1 to 1000", c.DBMaxConns))
	}
	if c.DatabaseURL != "" {
		if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			errs = append(errs, fmt.Errorf("database-url: %w", err)) // pgx leaves the password out
		}
	}
	return errors.Join(errs...)
}

// Settings returns the mechanism settings c starts with.
func (c Common) Settings() mode.Settings {
	return mode.Settings{Mode: c.Mode, Mechanisms: c.Mode.Mechanisms().Apply(c.Overrides), Margin: c.Margin, Floor: c.Floor}
}
