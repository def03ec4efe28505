package payments_test

import (
	"context"
	"errors"
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
	"github.com/mercado-lab/mercado/services/payments"
)

// pspLatency is how long the simulated payment provider takes per charge.
// Inside a synctest bubble it costs no real time, and how much fake time a
// call took tells whether it went to the PSP.
const pspLatency = 760 * time.Millisecond

func live(m mode.Mode) *mode.Live {
	return mode.NewLive(mode.Settings{Mode: m, Mechanisms: m.Mechanisms()})
}

func newService(t *testing.T, store payments.Store, m mode.Mode) *payments.Service {
	t.Helper()
	return newServiceWith(t, store, m, faults.Set{"CreateCharge": {Latency: pspLatency}})
}

func newServiceWith(t *testing.T, store payments.Store, m mode.Mode, psp faults.Set) *payments.Service {
	t.Helper()
	settings := live(m)
	svc, err := payments.NewService(store, faults.NewInjector(psp, settings), settings)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// countingStore is a provider's store that counts the charges it
// created and the answers the provider recorded: the provider records
// each answer once it has worked on a charge (a void is no answer: it has
// no order), so answered is the number of times it worked.
type countingStore struct {
	payments.Store
	mu       sync.Mutex
	created  int
	answered int
}

var _ payments.Store = (*countingStore)(nil)

func (s *countingStore) Record(ctx context.Context, c payments.Charge) (payments.Charge, bool, error) {
	stored, created, err := s.Store.Record(ctx, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if created {
		s.created++
	}
	if c.OrderID != "" {
		s.answered++
	}
	return stored, created, err
}

func (s *countingStore) counts() (created, answered int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created, s.answered
}

func newCountingStore() *countingStore { return &countingStore{Store: payments.NewMemStore()} }

func codeOf(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func charge(key string) payments.Charge {
	return payments.Charge{PaymentKey: key, OrderID: "ord_1", Customer: "ada", AmountCents: 2500, RequestID: "req-1"}
}

func statusOf(t *testing.T, store payments.Store, key string) payments.Status {
	t.Helper()
	c, err := store.GetByKey(context.Background(), key)
	if err != nil {
		t.Fatalf("GetByKey(%q): %v", key, err)
	}
	return c.Status
}

func TestNewServiceRequiresDependencies(t *testing.T) {
	settings := live(mode.Budgeted)
	store, psp := payments.NewMemStore(), faults.NewInjector(nil, settings)
	tests := []struct {
		name     string
		store    payments.Store
		psp      sim.Simulator
		settings *mode.Live
	}{
		{"no store", nil, psp, settings},
		{"no psp", store, nil, settings},
		{"no settings", store, psp, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if svc, err := payments.NewService(tt.store, tt.psp, tt.settings); err == nil {
				t.Errorf("NewService = %v, want an error", svc)
			}
		})
	}
}

func TestCreateCharge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newService(t, payments.NewMemStore(), mode.Budgeted)
		start := time.Now()
		c, err := svc.CreateCharge(context.Background(), charge("pay_ord_1"))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != pspLatency {
			t.Errorf("first charge took %v, want the PSP's %v", took, pspLatency)
		}
		if !c.CreatedAt.Equal(start) {
			t.Errorf("CreatedAt = %v, want when the charge was asked for (%v)", c.CreatedAt, start)
		}
		want := charge("pay_ord_1")
		want.ID, want.Status, want.CreatedAt = c.ID, payments.StatusSucceeded, c.CreatedAt
		if c.ID == "" || c != want {
			t.Errorf("CreateCharge = %+v, want %+v with an ID", c, want)
		}
	})
}

// The payment key makes a charge exactly-once: a retry under the same key
// returns the first charge and never reaches the PSP again.
func TestCreateChargeSameKey(t *testing.T) {
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		t.Run(string(m), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				svc := newService(t, payments.NewMemStore(), m)
				first, err := svc.CreateCharge(ctx, charge("pay_ord_1"))
				if err != nil {
					t.Fatal(err)
				}

				retry := charge("pay_ord_1")
				retry.RequestID = "req-2"
				start := time.Now()
				second, err := svc.CreateCharge(ctx, retry)
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != 0 {
					t.Errorf("the retry took %v: it called the PSP again", took)
				}
				if second != first {
					t.Errorf("retry returned %+v, want the first charge %+v", second, first)
				}

				other, err := svc.CreateCharge(ctx, charge("pay_ord_2"))
				if err != nil {
					t.Fatal(err)
				}
				if other.ID == first.ID {
					t.Errorf("a different key got the same charge %q", other.ID)
				}
			})
		})
	}
}

// Fifty attempts under one key at once — retries from every layer landing
// together — reach the provider once. The first waits for the provider;
// the others wait for its answer and get it too.
func TestCreateChargeConcurrentSameKey(t *testing.T) {
	const callers = 50
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		t.Run(string(m), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newCountingStore()
				svc := newService(t, store, m)
				type answer struct {
					c    payments.Charge
					err  error
					took time.Duration
				}
				answers := make([]answer, callers)
				var wg sync.WaitGroup
				for i := range callers {
					wg.Go(func() {
						start := time.Now()
						c, err := svc.CreateCharge(context.Background(), charge("pay_ord_1"))
						answers[i] = answer{c, err, time.Since(start)}
					})
				}
				wg.Wait()
				synctest.Wait()

				if created, answered := store.counts(); created != 1 || answered != 1 {
					t.Errorf("%d callers: %d charges created, %d provider answers; want 1 and 1", callers, created, answered)
				}
				for i, a := range answers {
					if a.err != nil {
						t.Errorf("caller %d: %v", i, a.err)
						continue
					}
					if a.c.ID != answers[0].c.ID || a.c.Status != payments.StatusSucceeded || a.took != pspLatency {
						t.Errorf("caller %d got charge %q %s after %v, caller 0 %q: want one charge, succeeded after the provider's %v",
							i, a.c.ID, a.c.Status, a.took, answers[0].c.ID, pspLatency)
					}
				}
				if got := statusOf(t, store, "pay_ord_1"); got != payments.StatusSucceeded {
					t.Errorf("stored status %q, want succeeded", got)
				}
			})
		})
	}
}

func TestCreateChargeValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(*payments.Charge)
		want   string
	}{
		{"no key", func(c *payments.Charge) { c.PaymentKey = "" }, "payment_key is required"},
		{"key over 255", func(c *payments.Charge) { c.PaymentKey = strings.Repeat("k", 256) }, "longer than 255"},
		{"no order", func(c *payments.Charge) { c.OrderID = "" }, "order_id is required"},
		{"zero amount", func(c *payments.Charge) { c.AmountCents = 0 }, "got 0"},
		{"negative amount", func(c *payments.Charge) { c.AmountCents = -1 }, "got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := payments.NewMemStore()
				svc := newService(t, store, mode.Budgeted)
				c := charge("pay_ord_1")
				tt.change(&c)
				start := time.Now()
				_, err := svc.CreateCharge(context.Background(), c)
				if codeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error = %v, want code %q containing %q", err, apperr.Invalid, tt.want)
				}
				if took := time.Since(start); took != 0 {
					t.Errorf("an invalid charge took %v: it reached the PSP", took)
				}
				if _, err := store.GetByKey(context.Background(), c.PaymentKey); err == nil {
					t.Error("an invalid charge was stored")
				}
			})
		})
	}
	t.Run("key of exactly 255", func(t *testing.T) {
		svc, err := payments.NewService(payments.NewMemStore(), faults.NewInjector(nil, nil), live(mode.Budgeted))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateCharge(context.Background(), charge(strings.Repeat("k", 255))); err != nil {
			t.Errorf("255-character key rejected: %v", err)
		}
	})
}

// A PSP slower than the caller's budget. Once sent, the charge is the
// provider's, in both modes. Budgeted mode stops waiting when the caller's
// budget ends and answers DeadlineExceeded — the charge pending, not
// "nothing charged" — and the charge succeeds later; a retry meanwhile
// waits for that answer and does not charge again. Naive mode waits the
// PSP out.
func TestCreateChargeSlowPSP(t *testing.T) {
	const budget = 300 * time.Millisecond
	tests := []struct {
		mode     mode.Mode
		wantTook time.Duration
		wantCode apperr.Code
	}{
		{mode.Budgeted, budget, apperr.Timeout},
		{mode.Naive, pspLatency, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newCountingStore()
				svc := newService(t, store, tt.mode)
				ctx, cancel := context.WithTimeout(t.Context(), budget)
				defer cancel()
				start := time.Now()
				c, err := svc.CreateCharge(ctx, charge("pay_ord_1"))
				if took := time.Since(start); took != tt.wantTook {
					t.Errorf("CreateCharge took %v, want %v", took, tt.wantTook)
				}
				if codeOf(err) != tt.wantCode {
					t.Errorf("error = %v, want code %q", err, tt.wantCode)
				}
				if tt.wantCode == "" {
					if c.Status != payments.StatusSucceeded {
						t.Errorf("naive caller got %+v, want the succeeded charge", c)
					}
					return
				}

				if !errors.Is(err, context.DeadlineExceeded) || apperr.GRPCCode(err) != codes.DeadlineExceeded {
					t.Errorf("timeout error %v: want DeadlineExceeded wrapping the context's cause", err)
				}
				if got, err := svc.GetCharge(context.Background(), "pay_ord_1"); err != nil || got.Status != payments.StatusPending {
					t.Errorf("GetCharge when the caller gave up = %+v, %v; want pending", got, err)
				}
				retryStart := time.Now()
				retry, err := svc.CreateCharge(context.Background(), charge("pay_ord_1"))
				if took := time.Since(retryStart); err != nil || retry.Status != payments.StatusSucceeded || took != pspLatency-budget {
					t.Errorf("retry while pending = %+v, %v after %v; want the charge succeeded when the provider answers, after %v",
						retry, err, took, pspLatency-budget)
				}
				if got := statusOf(t, store, "pay_ord_1"); got != payments.StatusSucceeded {
					t.Errorf("the provider's status after it answered = %q, want succeeded", got)
				}
				if created, answered := store.counts(); created != 1 || answered != 1 {
					t.Errorf("%d charges created, %d provider answers; want 1 and 1", created, answered)
				}
			})
		})
	}
}

// A provider that fails takes no money: the charge is stored failed, the
// caller is told Unavailable, and a retry gets the failed charge back
// without charging.
func TestCreateChargeProviderFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newCountingStore()
		svc := newServiceWith(t, store, mode.Budgeted, faults.Set{"CreateCharge": {Latency: pspLatency, ErrorRate: 1}})
		c, err := svc.CreateCharge(context.Background(), charge("pay_ord_1"))
		if codeOf(err) != apperr.Unavailable || !errors.Is(err, sim.ErrInjected) {
			t.Errorf("error = %v, want Unavailable from the provider", err)
		}
		if c.Status != payments.StatusFailed || statusOf(t, store, "pay_ord_1") != payments.StatusFailed {
			t.Errorf("charge = %+v, want failed, and stored so", c)
		}
		start := time.Now()
		again, err := svc.CreateCharge(context.Background(), charge("pay_ord_1"))
		if err != nil || again.Status != payments.StatusFailed || again.ID != c.ID || time.Since(start) != 0 {
			t.Errorf("retry = %+v, %v; want the failed charge at once", again, err)
		}
		if _, answered := store.counts(); answered != 1 {
			t.Errorf("%d provider answers, want 1", answered)
		}
	})
}

// VoidCharge makes sure nothing will be charged under a key: a key the
// provider never had is remembered failed, and a charge attempt arriving
// later (a retry still on its way when the reconciler gave up) gets that
// failed charge and is not worked on. A key the provider has is returned
// as it is: a charge at the provider cannot be called back.
func TestVoidCharge(t *testing.T) {
	t.Run("unknown key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			store := newCountingStore()
			svc := newService(t, store, mode.Budgeted)
			v, err := svc.VoidCharge(ctx, "pay_ord_1")
			if err != nil || v.Status != payments.StatusFailed || v.ID == "" || v.PaymentKey != "pay_ord_1" {
				t.Fatalf("VoidCharge = %+v, %v; want a failed record under the key", v, err)
			}
			start := time.Now()
			late, err := svc.CreateCharge(ctx, charge("pay_ord_1"))
			if err != nil || late.Status != payments.StatusFailed || late.ID != v.ID {
				t.Errorf("CreateCharge after the void = %+v, %v; want the voided record", late, err)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("CreateCharge after the void took %v: it reached the provider", took)
			}
			if _, answered := store.counts(); answered != 0 {
				t.Errorf("%d provider answers, want none", answered)
			}
			again, err := svc.VoidCharge(ctx, "pay_ord_1")
			if err != nil || again != v {
				t.Errorf("second VoidCharge = %+v, %v; want %+v", again, err, v)
			}
			if st, _ := svc.Stats(ctx); st != (payments.Stats{}) {
				t.Errorf("Stats = %+v: a void is not a charge", st)
			}
		})
	})
	t.Run("charge in flight", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := newCountingStore()
			svc := newService(t, store, mode.Budgeted)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if _, err := svc.CreateCharge(ctx, charge("pay_ord_1")); codeOf(err) != apperr.Timeout {
				t.Fatalf("CreateCharge = %v, want the caller's timeout", err)
			}
			v, err := svc.VoidCharge(context.Background(), "pay_ord_1")
			if err != nil || v.Status != payments.StatusPending {
				t.Errorf("VoidCharge of a charge at the provider = %+v, %v; want it pending", v, err)
			}
			time.Sleep(pspLatency)
			v, err = svc.VoidCharge(context.Background(), "pay_ord_1")
			if err != nil || v.Status != payments.StatusSucceeded {
				t.Errorf("VoidCharge after the provider answered = %+v, %v; want the succeeded charge", v, err)
			}
		})
	})
	t.Run("no key", func(t *testing.T) {
		svc := newService(t, payments.NewMemStore(), mode.Budgeted)
		if _, err := svc.VoidCharge(context.Background(), ""); codeOf(err) != apperr.Invalid {
			t.Errorf("VoidCharge without a key = %v, want %q", err, apperr.Invalid)
		}
	})
}

func TestGetCharge(t *testing.T) {
	ctx := context.Background()
	svc, err := payments.NewService(payments.NewMemStore(), faults.NewInjector(nil, nil), live(mode.Budgeted))
	if err != nil {
		t.Fatal(err)
	}
	created, err := svc.CreateCharge(ctx, charge("pay_ord_1"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		key      string
		wantCode apperr.Code
	}{
		{"found", "pay_ord_1", ""},
		{"unknown key", "pay_ord_2", apperr.NotFound},
		{"no key", "", apperr.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := svc.GetCharge(ctx, tt.key)
			if codeOf(err) != tt.wantCode {
				t.Fatalf("GetCharge(%q) error = %v, want code %q", tt.key, err, tt.wantCode)
			}
			if err == nil && got != created {
				t.Errorf("GetCharge = %+v, want %+v", got, created)
			}
		})
	}
}

// The provider remembers each key's answer in its store, not in payments'
// process: a payments process started afresh on the same store — after a
// crash, or another replica — answers a key the provider has answered
// with that answer, even when the provider would decline it now, and
// charges nothing again; asked by key, it tells the answer too.
func TestProviderRemembersAcrossProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := newCountingStore()
		first, err := newService(t, store, mode.Budgeted).CreateCharge(ctx, charge("pay_ord_1"))
		if err != nil || first.Status != payments.StatusSucceeded {
			t.Fatalf("first charge = %+v, %v", first, err)
		}

		declining := faults.Set{"CreateCharge": {Latency: pspLatency, ErrorRate: 1}}
		restarted := newServiceWith(t, store, mode.Budgeted, declining)
		if got, err := restarted.GetCharge(ctx, "pay_ord_1"); err != nil || got != first {
			t.Errorf("GetCharge after a restart = %+v, %v; want %+v", got, err, first)
		}
		again, err := newServiceWith(t, store, mode.Budgeted, declining).CreateCharge(ctx, charge("pay_ord_1"))
		if err != nil || again != first {
			t.Errorf("the key charged again after a restart = %+v, %v; want the first answer %+v", again, err, first)
		}
		if st, _ := restarted.Stats(ctx); st.Succeeded != 1 || st.Duplicates != 0 {
			t.Errorf("Stats = %+v; want one charge", st)
		}
		if created, _ := store.counts(); created != 1 {
			t.Errorf("%d charges created, want 1", created)
		}
		if _, err := restarted.GetCharge(ctx, "pay_ord_2"); codeOf(err) != apperr.NotFound {
			t.Errorf("GetCharge of a key the provider never had = %v, want NotFound", err)
		}
	})
}
