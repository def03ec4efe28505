package serve

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/setting"
)

// Defaults shared by every service. The margin covers the answer's way
// back, from a call cut at what was left to the caller's reply, on a
// laptop busy with other work: that is the tail of how long a process
// waits for a core, not the microseconds loopback takes (docs/deadlines.md
// says how it was chosen). It stays below the floor, the least time in
// which any hop of the shop can answer, so a call with less is doomed.
// Drill 76 scales both to 100 ms for an 8 s budget.
const (
	DefaultMode   = mode.Budgeted
	DefaultMargin = 15 * time.Millisecond
	DefaultFloor  = 20 * time.Millisecond
	// DefaultConnectTimeout is the lessons' "connect 2 s": long enough
	// for a handshake across a data centre many times over, short against
	// any request budget a user waits for, and apart from each call's read
	// cap (the time the dependency's work takes).
	DefaultConnectTimeout = 2 * time.Second
)

// Shared is the configuration that is the same for every service of a
// shop: `mercado serve <name>` and `mercado serve all` register these
// flags once (RegisterFlags) and check them once (Validate), and every
// service is given the one value.
type Shared struct {
	// Mode presets the mechanisms.
	Mode mode.Mode
	// Margin is kept back from each call for the way back.
	Margin time.Duration
	// Floor is the least budget worth starting a call or a request with.
	Floor time.Duration
	// ConnectTimeout bounds each attempt to connect to a dependency (TCP
	// connect and HTTP/2 handshake) while the connect_timeout mechanism is
	// on (budgeted); naive connects under gRPC's default of 20 s.
	ConnectTimeout time.Duration
	// Overrides switch single mechanisms on top of the mode's preset.
	Overrides mode.Overrides
	// Pools and breakers.
	Resilience Resilience
	// AdminToken, when set, is required (as a bearer token) for changes
	// through the admin API.
	AdminToken string
	// DatabaseURL, when set, keeps the service's state in PostgreSQL
	// (postgres://user:password@host:5432/db?sslmode=disable): one
	// database for the whole shop, one schema per service, migrated at
	// start-up. Unset, the service keeps its state in memory, the embedded
	// default. The gateway keeps no state and ignores it.
	DatabaseURL string
	// DBMaxConns bounds the service's pool of database connections.
	DBMaxConns int
	// DrainTimeout bounds a graceful shutdown.
	DrainTimeout time.Duration
}

// Common is the configuration every service has: the Shared settings,
// and the service's own listeners and simulated faults.
type Common struct {
	Shared
	// Addr is the serving listener's address.
	Addr string
	// AdminAddr is the admin listener's address. Beyond loopback it needs
	// an AdminToken, or AdminInsecure (see Validate).
	AdminAddr string
	// AdminInsecure lets the admin listener take an address other
	// machines can reach without an AdminToken: anyone who reaches it can
	// then switch modes and inject faults.
	AdminInsecure bool
	// Faults simulate slow work.
	Faults faults.Set
}

// DefaultDBMaxConns is a service's pool of database connections. Each
// request holds a connection only for the few statements of one store
// call, so a few connections serve a bulkhead's worth of concurrent
// requests; more backends only queue for the same cores and the same WAL
// flush (measured in docs/performance.md, "Pool sizes").
const DefaultDBMaxConns = 4

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
	// The breakers open at BreakerRatio failures of at least
	// BreakerMinCalls calls in their window, for BreakerOpen. The window
	// is BreakerWindow, or when zero each dependency's own, sized from its
	// cap and bulkhead (resilience.BreakerWindow).
	BreakerMinCalls int
	BreakerRatio    float64
	BreakerWindow   time.Duration
	BreakerOpen     time.Duration
}

// DefaultResilience are the lessons' figures: a servlet-like pool of 200,
// bulkheads of 25, breakers at 50% of at least 20 calls, open 30 s
// (Drill 76).
func DefaultResilience() Resilience {
	var r Resilience
	setting.Default(r.settings()...)
	return r
}

// settings declares r's settings, each once: its flag, default, range and
// help.
func (r *Resilience) settings() []setting.Setting {
	return []setting.Setting{
		setting.Int(&r.Workers, "workers", 200, setting.Within(1, admin.MaxWorkers), "worker pool size (naive: shared by every request)"),
		setting.Int(&r.Bulkhead, "bulkhead", 25, setting.Within(1, 100_000), "budgeted: slots per route (gateway) or per dependency (orders)"),
		setting.Duration(&r.MaxWait, "max-wait", 100*time.Millisecond, setting.Within(0, time.Minute),
			"budgeted: longest wait for a worker or a bulkhead slot"),
		setting.Int(&r.BreakerMinCalls, "breaker-min-calls", 20, setting.Within(1, 10_000), "breakers open on no fewer calls in their window"),
		setting.Float(&r.BreakerRatio, "breaker-ratio", 0.5, setting.Above(0.0, 1), "breakers open at this share of failures in the window"),
		setting.Var(breakerWindow{r}, "breaker-window", "", "how far back breakers count calls (0: each dependency's, from its cap and bulkhead; "+
			"a bare number N is the old count window, read as --breaker-min-calls N)", r.checkWindow),
		setting.Duration(&r.BreakerOpen, "breaker-open", 30*time.Second, setting.Above(0, time.Hour), "how long an open breaker stays open"),
	}
}

// RegisterFlags binds r's fields to flags on fs.
func (r *Resilience) RegisterFlags(fs *flag.FlagSet) { setting.Register(fs, r.settings()...) }

// Validate reports every problem with r.
func (r Resilience) Validate() error { return setting.Check(r.settings()...) }

func (r *Resilience) checkWindow() error {
	if r.BreakerWindow != 0 && (r.BreakerWindow < 100*time.Millisecond || r.BreakerWindow > time.Hour) {
		return fmt.Errorf("%v is outside 100ms to 1h (or 0, each dependency's own)", r.BreakerWindow)
	}
	return nil
}

// DefaultShared returns the shared settings with every default filled in.
func DefaultShared() Shared {
	var s Shared
	setting.Default(s.settings()...)
	return s
}

// Defaults returns the common configuration of a service listening on the
// given addresses, with the default shared settings.
func Defaults(addr, adminAddr string) Common {
	return Common{Shared: DefaultShared(), Addr: addr, AdminAddr: adminAddr, Faults: faults.Set{}}
}

// settings declares s's settings, each once. Prefer the environment for
// the admin token and the database URL (MERCADO_ADMIN_TOKEN,
// MERCADO_DATABASE_URL): a flag's value shows in the process list.
func (s *Shared) settings() []setting.Setting {
	return append([]setting.Setting{
		setting.Var(&s.Mode, "mode", string(DefaultMode), "fragile, naive or budgeted", func() error {
			_, err := mode.Parse(string(s.Mode))
			return err
		}),
		setting.Duration(&s.Margin, "margin", DefaultMargin, setting.Within(0, time.Minute), "time kept back from each call for the way back"),
		setting.Duration(&s.Floor, "floor", DefaultFloor, setting.Within(0, time.Minute), "least budget worth starting a call with"),
		setting.Duration(&s.ConnectTimeout, "connect-timeout", DefaultConnectTimeout, setting.Above(0, time.Minute),
			"budgeted: longest attempt to connect to a dependency (naive: gRPC's default, 20 s)"),
		setting.Var(&s.Overrides, "mechanisms", "", `switch single mechanisms on top of the mode, e.g. "breakers=off,retries=naive"`,
			func() error { return s.Overrides.Validate() }),
	}, append(s.Resilience.settings(),
		setting.String(&s.AdminToken, "admin-token", "", "bearer token required for admin changes (reads stay open)", nil),
		setting.String(&s.DatabaseURL, "database-url", "",
			"PostgreSQL URL for the service's state, e.g. postgres://mercado:mercado@127.0.0.1:5432/mercado?sslmode=disable (empty: in memory)",
			CheckDatabaseURL),
		setting.Int(&s.DBMaxConns, "db-max-conns", DefaultDBMaxConns, setting.Within(1, 1000), "most database connections the service holds"),
		setting.Duration(&s.DrainTimeout, "drain-timeout", DefaultDrainTimeout, setting.Above(0, time.Hour), "how long shutdown waits for work in flight"),
	)...)
}

// CheckDatabaseURL refuses a database URL pgx cannot parse; empty is in
// memory.
func CheckDatabaseURL(url string) error {
	if url == "" {
		return nil
	}
	_, err := pgxpool.ParseConfig(url) // pgx leaves the password out
	return err
}

// RegisterFlags binds s's fields to flags on fs, keeping s's values as
// defaults.
func (s *Shared) RegisterFlags(fs *flag.FlagSet) { setting.Register(fs, s.settings()...) }

// Validate reports every problem with s, each naming its flag.
func (s Shared) Validate() error { return setting.Check(s.settings()...) }

// settings declares c's own settings; the listen addresses' defaults are
// each service's (Defaults).
func (c *Common) settings() []setting.Setting {
	return []setting.Setting{
		setting.String(&c.Addr, "addr", "", "serving listen address", setting.NotEmpty),
		setting.String(&c.AdminAddr, "admin-addr", "",
			"admin listen address (/healthz, /readyz, /metrics, /admin/*); beyond loopback it needs --admin-token or --admin-insecure",
			setting.NotEmpty),
		setting.Bool(&c.AdminInsecure, "admin-insecure", false,
			"allow an admin listener other machines can reach without --admin-token (anyone reaching it may switch modes and inject faults)"),
		setting.Var(&c.Faults, "fault", "", `simulated work, "[Method:]latency=280ms[,hang[=10s]]"; repeatable, or ";"-separated`, nil),
	}
}

// RegisterFlags binds c's fields to flags on fs, keeping c's values as
// defaults: the shared settings, and the service's own.
func (c *Common) RegisterFlags(fs *flag.FlagSet) {
	c.Shared.RegisterFlags(fs)
	setting.Register(fs, c.settings()...)
}

// Validate reports every problem with c: its shared settings, then its
// own.
func (c Common) Validate() error {
	errs := []error{c.Shared.Validate(), setting.Check(c.settings()...)}
	if c.Addr != "" && c.Addr == c.AdminAddr && !strings.HasSuffix(c.Addr, ":0") {
		errs = append(errs, errors.New("admin-addr: must differ from addr (admin never shares the serving port)"))
	}
	if c.AdminAddr != "" && c.AdminToken == "" && !c.AdminInsecure && !IsLoopback(c.AdminAddr) {
		errs = append(errs, fmt.Errorf("admin-addr: %s is reachable from other machines, and no --admin-token is set: set one, "+
			"or listen on 127.0.0.1, or pass --admin-insecure to let anyone who reaches it change the service", c.AdminAddr))
	}
	return errors.Join(errs...)
}

// IsLoopback reports whether the listen address addr (host:port) takes
// connections from this machine alone: its host is localhost or a
// loopback IP. An empty host, 0.0.0.0 or any other name is not (":9080"
// listens on every interface).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Settings returns the mechanism settings s starts with.
func (s Shared) Settings() mode.Settings {
	return mode.Settings{Mode: s.Mode, Mechanisms: s.Mode.Mechanisms().Apply(s.Overrides), Margin: s.Margin, Floor: s.Floor, Connect: s.ConnectTimeout,
		Workers: s.Resilience.Workers}
}

// breakerWindow is --breaker-window: a duration, or — as the flag was when
// breakers counted the last N calls — a bare number, taken as
// --breaker-min-calls.
type breakerWindow struct{ r *Resilience }

func (f breakerWindow) String() string {
	if f.r == nil {
		return "0s"
	}
	return f.r.BreakerWindow.String()
}

func (f breakerWindow) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil && n != 0 {
		f.r.BreakerMinCalls = n
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("want a duration such as 10s, or 0 for each dependency's own")
	}
	f.r.BreakerWindow = d
	return nil
}
