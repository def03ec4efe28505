package serve

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

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
}

// Defaults returns the common configuration of a service listening on the
// given addresses.
func Defaults(addr, adminAddr string) Common {
	return Common{
		Addr: addr, AdminAddr: adminAddr,
		Mode: DefaultMode, Margin: DefaultMargin, Floor: DefaultFloor,
		Faults: faults.Set{}, DrainTimeout: DefaultDrainTimeout,
	}
}

// RegisterFlags binds c's fields to flags on fs, keeping c's values as
// defaults.
func (c *Common) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "serving listen address")
	fs.StringVar(&c.AdminAddr, "admin-addr", c.AdminAddr, "admin listen address (/healthz, /readyz)")
	c.RegisterModeFlags(fs)
	fs.Var(&c.Faults, "fault", `simulated work, "[Method:]latency=280ms[,hang[=10s]]"; repeatable, or ";"-separated`)
}

// RegisterModeFlags binds the mode, margin, floor and drain flags only.
func (c *Common) RegisterModeFlags(fs *flag.FlagSet) {
	fs.Var(&c.Mode, "mode", "naive or budgeted")
	fs.DurationVar(&c.Margin, "margin", c.Margin, "time kept back from each call for the way back")
	fs.DurationVar(&c.Floor, "floor", c.Floor, "least budget worth starting a call with")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "how long shutdown waits for work in flight")
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
	if c.DrainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("drain-timeout: %v must be positive", c.DrainTimeout))
	}
	return errors.Join(errs...)
}

// Settings returns the mechanism settings c starts with.
func (c Common) Settings() mode.Settings {
	return mode.Settings{Mode: c.Mode, Mechanisms: c.Mode.Mechanisms(), Margin: c.Margin, Floor: c.Floor}
}
