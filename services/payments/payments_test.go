package payments_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
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
	svc, err := payments.NewService(store, faults.NewInjector(faults.Set{"CreateCharge": {Latency: pspLatency}}), live(m))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

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

func TestNewServiceRequiresDependencies(t *testing.T) {
	store, psp, settings := payments.NewMemStore(), faults.NewInjector(nil), live(mode.Budgeted)
	tests := []struct {
		name     string
		store    payments.Store
		psp      *faults.Injector
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
		want := charge("pay_ord_1")
		want.ID, want.Status = c.ID, payments.StatusSucceeded
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
		svc, err := payments.NewService(payments.NewMemStore(), faults.NewInjector(nil), live(mode.Budgeted))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateCharge(context.Background(), charge(strings.Repeat("k", 255))); err != nil {
			t.Errorf("255-character key rejected: %v", err)
		}
	})
}

// A PSP slower than the caller's budget: budgeted mode gives up with a
// Timeout when the caller does and stores nothing; naive mode waits the
// PSP out and charges.
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
				store := payments.NewMemStore()
				svc := newService(t, store, tt.mode)
				ctx, cancel := context.WithTimeout(t.Context(), budget)
				defer cancel()
				start := time.Now()
				_, err := svc.CreateCharge(ctx, charge("pay_ord_1"))
				if took := time.Since(start); took != tt.wantTook {
					t.Errorf("CreateCharge took %v, want %v", took, tt.wantTook)
				}
				if codeOf(err) != tt.wantCode {
					t.Errorf("error = %v, want code %q", err, tt.wantCode)
				}
				if tt.wantCode == apperr.Timeout && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("timeout error %v does not wrap the context's cause", err)
				}
				_, getErr := store.GetByKey(context.Background(), "pay_ord_1")
				if stored := getErr == nil; stored != (tt.wantCode == "") {
					t.Errorf("charge stored = %v, want %v", stored, tt.wantCode == "")
				}
			})
		})
	}
}

func TestGetCharge(t *testing.T) {
	ctx := context.Background()
	svc, err := payments.NewService(payments.NewMemStore(), faults.NewInjector(nil), live(mode.Budgeted))
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

// Run with -race: concurrent charges under one key store one charge.
func TestMemStoreCreateConcurrent(t *testing.T) {
	s := payments.NewMemStore()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]bool{}
		created int
	)
	for range 20 {
		wg.Go(func() {
			c, isNew, err := s.Create(context.Background(), charge("pay_ord_1"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[c.ID] = true
			if isNew {
				created++
			}
		})
	}
	wg.Wait()
	if created != 1 || len(ids) != 1 {
		t.Errorf("20 concurrent creates under one key: %d created, %d distinct IDs; want 1 and 1", created, len(ids))
	}
}
