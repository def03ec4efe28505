package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/catalog"
)

// products is a small catalogue for store tests: plenty of tea, a little
// paper.
func products() []catalog.Product {
	return []catalog.Product{
		{SKU: "tea", Name: "Tea", PriceCents: 1250, Stock: 1000},
		{SKU: "paper", Name: "Paper", PriceCents: 450, Stock: 10},
	}
}

// codeOf returns the apperr code of err, or "" when it has none.
func codeOf(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func stock(t *testing.T, s catalog.Store, sku string) int64 {
	t.Helper()
	p, err := s.Get(context.Background(), sku)
	if err != nil {
		t.Fatalf("Get(%q): %v", sku, err)
	}
	return p.Stock
}

func TestMemStoreListAndGet(t *testing.T) {
	ctx := context.Background()
	s := catalog.NewMemStore(catalog.Seed())
	got, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := catalog.Seed()
	slices.SortFunc(want, func(a, b catalog.Product) int { return strings.Compare(a.SKU, b.SKU) })
	if !slices.Equal(got, want) {
		t.Errorf("List() = %+v, want the seed sorted by SKU %+v", got, want)
	}

	p, err := s.Get(ctx, "filter-paper")
	if err != nil || p.Stock != 10 || p.PriceCents != 450 {
		t.Errorf("Get(filter-paper) = %+v, %v; want the seeded product with 10 in stock", p, err)
	}
	if _, err := s.Get(ctx, "nope"); codeOf(err) != apperr.NotFound {
		t.Errorf("Get(nope) error = %v, want code %q", err, apperr.NotFound)
	}
}

func TestMemStoreReserve(t *testing.T) {
	tests := []struct {
		name      string
		lines     []catalog.Line
		wantCode  apperr.Code // "" for success
		wantTotal int64
		wantTea   int64 // stock afterwards
		wantPaper int64
	}{
		{"one line", []catalog.Line{{SKU: "tea", Qty: 2}}, "", 2500, 998, 10},
		{"two lines", []catalog.Line{{SKU: "tea", Qty: 1}, {SKU: "paper", Qty: 3}}, "", 1250 + 3*450, 999, 7},
		{"all the stock", []catalog.Line{{SKU: "paper", Qty: 10}}, "", 4500, 1000, 0},
		{"unknown sku", []catalog.Line{{SKU: "nope", Qty: 1}}, apperr.NotFound, 0, 1000, 10},
		{"out of stock", []catalog.Line{{SKU: "paper", Qty: 11}}, apperr.Conflict, 0, 1000, 10},
		{"all or nothing: unknown sku after a good line", []catalog.Line{{SKU: "tea", Qty: 5}, {SKU: "nope", Qty: 1}}, apperr.NotFound, 0, 1000, 10},
		{"all or nothing: out of stock after a good line", []catalog.Line{{SKU: "tea", Qty: 5}, {SKU: "paper", Qty: 11}}, apperr.Conflict, 0, 1000, 10},
		{"lines of one sku add up", []catalog.Line{{SKU: "paper", Qty: 6}, {SKU: "paper", Qty: 5}}, apperr.Conflict, 0, 1000, 10},
		{"lines of one sku that fit", []catalog.Line{{SKU: "paper", Qty: 6}, {SKU: "paper", Qty: 4}}, "", 4500, 1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := catalog.NewMemStore(products())
			r, err := s.Reserve(context.Background(), "ord-1", tt.lines)
			if codeOf(err) != tt.wantCode {
				t.Fatalf("Reserve error = %v, want code %q", err, tt.wantCode)
			}
			if err == nil {
				if r.ID == "" || r.OrderID != "ord-1" || r.TotalCents != tt.wantTotal || len(r.Lines) != len(tt.lines) {
					t.Errorf("Reserve = %+v, want an ID, order ord-1, total %d, %d lines", r, tt.wantTotal, len(tt.lines))
				}
				for i, l := range r.Lines {
					if l.Line != tt.lines[i] || l.UnitPriceCents == 0 {
						t.Errorf("line %d = %+v, want %+v with its unit price", i, l, tt.lines[i])
					}
				}
			}
			if got := stock(t, s, "tea"); got != tt.wantTea {
				t.Errorf("tea stock = %d, want %d", got, tt.wantTea)
			}
			if got := stock(t, s, "paper"); got != tt.wantPaper {
				t.Errorf("paper stock = %d, want %d", got, tt.wantPaper)
			}
		})
	}
}

func TestMemStoreReservationIDsDiffer(t *testing.T) {
	s := catalog.NewMemStore(products())
	a, err := s.Reserve(context.Background(), "o1", []catalog.Line{{SKU: "tea", Qty: 1}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Reserve(context.Background(), "o2", []catalog.Line{{SKU: "tea", Qty: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID {
		t.Errorf("two reservations share ID %q", a.ID)
	}
}

// The store keeps its own copy of the lines: a caller changing the slice
// it passed in cannot change what Release gives back.
func TestMemStoreReserveCopiesLines(t *testing.T) {
	s := catalog.NewMemStore(products())
	lines := []catalog.Line{{SKU: "tea", Qty: 1}}
	r, err := s.Reserve(context.Background(), "o1", lines)
	if err != nil {
		t.Fatal(err)
	}
	lines[0].Qty = 500
	if err := s.Release(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	if got := stock(t, s, "tea"); got != 1000 {
		t.Errorf("after Release, tea stock = %d, want 1000", got)
	}
}

func TestMemStoreRelease(t *testing.T) {
	ctx := context.Background()
	s := catalog.NewMemStore(products())
	r, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 4}, {SKU: "tea", Qty: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if got := stock(t, s, "paper"); got != 6 {
		t.Fatalf("paper stock after Reserve = %d, want 6", got)
	}
	for i := range 3 {
		if err := s.Release(ctx, r.ID); err != nil {
			t.Fatalf("Release #%d: %v", i+1, err)
		}
		if got := stock(t, s, "paper"); got != 10 {
			t.Errorf("after Release #%d, paper stock = %d, want 10", i+1, got)
		}
		if got := stock(t, s, "tea"); got != 1000 {
			t.Errorf("after Release #%d, tea stock = %d, want 1000", i+1, got)
		}
	}
	if err := s.Release(ctx, "res-unknown"); codeOf(err) != apperr.NotFound {
		t.Errorf("Release(unknown) error = %v, want code %q", err, apperr.NotFound)
	}
}

// Run with -race: many checkouts race for the last units. Stock never
// goes negative and exactly as many succeed as the stock allows.
func TestMemStoreReserveConcurrent(t *testing.T) {
	const racers = 50
	tests := []struct {
		qty           int64
		wantSuccesses int
	}{
		{1, 10}, // 10 in stock
		{3, 3},
		{4, 2},
		{11, 0},
	}
	for _, tt := range tests {
		t.Run("qty "+strconv.FormatInt(tt.qty, 10), func(t *testing.T) {
			s := catalog.NewMemStore(products())
			start := make(chan struct{})
			var (
				wg        sync.WaitGroup
				mu        sync.Mutex
				successes int
				others    []error
			)
			for i := range racers {
				wg.Go(func() {
					<-start
					_, err := s.Reserve(context.Background(), "o"+strconv.Itoa(i), []catalog.Line{{SKU: "paper", Qty: tt.qty}})
					mu.Lock()
					defer mu.Unlock()
					switch codeOf(err) {
					case "":
						successes++
					case apperr.Conflict:
					default:
						others = append(others, err)
					}
				})
			}
			close(start)
			wg.Wait()

			final := stock(t, s, "paper")
			if final < 0 {
				t.Errorf("stock went negative: %d", final)
			}
			if successes != tt.wantSuccesses {
				t.Errorf("%d reservations succeeded, want %d", successes, tt.wantSuccesses)
			}
			if want := 10 - int64(successes)*tt.qty; final != want {
				t.Errorf("final stock = %d, want %d (10 - %d × %d)", final, want, successes, tt.qty)
			}
			if len(others) > 0 {
				t.Errorf("%d reservations failed with something other than Conflict, such as %v", len(others), others[0])
			}
		})
	}
}

// Run with -race: releasing one reservation from many goroutines gives
// its stock back once.
func TestMemStoreReleaseConcurrent(t *testing.T) {
	s := catalog.NewMemStore(products())
	r, err := s.Reserve(context.Background(), "o1", []catalog.Line{{SKU: "paper", Qty: 10}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := s.Release(context.Background(), r.ID); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
	wg.Wait()
	if got := stock(t, s, "paper"); got != 10 {
		t.Errorf("after 20 concurrent Releases, stock = %d, want 10", got)
	}
}
