package shipping_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/shipping"
)

// newStoreFunc returns an empty store of one implementation, for one test.
type newStoreFunc func(t *testing.T) shipping.Store

// testStore is the contract of shipping.Store (see its doc comment), run
// against every implementation: the memory store and PostgreSQL
// (pgstore_test.go). Run it with -race.
func testStore(t *testing.T, newStore newStoreFunc) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, newStoreFunc)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"OnePerOrder", testOnePerOrder},
		{"CreateConcurrent", testCreateConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newStore)
		})
	}
}

func storeShipment(order string) shipping.Shipment {
	return shipping.Shipment{OrderID: order, Address: "1 Loop Rd", Status: shipping.StatusBooked,
		Items: []shipping.Item{{SKU: "tea-sencha", Qty: 2}, {SKU: "mug-stoneware", Qty: 1}}}
}

func storeCode(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func testCreateAndGet(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	want := storeShipment("ord_1")
	got, err := s.Create(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == "" {
		t.Fatal("the shipment has no ID")
	}
	want.ID = got.ID
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Create = %+v, want %+v", got, want)
	}
	if read, err := s.Get(ctx, got.ID); err != nil || !reflect.DeepEqual(read, want) {
		t.Errorf("Get = %+v, %v; want %+v", read, err, want)
	}
	if _, err := s.Get(ctx, "shp-nope"); storeCode(err) != apperr.NotFound {
		t.Errorf("Get(unknown) error = %v, want NotFound", err)
	}
	other, err := s.Create(ctx, storeShipment("ord_2"))
	if err != nil || other.ID == got.ID {
		t.Errorf("Create for another order = %+v, %v; want a shipment of its own", other, err)
	}
}

// A second Create for an order returns the first shipment, whatever it
// asks for.
func testOnePerOrder(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	first, err := s.Create(ctx, storeShipment("ord_1"))
	if err != nil {
		t.Fatal(err)
	}
	retry := storeShipment("ord_1")
	retry.Address = "2 Elsewhere St"
	again, err := s.Create(ctx, retry)
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Errorf("second Create = %+v, %v; want the first %+v", again, err, first)
	}
}

// 50 bookings for one order at once make one shipment; bookings for
// different orders at once make one each.
func testCreateConcurrent(t *testing.T, newStore newStoreFunc) {
	s := newStore(t)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		one   = map[string]bool{}
		each  = map[string]bool{}
		start = make(chan struct{})
	)
	for i := range 50 {
		wg.Go(func() {
			<-start
			sh, err := s.Create(context.Background(), storeShipment("ord_same"))
			if err != nil {
				t.Error(err)
				return
			}
			own, err := s.Create(context.Background(), storeShipment("ord_"+strconv.Itoa(i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			one[sh.ID], each[own.ID] = true, true
		})
	}
	close(start)
	wg.Wait()
	if len(one) != 1 {
		t.Errorf("50 concurrent bookings for one order made %d shipments, want 1", len(one))
	}
	if len(each) != 50 {
		t.Errorf("50 bookings for 50 orders made %d shipments, want 50", len(each))
	}
}

// TestStoreContract runs the Store contract against the memory store and
// PostgreSQL (skipped without MERCADO_TEST_DATABASE_URL).
func TestStoreContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testStore(t, func(*testing.T) shipping.Store { return shipping.NewMemStore() })
	})
	t.Run("postgres", func(t *testing.T) { testStore(t, pgStoreForTest(t)) })
}
