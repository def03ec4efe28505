package faults_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/timing"
)

// Set is a flag.Value, so the services can bind it with fs.Var.
var _ flag.Value = (*faults.Set)(nil)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want faults.Set
	}{
		{"empty", "", faults.Set{}},
		{"only separators", " ; ;", faults.Set{}},
		{"no method applies to all", "latency=280ms", faults.Set{"*": {Latency: 280 * time.Millisecond}}},
		{"method and latency", "ReserveStock:latency=280ms", faults.Set{"ReserveStock": {Latency: 280 * time.Millisecond}}},
		{"bare hang is the default hang", "CreateShipment:hang", faults.Set{"CreateShipment": {Hang: faults.DefaultHang}}},
		{"hang with a duration", "CreateShipment:hang=10s", faults.Set{"CreateShipment": {Hang: 10 * time.Second}}},
		{"latency and hang", "CreateCharge:latency=400ms,hang=10s",
			faults.Set{"CreateCharge": {Latency: 400 * time.Millisecond, Hang: 10 * time.Second}}},
		{"several specs", "ReserveStock:latency=280ms; CreateCharge:latency=760ms;*:latency=1ms",
			faults.Set{
				"ReserveStock": {Latency: 280 * time.Millisecond},
				"CreateCharge": {Latency: 760 * time.Millisecond},
				"*":            {Latency: time.Millisecond},
			}},
		{"spaces around parts", "  ReserveStock : latency=5ms , hang=1s ",
			faults.Set{"ReserveStock": {Latency: 5 * time.Millisecond, Hang: time.Second}}},
		{"later spec for a method wins", "X:latency=1ms;X:latency=2ms", faults.Set{"X": {Latency: 2 * time.Millisecond}}},
		{"zero latency is allowed", "X:latency=0s", faults.Set{"X": {}}},
		{"one hour is the most", "X:hang=1h", faults.Set{"X": {Hang: time.Hour}}},
		{"distribution and error rate", "CreateCharge:p50=100ms,p99=400ms,error-rate=0.1",
			faults.Set{"CreateCharge": {P50: 100 * time.Millisecond, P99: 400 * time.Millisecond, ErrorRate: 0.1}}},
		{"extra delay", "delay=5ms", faults.Set{"*": {Delay: 5 * time.Millisecond}}},
		{"error rate alone", "X:error-rate=1", faults.Set{"X": {ErrorRate: 1}}},
		{"refuse rate alone", "CreateCharge:refuse-rate=1", faults.Set{"CreateCharge": {RefuseRate: 1}}},
		{"refuse rate with latency", "X:latency=5ms,refuse-rate=0.5", faults.Set{"X": {Latency: 5 * time.Millisecond, RefuseRate: 0.5}}},
		{"slots", "CreateCharge:latency=200ms,slots=10", faults.Set{"CreateCharge": {Latency: 200 * time.Millisecond, Slots: 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := faults.Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.in, err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // a piece of the error message
	}{
		{"empty method", ":latency=1ms", "empty method name"},
		{"blank method", "  :latency=1ms", "empty method name"},
		{"unknown key", "X:jitter=1ms", `unknown key "jitter"`},
		{"no body", "X:", `unknown key ""`},
		{"trailing comma", "X:latency=1ms,", `unknown key ""`},
		{"latency without value", "X:latency", "needs a duration"},
		{"latency with empty value", "X:latency=", "needs a duration"},
		{"hang with empty value", "X:hang=", "needs a duration"},
		{"not a duration", "X:latency=fast", "latency"},
		{"no unit", "X:latency=280", "latency"},
		{"negative", "X:latency=-1ms", "outside 0 to 1h"},
		{"over an hour", "X:hang=61m", "outside 0 to 1h"},
		{"error in a later spec", "A:latency=1ms;B:latency=x", `"B:latency=x"`},
		{"p50 without p99", "X:p50=100ms", "p50 and p99"},
		{"p99 below p50", "X:p50=100ms,p99=50ms", "below p50"},
		{"latency and a distribution", "X:latency=1ms,p50=1ms,p99=2ms", "not both"},
		{"error rate over 1", "X:error-rate=1.5", "error-rate"},
		{"negative error rate", "X:error-rate=-0.1", "error-rate"},
		{"error rate not a number", "X:error-rate=often", "error-rate"},
		{"error rate without value", "X:error-rate", "error-rate"},
		{"refuse rate over 1", "X:refuse-rate=2", "refuse-rate: 2 is outside 0 to 1"},
		{"negative refuse rate", "X:refuse-rate=-1", "refuse-rate"},
		{"refuse rate not a number", "X:refuse-rate=always", "refuse-rate"},
		{"refuse rate without value", "X:refuse-rate", "refuse-rate"},
		{"delay not a duration", "X:delay=5", "delay"},
		{"no slots", "X:latency=1ms,slots=0", "slots"},
		{"slots not a number", "X:slots=many", `slots: "many" is not a whole number`},
		{"too many slots", "X:slots=10001", "slots: 10001 is outside 1 to 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := faults.Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.in, got)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned %v with its error, want nil", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

// Set adds to what is there, as a repeatable flag does.
func TestSetAccumulates(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var s faults.Set // nil: Set must allocate
	fs.Var(&s, "fault", "")
	if err := fs.Parse([]string{"--fault", "A:latency=1ms", "--fault", "B:hang;latency=2ms"}); err != nil {
		t.Fatal(err)
	}
	want := faults.Set{"A": {Latency: time.Millisecond}, "B": {Hang: faults.DefaultHang}, "*": {Latency: 2 * time.Millisecond}}
	if !maps.Equal(s, want) {
		t.Errorf("after two --fault flags: %v, want %v", s, want)
	}
	if err := fs.Parse([]string{"--fault", "C:bogus"}); err == nil {
		t.Error("a bad --fault value was accepted")
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		set  faults.Set
		want string
	}{
		{"nil", nil, ""},
		{"empty", faults.Set{}, ""},
		{"sorted by method", faults.Set{
			"ReserveStock": {Latency: 280 * time.Millisecond},
			"*":            {Latency: time.Millisecond},
			"CreateCharge": {Latency: 400 * time.Millisecond, Hang: 10 * time.Second},
		}, "*:latency=1ms;CreateCharge:latency=400ms,hang=10s;ReserveStock:latency=280ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.set.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("nil pointer", func(t *testing.T) {
		var p *faults.Set
		if got := p.String(); got != "" {
			t.Errorf("(*Set)(nil).String() = %q, want empty", got)
		}
	})
}

// What String prints must parse back to the same set: the admin API and
// the CLI show a set in the syntax a learner types.
func TestStringRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		set  faults.Set
	}{
		{"empty", faults.Set{}},
		{"latency", faults.Set{"ReserveStock": {Latency: 280 * time.Millisecond}}},
		{"default hang", faults.Set{"CreateShipment": {Hang: faults.DefaultHang}}},
		{"both", faults.Set{"CreateCharge": {Latency: 1500 * time.Microsecond, Hang: 90 * time.Second}}},
		{"several", faults.Set{"*": {Latency: 300 * time.Millisecond}, "A": {Hang: time.Second}, "B": {Latency: time.Nanosecond}}},
		// A zero spec exempts one method from the "*" spec: it must
		// survive the trip as well.
		{"zero spec overriding all", faults.Set{"*": {Latency: 300 * time.Millisecond}, "ListProducts": {}}},
		{"every key", faults.Set{"CreateCharge": {P50: 100 * time.Millisecond, P99: 400 * time.Millisecond,
			Delay: 5 * time.Millisecond, ErrorRate: 0.25, RefuseRate: 0.5, Hang: 10 * time.Second, Slots: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.set.String()
			got, err := faults.Parse(text)
			if err != nil {
				t.Fatalf("Parse(%q) (from String) error: %v", text, err)
			}
			if !maps.Equal(got, tt.set) {
				t.Errorf("Parse(String()) = %v, want %v (text %q)", got, tt.set, text)
			}
		})
	}
}

func TestSpecDuration(t *testing.T) {
	tests := []struct {
		name string
		spec faults.Spec
		want time.Duration
	}{
		{"zero", faults.Spec{}, 0},
		{"latency", faults.Spec{Latency: 280 * time.Millisecond}, 280 * time.Millisecond},
		{"latency, delay and hang add up", faults.Spec{Latency: 280 * time.Millisecond, Delay: time.Second, Hang: 10 * time.Second},
			11280 * time.Millisecond},
		// With p50 = p99 the distribution has no spread.
		{"degenerate distribution", faults.Spec{P50: 100 * time.Millisecond, P99: 100 * time.Millisecond}, 100 * time.Millisecond},
		{"distribution plus delay", faults.Spec{P50: 100 * time.Millisecond, P99: 100 * time.Millisecond, Delay: time.Second}, 1100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.Duration(); got != tt.want {
				t.Errorf("Duration() = %v, want %v", got, tt.want)
			}
		})
	}
}

// Drawn times stay positive and spread around the median.
func TestSpecDurationDistribution(t *testing.T) {
	s := faults.Spec{P50: 100 * time.Millisecond, P99: 400 * time.Millisecond}
	var below, above int
	for range 1000 {
		d := s.Duration()
		if d <= 0 {
			t.Fatalf("drew %v, want a positive duration", d)
		}
		if d < s.P50 {
			below++
		} else {
			above++
		}
	}
	// Half fall below the median. Over 1000 draws the count has a standard
	// deviation near 16, so these bounds are ten deviations wide.
	if below < 340 || above < 340 {
		t.Errorf("%d draws below the median and %d above, want about half each", below, above)
	}
}

func TestInjectorSpec(t *testing.T) {
	all := faults.Spec{Latency: 300 * time.Millisecond}
	own := faults.Spec{Latency: 280 * time.Millisecond}
	tests := []struct {
		name   string
		set    faults.Set
		method string
		want   faults.Spec
	}{
		{"own spec", faults.Set{"ReserveStock": own, "*": all}, "ReserveStock", own},
		{"falls back to all", faults.Set{"ReserveStock": own, "*": all}, "ListProducts", all},
		{"zero own spec is not a fallback", faults.Set{"ListProducts": {}, "*": all}, "ListProducts", faults.Spec{}},
		{"nothing applies", faults.Set{"ReserveStock": own}, "ListProducts", faults.Spec{}},
		{"nil set", nil, "ListProducts", faults.Spec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := faults.NewInjector(tt.set, nil).Spec(tt.method); got != tt.want {
				t.Errorf("Spec(%q) = %+v, want %+v", tt.method, got, tt.want)
			}
		})
	}
}

func TestInjectorReplace(t *testing.T) {
	in := faults.NewInjector(faults.Set{"A": {Latency: time.Second}}, nil)
	in.Replace(faults.Set{"B": {Latency: 2 * time.Second}})
	if got := in.Spec("A"); got != (faults.Spec{}) {
		t.Errorf("after Replace, Spec(A) = %+v, want zero", got)
	}
	if got := in.Spec("B"); got.Latency != 2*time.Second {
		t.Errorf("after Replace, Spec(B) = %+v, want latency 2s", got)
	}
}

// Replace and Spec run together while a lab switches faults under load.
func TestInjectorConcurrentReplace(t *testing.T) {
	in := faults.NewInjector(faults.Set{}, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				if i%2 == 0 {
					in.Replace(faults.Set{"*": {Latency: time.Duration(j)}})
				} else {
					_ = in.Spec("X")
				}
			}
		})
	}
	wg.Wait()
}

var errCallerLeft = errors.New("caller left")

// live returns the settings of mode m, whose HonourCancel Work follows.
func live(m mode.Mode) *mode.Live {
	return mode.NewLive(mode.Settings{Mode: m, Mechanisms: m.Mechanisms()})
}

func TestWork(t *testing.T) {
	const delay = time.Second
	const cancelAfter = 100 * time.Millisecond
	tests := []struct {
		name     string
		set      faults.Set
		mode     mode.Mode
		wantTook time.Duration
		wantErr  error
	}{
		{"no fault returns at once", faults.Set{}, mode.Budgeted, 0, nil},
		{"budgeted: ends with the caller", faults.Set{"M": {Latency: delay}}, mode.Budgeted, cancelAfter, errCallerLeft},
		{"naive: blocks the whole delay", faults.Set{"M": {Latency: delay}}, mode.Naive, delay, nil},
		{"hang adds to latency", faults.Set{"M": {Latency: delay, Hang: delay}}, mode.Naive, 2 * delay, nil},
		{"fallback spec applies", faults.Set{"*": {Latency: delay}}, mode.Naive, delay, nil},
		{"budgeted: done before the caller leaves", faults.Set{"M": {Latency: cancelAfter / 2}}, mode.Budgeted, cancelAfter / 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeoutCause(t.Context(), cancelAfter, errCallerLeft)
				defer cancel()
				in := faults.NewInjector(tt.set, live(tt.mode))
				start := time.Now()
				err := in.Work(ctx, "M")
				if took := time.Since(start); took != tt.wantTook {
					t.Errorf("Work took %v, want %v", took, tt.wantTook)
				}
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Work() = %v, want %v", err, tt.wantErr)
				}
			})
		})
	}
}

// The rule is the mode's in force when the wait starts: a switch applies
// to the next call.
func TestWorkFollowsTheModeSwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		settings := live(mode.Naive)
		in := faults.NewInjector(faults.Set{"*": {Latency: time.Second}}, settings)
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(errCallerLeft)
		if err := in.Work(ctx, "M"); err != nil {
			t.Errorf("naive Work on a cancelled context = %v, want nil after the whole wait", err)
		}
		settings.Switch(mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms()})
		start := time.Now()
		if err := in.Work(ctx, "M"); !errors.Is(err, errCallerLeft) || time.Since(start) != 0 {
			t.Errorf("budgeted Work on a cancelled context = %v after %v, want the cause at once", err, time.Since(start))
		}
	})
}

func TestWorkAlreadyCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(errCallerLeft)

		budgeted := faults.NewInjector(faults.Set{"*": {Hang: faults.DefaultHang}}, live(mode.Budgeted))
		start := time.Now()
		if err := budgeted.Work(ctx, "M"); !errors.Is(err, errCallerLeft) {
			t.Errorf("budgeted Work() = %v, want the context's cause %v", err, errCallerLeft)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("budgeted Work on a cancelled context took %v, want 0", took)
		}

		naive := faults.NewInjector(faults.Set{"*": {Hang: faults.DefaultHang}}, live(mode.Naive))
		start = time.Now()
		if err := naive.Work(ctx, "M"); err != nil {
			t.Errorf("naive Work() = %v, want nil", err)
		}
		if took := time.Since(start); took != faults.DefaultHang {
			t.Errorf("naive Work on a cancelled context took %v, want the full %v", took, faults.DefaultHang)
		}
	})
}

// Refuse turns away the share of calls its rate says, at once and with
// the not-processed reason, and does nothing to Work: a refusal is the
// door's, the work's own failures are the error rate's.
func TestRefuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := faults.NewInjector(faults.Set{"Always": {Latency: time.Second, RefuseRate: 1}, "Never": {Latency: time.Second}}, live(mode.Budgeted))
		start := time.Now()
		for i := range 50 {
			err := in.Refuse("Always")
			if !errors.Is(err, faults.ErrRefused) || apperr.ReasonOf(err) != apperr.ReasonNotProcessed || apperr.GRPCCode(err) != codes.Unavailable {
				t.Fatalf("call %d: Refuse(Always) = %v, want ErrRefused, Unavailable and not processed", i, err)
			}
			if err := in.Refuse("Never"); err != nil {
				t.Fatalf("call %d: Refuse(Never) = %v, want nil", i, err)
			}
			if err := in.Refuse("Unknown"); err != nil {
				t.Fatalf("call %d: Refuse of a method with no spec = %v, want nil", i, err)
			}
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("refusing took %v: a refusal does no work", took)
		}
		if err := in.Work(t.Context(), "Always"); err != nil {
			t.Errorf("Work(Always) = %v: the refuse rate is the door's, not the work's", err)
		}
	})
	in := faults.NewInjector(faults.Set{"*": {RefuseRate: 0.5}}, nil)
	refused := 0
	for range 2000 {
		if in.Refuse("M") != nil {
			refused++
		}
	}
	if refused < 800 || refused > 1200 {
		t.Errorf("refuse-rate 0.5 refused %d of 2000 calls", refused)
	}
}

func TestWorkErrorRate(t *testing.T) {
	tests := []struct {
		name    string
		spec    faults.Spec
		wantErr error
	}{
		{"never fails", faults.Spec{Latency: time.Second}, nil},
		{"always fails, after its work", faults.Spec{Latency: time.Second, ErrorRate: 1}, sim.ErrInjected},
		{"fails without work", faults.Spec{ErrorRate: 1}, sim.ErrInjected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := faults.NewInjector(faults.Set{"M": tt.spec}, live(mode.Budgeted))
				start := time.Now()
				for i := range 20 {
					if err := in.Work(t.Context(), "M"); !errors.Is(err, tt.wantErr) {
						t.Fatalf("call %d: Work() = %v, want %v", i, err, tt.wantErr)
					}
				}
				if took := time.Since(start); took != 20*tt.spec.Latency {
					t.Errorf("20 calls took %v, want %v: a failing call still does its work", took, 20*tt.spec.Latency)
				}
			})
		})
	}
}

// Work that took time is a hop of the request, named as the waterfall
// names it, with how it ended and when it began (here, as the request
// arrived); no work, no hop.
func TestWorkRecordsTheHop(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		spec        faults.Spec
		mode        mode.Mode
		budget      time.Duration
		wantHops    []timing.Hop
		wantErrKind error
	}{
		{"the gateway's own work", sim.GatewayCheckout, faults.Spec{Latency: 100 * time.Millisecond}, mode.Budgeted, time.Second,
			[]timing.Hop{{Name: "gateway", Took: 100 * time.Millisecond, Outcome: "ok", HasStart: true}}, nil},
		{"orders' final write", sim.OrdersFinish, faults.Spec{Latency: 80 * time.Millisecond}, mode.Naive, time.Second,
			[]timing.Hop{{Name: "finish", Took: 80 * time.Millisecond, Outcome: "ok", HasStart: true}}, nil},
		{"the budget ran out during it", sim.GatewayCheckout, faults.Spec{Latency: time.Second}, mode.Budgeted, 300 * time.Millisecond,
			[]timing.Hop{{Name: "gateway", Took: 300 * time.Millisecond, Outcome: "budget_exhausted", HasStart: true}}, context.DeadlineExceeded},
		{"a failure the error rate chose", sim.ShippingCreateShipment, faults.Spec{Latency: 10 * time.Millisecond, ErrorRate: 1}, mode.Budgeted, time.Second,
			[]timing.Hop{{Name: "carrier", Took: 10 * time.Millisecond, Outcome: "error", HasStart: true}}, sim.ErrInjected},
		{"no work, no hop", sim.CatalogReserveStock, faults.Spec{}, mode.Budgeted, time.Second, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, rec := timing.WithRecorder(t.Context())
				ctx, cancel := context.WithTimeout(ctx, tt.budget)
				defer cancel()
				in := faults.NewInjector(faults.Set{tt.method: tt.spec}, live(tt.mode))
				if err := in.Work(ctx, tt.method); !errors.Is(err, tt.wantErrKind) {
					t.Errorf("Work() = %v, want %v", err, tt.wantErrKind)
				}
				if got := rec.Hops(); !slices.Equal(got, tt.wantHops) {
					t.Errorf("hops = %+v, want %+v", got, tt.wantHops)
				}
			})
		})
	}
}

// LogNormalCDF is the distribution Spec.Duration draws from: its median
// and 99th percentile are the spec's, and the share of draws at most d
// matches it.
func TestLogNormalCDFIsTheDrawnDistribution(t *testing.T) {
	s := faults.Spec{P50: 100 * time.Millisecond, P99: 400 * time.Millisecond}
	if got := faults.LogNormalCDF(s.P50, s.P99, s.P50); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("CDF at p50 = %v, want 0.5", got)
	}
	if got := faults.LogNormalCDF(s.P50, s.P99, s.P99); math.Abs(got-0.99) > 1e-6 {
		t.Errorf("CDF at p99 = %v, want 0.99", got)
	}
	if got := faults.LogNormalCDF(s.P50, s.P50, s.P50-time.Microsecond); got != 0 {
		t.Errorf("CDF of a point just below it = %v, want 0", got)
	}
	const n = 20000
	at := 200 * time.Millisecond
	var below int
	for range n {
		if s.Duration() <= at {
			below++
		}
	}
	// The binomial share's standard deviation is under 0.004 at n = 20000;
	// the bound is five of them.
	if got, want := float64(below)/n, faults.LogNormalCDF(s.P50, s.P99, at); math.Abs(got-want) > 0.02 {
		t.Errorf("share of draws ≤ %v = %.3f, CDF says %.3f", at, got, want)
	}
}

// TestWorkSlots: a method with slots works on that many calls at once, and
// the rest wait in line, their wait counted in their time.
func TestWorkSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := faults.NewInjector(faults.Set{"M": {Latency: 100 * time.Millisecond, Slots: 2}}, live(mode.Budgeted))
		took := make(chan time.Duration, 5)
		start := time.Now()
		for range 5 {
			go func() {
				if err := in.Work(t.Context(), "M"); err != nil {
					t.Error(err)
				}
				took <- time.Since(start)
			}()
		}
		var got []time.Duration
		for range 5 {
			got = append(got, <-took)
		}
		slices.Sort(got)
		want := []time.Duration{100, 100, 200, 200, 300}
		for i := range want {
			want[i] *= time.Millisecond
		}
		if !slices.Equal(got, want) {
			t.Errorf("five calls on two slots of 100 ms ended at %v, want %v", got, want)
		}
	})
}

// TestWorkSlotsWaitHonoursTheCaller: in budgeted mode a call waiting in
// line leaves it when its caller does; in naive mode it waits its turn.
func TestWorkSlotsWaitHonoursTheCaller(t *testing.T) {
	for _, tc := range []struct {
		mode mode.Mode
		want time.Duration
		err  error
	}{{mode.Budgeted, 50 * time.Millisecond, errCallerLeft}, {mode.Naive, 2 * time.Second, nil}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := faults.NewInjector(faults.Set{"M": {Latency: time.Second, Slots: 1}}, live(tc.mode))
				first := make(chan error)
				go func() { first <- in.Work(context.Background(), "M") }()
				defer func() { <-first }()
				synctest.Wait()
				ctx, cancel := context.WithTimeoutCause(t.Context(), 50*time.Millisecond, errCallerLeft)
				defer cancel()
				start := time.Now()
				err := in.Work(ctx, "M")
				if took := time.Since(start); took != tc.want || !errors.Is(err, tc.err) {
					t.Errorf("the second call: %v after %v, want %v after %v", err, took, tc.err, tc.want)
				}
			})
		})
	}
}

// TestReplaceKeepsOrChangesTheLine: the same slots keep the line, and the
// calls in it; other slots start a new one, so the capacity is the new
// figure once the old line's calls end.
func TestReplaceKeepsOrChangesTheLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slots int
		want  time.Duration
	}{{"same slots", 1, 200 * time.Millisecond}, {"more slots", 2, 100 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := faults.NewInjector(faults.Set{"M": {Latency: 100 * time.Millisecond, Slots: 1}}, live(mode.Budgeted))
				go func() { _ = in.Work(t.Context(), "M") }()
				synctest.Wait()
				in.Replace(faults.Set{"M": {Latency: 100 * time.Millisecond, Slots: tc.slots}})
				start := time.Now()
				if err := in.Work(t.Context(), "M"); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != tc.want {
					t.Errorf("a call after the replace took %v, want %v", took, tc.want)
				}
			})
		})
	}
}
