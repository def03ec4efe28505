package shipping_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/services/shipping"
)

func live(m mode.Mode) *mode.Live {
	return mode.NewLive(mode.Settings{Mode: m, Mechanisms: m.Mechanisms()})
}

func newService(t *testing.T, store shipping.Store, set faults.Set, m mode.Mode) *shipping.Service {
	t.Helper()
	svc, err := shipping.NewService(store, faults.NewInjector(set, live(m)))
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

func shipment(order string) shipping.Shipment {
	return shipping.Shipment{OrderID: order, Address: "1 Loop Rd", Items: []shipping.Item{{SKU: "tea-sencha", Qty: 2}}}
}

func TestNewServiceRequiresDependencies(t *testing.T) {
	store, carrier := shipping.NewMemStore(), faults.NewInjector(nil, live(mode.Budgeted))
	tests := []struct {
		name    string
		store   shipping.Store
		carrier sim.Simulator
	}{
		{"no store", nil, carrier},
		{"no carrier", store, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if svc, err := shipping.NewService(tt.store, tt.carrier); err == nil {
				t.Errorf("NewService = %v, want an error", svc)
			}
		})
	}
}

func TestCreateShipment(t *testing.T) {
	svc := newService(t, shipping.NewMemStore(), nil, mode.Budgeted)
	got, err := svc.CreateShipment(context.Background(), shipment("ord_1"))
	if err != nil {
		t.Fatal(err)
	}
	want := shipment("ord_1")
	if got.ID == "" || got.OrderID != want.OrderID || got.Address != want.Address ||
		!slices.Equal(got.Items, want.Items) || got.Status != shipping.StatusBooked {
		t.Errorf("CreateShipment = %+v, want %+v booked with an ID", got, want)
	}
	fetched, err := svc.GetShipment(context.Background(), got.ID)
	if err != nil || fetched.ID != got.ID || fetched.OrderID != "ord_1" {
		t.Errorf("GetShipment(%q) = %+v, %v", got.ID, fetched, err)
	}
}

// An order has one shipment: booking it again returns the first.
func TestCreateShipmentOnePerOrder(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, shipping.NewMemStore(), nil, mode.Budgeted)
	first, err := svc.CreateShipment(ctx, shipment("ord_1"))
	if err != nil {
		t.Fatal(err)
	}
	again := shipment("ord_1")
	again.Address = "2 Other St"
	second, err := svc.CreateShipment(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID || second.Address != first.Address {
		t.Errorf("second booking for ord_1 = %+v, want the first %+v", second, first)
	}
	other, err := svc.CreateShipment(ctx, shipment("ord_2"))
	if err != nil {
		t.Fatal(err)
	}
	if other.ID == first.ID {
		t.Errorf("two orders share shipment %q", other.ID)
	}
}

// Run with -race: concurrent bookings for one order make one shipment.
func TestMemStoreCreateConcurrent(t *testing.T) {
	s := shipping.NewMemStore()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]bool{}
	)
	for range 20 {
		wg.Go(func() {
			sh, err := s.Create(context.Background(), shipment("ord_1"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[sh.ID] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Errorf("20 concurrent bookings for one order made %d shipments, want 1", len(ids))
	}
}

func TestCreateShipmentValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(*shipping.Shipment)
		want   string
	}{
		{"no order", func(s *shipping.Shipment) { s.OrderID = "" }, "order_id is required"},
		{"no address", func(s *shipping.Shipment) { s.Address = "" }, "address is required"},
		{"no items", func(s *shipping.Shipment) { s.Items = nil }, "1 to 50 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := shipping.NewMemStore()
				svc := newService(t, store, faults.Set{"CreateShipment": {Hang: time.Hour}}, mode.Budgeted)
				sh := shipment("ord_1")
				tt.change(&sh)
				start := time.Now()
				_, err := svc.CreateShipment(context.Background(), sh)
				if codeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error = %v, want code %q containing %q", err, apperr.Invalid, tt.want)
				}
				if took := time.Since(start); took != 0 {
					t.Errorf("an invalid shipment took %v: it reached the carrier", took)
				}
				if _, err := store.Get(context.Background(), "shp-1"); err == nil {
					t.Error("an invalid shipment was stored")
				}
			})
		})
	}
}

// Lesson 7's degraded shipping: the carrier hangs. Budgeted mode gives up
// with the caller's budget; naive mode waits the hang out.
func TestCreateShipmentCarrierHangs(t *testing.T) {
	const budget, hang = 160 * time.Millisecond, 5 * time.Second
	tests := []struct {
		mode     mode.Mode
		wantTook time.Duration
		wantCode apperr.Code
	}{
		{mode.Budgeted, budget, apperr.Timeout},
		{mode.Naive, hang, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := newService(t, shipping.NewMemStore(), faults.Set{"CreateShipment": {Hang: hang}}, tt.mode)
				ctx, cancel := context.WithTimeout(t.Context(), budget)
				defer cancel()
				start := time.Now()
				_, err := svc.CreateShipment(ctx, shipment("ord_1"))
				if took := time.Since(start); took != tt.wantTook {
					t.Errorf("CreateShipment took %v, want %v", took, tt.wantTook)
				}
				if codeOf(err) != tt.wantCode {
					t.Errorf("error = %v, want code %q", err, tt.wantCode)
				}
			})
		})
	}
}

func TestGetShipment(t *testing.T) {
	svc := newService(t, shipping.NewMemStore(), nil, mode.Budgeted)
	tests := []struct {
		name string
		id   string
		want apperr.Code
	}{
		{"unknown", "shp-404", apperr.NotFound},
		{"empty", "", apperr.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := svc.GetShipment(context.Background(), tt.id); codeOf(err) != tt.want {
				t.Errorf("GetShipment(%q) error = %v, want code %q", tt.id, err, tt.want)
			}
		})
	}
}
