package catalog_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/mercado-lab/mercado/services/catalog"
)

// countingStore is a Store that counts its calls, to show which requests
// the service rejects before touching the store.
type countingStore struct {
	catalog.Store
	calls int
}

var _ catalog.Store = (*countingStore)(nil)

func (s *countingStore) List(ctx context.Context, after string, limit int) ([]catalog.Product, error) {
	s.calls++
	return s.Store.List(ctx, after, limit)
}

func (s *countingStore) Get(ctx context.Context, sku string) (catalog.Product, error) {
	s.calls++
	return s.Store.Get(ctx, sku)
}

func (s *countingStore) Reserve(ctx context.Context, orderID string, lines []catalog.Line, locked func(context.Context) error) (catalog.Reservation, error) {
	s.calls++
	return s.Store.Reserve(ctx, orderID, lines, locked)
}

func (s *countingStore) Release(ctx context.Context, id string) error {
	s.calls++
	return s.Store.Release(ctx, id)
}

func live(m mode.Mode) *mode.Live {
	return mode.NewLive(mode.Settings{Mode: m, Mechanisms: m.Mechanisms()})
}

func newService(t *testing.T, store catalog.Store, set faults.Set, m mode.Mode) *catalog.Service {
	t.Helper()
	svc, err := catalog.NewService(store, faults.NewInjector(set, live(m)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestNewServiceRequiresDependencies(t *testing.T) {
	store, work := catalog.NewMemStore(nil), faults.NewInjector(nil, live(mode.Budgeted))
	tests := []struct {
		name  string
		store catalog.Store
		work  sim.Simulator
	}{
		{"no store", nil, work},
		{"no work", store, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if svc, err := catalog.NewService(tt.store, tt.work, nil); err == nil {
				t.Errorf("NewService = %v, want an error", svc)
			}
		})
	}
}

func TestServiceValidation(t *testing.T) {
	ok := []catalog.Line{{SKU: "tea", Qty: 1}}
	tooMany := make([]catalog.Line, catalog.MaxLines+1)
	for i := range tooMany {
		tooMany[i] = catalog.Line{SKU: "tea", Qty: 1}
	}
	tests := []struct {
		name string
		call func(*catalog.Service) error
		want string
	}{
		{"GetProduct without sku", func(s *catalog.Service) error {
			_, err := s.GetProduct(context.Background(), "")
			return err
		}, "sku is required"},
		{"ReserveStock without order", func(s *catalog.Service) error {
			_, err := s.ReserveStock(context.Background(), "", ok)
			return err
		}, "order_id is required"},
		{"ReserveStock without lines", func(s *catalog.Service) error {
			_, err := s.ReserveStock(context.Background(), "o1", nil)
			return err
		}, "1 to 50 lines, got 0"},
		{"ReserveStock with 51 lines", func(s *catalog.Service) error {
			_, err := s.ReserveStock(context.Background(), "o1", tooMany)
			return err
		}, "1 to 50 lines, got 51"},
		{"ReserveStock line without sku", func(s *catalog.Service) error {
			_, err := s.ReserveStock(context.Background(), "o1", []catalog.Line{{SKU: "tea", Qty: 1}, {Qty: 1}})
			return err
		}, "lines[1].sku is required"},
		{"ReserveStock qty 0", func(s *catalog.Service) error {
			_, err := s.ReserveStock(context.Background(), "o1", []catalog.Line{{SKU: "tea", Qty: 0}})
			return err
		}, "lines[0].qty must be 1 to 1000, got 0"},
		{"ReserveStock negative qty", func(s *catalog.Service) error {
			_, err := s.ReserveStock(context.Background(), "o1", []catalog.Line{{SKU: "tea", Qty: -1}})
			return err
		}, "got -1"},
		{"ReserveStock qty 1001", func(s *catalog.Service) error {
			_, err := s.ReserveStock(context.Background(), "o1", []catalog.Line{{SKU: "tea", Qty: 1001}})
			return err
		}, "got 1001"},
		{"ReleaseStock without id", func(s *catalog.Service) error {
			return s.ReleaseStock(context.Background(), "")
		}, "reservation_id is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &countingStore{Store: catalog.NewMemStore(products())}
			// A fault on every method shows validation comes before the
			// simulated work: a rejected request costs no time.
			svc := newService(t, store, faults.Set{"*": {Hang: time.Hour}}, mode.Budgeted)
			err := tt.call(svc)
			if codeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want code %q containing %q", err, apperr.Invalid, tt.want)
			}
			if store.calls != 0 {
				t.Errorf("the store was called %d times for an invalid request", store.calls)
			}
		})
	}
}

func TestServiceUseCases(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, catalog.NewMemStore(products()), nil, mode.Budgeted)

	ps, next, err := svc.ListProducts(ctx, 0, "")
	if err != nil || len(ps) != 2 || next != "" {
		t.Fatalf("ListProducts = %+v, %q, %v; want 2 products, no next page", ps, next, err)
	}
	ps, next, err = svc.ListProducts(ctx, 1, "")
	if err != nil || len(ps) != 1 || next != ps[0].SKU {
		t.Fatalf("ListProducts(1) = %+v, %q, %v; want 1 product and its SKU to go on after", ps, next, err)
	}
	if ps, next, err = svc.ListProducts(ctx, 1, next); err != nil || len(ps) != 1 || next != "" {
		t.Fatalf("ListProducts(1, next) = %+v, %q, %v; want the last product, no next page", ps, next, err)
	}
	if _, err := svc.GetProduct(ctx, "nope"); codeOf(err) != apperr.NotFound {
		t.Errorf("GetProduct(nope) error = %v, want NotFound", err)
	}
	r, err := svc.ReserveStock(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ReserveStock(ctx, "o2", []catalog.Line{{SKU: "paper", Qty: 1}}); codeOf(err) != apperr.Conflict {
		t.Errorf("ReserveStock with no stock left error = %v, want Conflict", err)
	}
	if err := svc.ReleaseStock(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if p, err := svc.GetProduct(ctx, "paper"); err != nil || p.Stock != 10 {
		t.Errorf("after ReleaseStock, GetProduct(paper) = %+v, %v; want stock 10", p, err)
	}
}

// Each use case does its simulated work first; in budgeted mode the work
// ends with the caller, in naive mode it runs its course.
func TestServiceSimulatedWork(t *testing.T) {
	const latency, budget = 280 * time.Millisecond, 100 * time.Millisecond
	errGone := errors.New("caller gone")
	tests := []struct {
		mode     mode.Mode
		wantTook time.Duration
		wantErr  error
	}{
		{mode.Budgeted, budget, errGone},
		{mode.Naive, latency, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &countingStore{Store: catalog.NewMemStore(products())}
				svc := newService(t, store, faults.Set{"ReserveStock": {Latency: latency}}, tt.mode)
				ctx, cancel := context.WithTimeoutCause(t.Context(), budget, errGone)
				defer cancel()

				start := time.Now()
				_, err := svc.ReserveStock(ctx, "o1", []catalog.Line{{SKU: "tea", Qty: 1}})
				if took := time.Since(start); took != tt.wantTook {
					t.Errorf("ReserveStock took %v, want %v", took, tt.wantTook)
				}
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("ReserveStock error = %v, want %v", err, tt.wantErr)
				}
				wantCalls := 0
				if tt.wantErr == nil {
					wantCalls = 1
				}
				if store.calls != wantCalls {
					t.Errorf("store called %d times, want %d", store.calls, wantCalls)
				}
				// Only the faulted method is slow.
				start = time.Now()
				if _, _, err := svc.ListProducts(context.Background(), 0, ""); err != nil || time.Since(start) != 0 {
					t.Errorf("ListProducts took %v (err %v), want no delay", time.Since(start), err)
				}
			})
		})
	}
}

// An export walks the whole catalogue page by page, in SKU order, each
// page after the one before; bad paging is refused before any work.
func TestExportPage(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, catalog.NewMemStore(catalog.Seed()[:6]), nil, mode.Budgeted) // the named six
	var skus []string
	after := ""
	for pages := 1; ; pages++ {
		page, next, err := svc.ExportPage(ctx, 4, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			skus = append(skus, p.SKU)
		}
		if next == "" {
			if pages != 2 {
				t.Errorf("6 products in pages of 4 took %d pages, want 2", pages)
			}
			break
		}
		after = next
	}
	want := []string{"coffee-arabica", "filter-paper", "grinder-burr", "kettle-gooseneck", "mug-stoneware", "tea-sencha"}
	if strings.Join(skus, ",") != strings.Join(want, ",") {
		t.Errorf("export = %v, want %v", skus, want)
	}
	for _, bad := range []struct {
		size  int
		after string
	}{{-1, ""}, {catalog.MaxPageSize + 1, ""}, {1, strings.Repeat("x", 65)}} {
		if _, _, err := svc.ExportPage(ctx, bad.size, bad.after); codeOf(err) != apperr.Invalid {
			t.Errorf("ExportPage(%d, %d-byte token) error = %v, want Invalid", bad.size, len(bad.after), err)
		}
	}
}

// The Commit fault is made while a reservation holds its products' locks:
// reservations of one product finish one commit apart, of different
// products together. A spec for every method ("*") does not reach it.
func TestCommitHoldsTheProductsLocks(t *testing.T) {
	const commit = 20 * time.Millisecond
	tests := []struct {
		name string
		set  faults.Set
		skus []string
		want []time.Duration // when each reservation ends, in order
	}{
		{"one product", faults.Set{"Commit": {Latency: commit}}, []string{"tea", "tea", "tea"}, []time.Duration{commit, 2 * commit, 3 * commit}},
		{"different products", faults.Set{"Commit": {Latency: commit}}, []string{"tea", "paper"}, []time.Duration{commit, commit}},
		{"every method but the commit", faults.Set{"*": {Latency: commit}}, []string{"tea", "tea"}, []time.Duration{commit, commit}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := newService(t, catalog.NewMemStore(products()), tt.set, mode.Budgeted)
				start := time.Now()
				ended := make([]time.Duration, len(tt.skus))
				var wg sync.WaitGroup
				for i, sku := range tt.skus {
					wg.Go(func() {
						if _, err := svc.ReserveStock(t.Context(), fmt.Sprintf("o%d", i), []catalog.Line{{SKU: sku, Qty: 1}}); err != nil {
							t.Errorf("ReserveStock(%s): %v", sku, err)
						}
						ended[i] = time.Since(start)
					})
					synctest.Wait() // each in line before the next asks
				}
				wg.Wait()
				slices.Sort(ended)
				if !slices.Equal(ended, tt.want) {
					t.Errorf("reservations ended at %v, want %v", ended, tt.want)
				}
			})
		})
	}
}
