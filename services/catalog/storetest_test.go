package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/catalog"
)

// newStoreFunc returns an empty store of one implementation holding seed,
// for one test.
type newStoreFunc func(t *testing.T, seed []catalog.Product) catalog.Store

// testStore is the contract of catalog.Store (see its doc comment), run
// against every implementation: the memory store (memstore_test.go) and
// PostgreSQL (pgstore_test.go). Run it with -race.
func testStore(t *testing.T, newStore newStoreFunc) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, newStoreFunc)
	}{
		{"ListAndGet", testListAndGet},
		{"Reserve", testReserve},
		{"ReserveOncePerOrder", testReserveOncePerOrder},
		{"ReservationIDsDiffer", testReservationIDsDiffer},
		{"ReserveCopiesLines", testReserveCopiesLines},
		{"Release", testRelease},
		{"ReserveConcurrent", testReserveConcurrent},
		{"ReserveConcurrentOneOrder", testReserveConcurrentOneOrder},
		{"ReserveConcurrentCrossedLines", testReserveConcurrentCrossedLines},
		{"ReleaseConcurrent", testReleaseConcurrent},
		{"ReservationsOfAProductWaitInLine", testReservationsOfAProductWaitInLine},
		{"LockedFailingReservesNothing", testLockedFailingReservesNothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newStore)
		})
	}
}

func testListAndGet(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t, catalog.Seed())
	want := catalog.Seed()
	slices.SortFunc(want, func(a, b catalog.Product) int { return strings.Compare(a.SKU, b.SKU) })
	if len(want) != catalog.SeedSize || want[0].SKU != "coffee-arabica" {
		t.Fatalf("the seed holds %d products, first %q; want %d, coffee-arabica first", len(want), want[0].SKU, catalog.SeedSize)
	}
	// Paged through, 7 a page (the last one short), the listing is the
	// whole seed in SKU order, each product once.
	var got []catalog.Product
	after := ""
	for range len(want) {
		page, err := s.List(ctx, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if len(page) < 7 {
			break
		}
		after = page[len(page)-1].SKU
	}
	if !slices.Equal(got, want) {
		t.Errorf("List paged through = %d products, want the seed's %d sorted by SKU", len(got), len(want))
	}
	// A token that is no SKU continues after where it would sort.
	if page, err := s.List(ctx, "kettle-0", 2); err != nil || len(page) != 2 || page[0].SKU != "kettle-001" {
		t.Errorf("List(after kettle-0) = %+v, %v; want kettle-001 first", page, err)
	}
	if page, err := s.List(ctx, want[len(want)-1].SKU, 5); err != nil || len(page) != 0 {
		t.Errorf("List after the last SKU = %+v, %v; want nothing", page, err)
	}

	p, err := s.Get(ctx, "filter-paper")
	if err != nil || p.Stock != 10 || p.PriceCents != 450 || p.Name != "Paper filters, 100 pack" {
		t.Errorf("Get(filter-paper) = %+v, %v; want the seeded product with 10 in stock", p, err)
	}
	if _, err := s.Get(ctx, "nope"); codeOf(err) != apperr.NotFound {
		t.Errorf("Get(nope) error = %v, want code %q", err, apperr.NotFound)
	}
}

func testReserve(t *testing.T, newStore newStoreFunc) {
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
	s := newStore(t, products())
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.Reserve(context.Background(), "ord-"+strconv.Itoa(i), tt.lines, nil)
			if codeOf(err) != tt.wantCode {
				t.Fatalf("Reserve error = %v, want code %q", err, tt.wantCode)
			}
			if err == nil {
				if r.ID == "" || r.OrderID != "ord-"+strconv.Itoa(i) || r.TotalCents != tt.wantTotal || len(r.Lines) != len(tt.lines) {
					t.Errorf("Reserve = %+v, want an ID, its order, total %d, %d lines", r, tt.wantTotal, len(tt.lines))
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
			if err == nil {
				if err := s.Release(context.Background(), r.ID); err != nil { // back to the seed for the next case
					t.Fatal(err)
				}
			}
		})
	}
}

// A second Reserve for an order returns the first reservation, whatever
// it asks for, and takes no more stock; a failed Reserve holds nothing, so
// the order may try again.
func testReserveOncePerOrder(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t, products())
	if _, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 11}}, nil); codeOf(err) != apperr.Conflict {
		t.Fatalf("Reserve beyond the stock = %v, want Conflict", err)
	}
	first, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 2}, {SKU: "tea", Qty: 1}}, nil)
	if err != nil {
		t.Fatalf("Reserve after a failed one: %v", err)
	}
	again, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || again.TotalCents != first.TotalCents || !slices.Equal(again.Lines, first.Lines) || again.OrderID != "o1" {
		t.Errorf("second Reserve = %+v, want the first %+v", again, first)
	}
	if got := stock(t, s, "paper"); got != 8 {
		t.Errorf("paper stock = %d, want 8 (taken once)", got)
	}
	// Released, the reservation is still the order's one.
	if err := s.Release(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 1}}, nil); err != nil || again.ID != first.ID {
		t.Errorf("Reserve after Release = %+v, %v; want the first reservation", again, err)
	}
	if got := stock(t, s, "paper"); got != 10 {
		t.Errorf("paper stock = %d, want 10", got)
	}
}

func testReservationIDsDiffer(t *testing.T, newStore newStoreFunc) {
	s := newStore(t, products())
	a, err := s.Reserve(context.Background(), "o1", []catalog.Line{{SKU: "tea", Qty: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Reserve(context.Background(), "o2", []catalog.Line{{SKU: "tea", Qty: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID {
		t.Errorf("two reservations share ID %q", a.ID)
	}
}

// The store keeps its own copy of the lines: a caller changing the slice
// it passed in cannot change what Release gives back.
func testReserveCopiesLines(t *testing.T, newStore newStoreFunc) {
	s := newStore(t, products())
	lines := []catalog.Line{{SKU: "tea", Qty: 1}}
	r, err := s.Reserve(context.Background(), "o1", lines, nil)
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

func testRelease(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t, products())
	r, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 4}, {SKU: "tea", Qty: 7}, {SKU: "paper", Qty: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := stock(t, s, "paper"); got != 5 {
		t.Fatalf("paper stock after Reserve = %d, want 5", got)
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

// 50 checkouts race for the last units. Stock never goes negative and
// exactly as many succeed as the stock allows.
func testReserveConcurrent(t *testing.T, newStore newStoreFunc) {
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
			s := newStore(t, products())
			successes, others := race(racers, func(i int) error {
				_, err := s.Reserve(context.Background(), "o"+strconv.Itoa(i), []catalog.Line{{SKU: "paper", Qty: tt.qty}}, nil)
				return err
			})
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

// A reservation holds its products' locks until it commits: while one
// holds a product's, another reservation of that product waits in line —
// for at most half the time its caller left it, then it answers that the
// product is in demand, having reserved nothing; with no deadline, until
// the lock is free — and a reservation of another product does not wait.
func testReservationsOfAProductWaitInLine(t *testing.T, newStore newStoreFunc) {
	s := newStore(t, products())
	holding, commit := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := s.Reserve(context.Background(), "o1", []catalog.Line{{SKU: "tea", Qty: 1}}, func(context.Context) error {
			close(holding)
			<-commit
			return nil
		})
		first <- err
	}()
	<-holding

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Reserve(ctx, "o2", []catalog.Line{{SKU: "tea", Qty: 1}}, nil)
	waited := time.Since(start)
	if codeOf(err) != apperr.Conflict || apperr.ReasonOf(err) != apperr.ReasonNotProcessed || waited < 90*time.Millisecond || waited > 190*time.Millisecond {
		t.Errorf("a reservation of the locked product with 200 ms left = %v after %v; want Conflict, not processed, after about 100 ms", err, waited)
	}
	if _, err := s.Reserve(context.Background(), "o3", []catalog.Line{{SKU: "paper", Qty: 1}}, nil); err != nil {
		t.Errorf("a reservation of another product while tea is locked: %v", err)
	}
	patient := make(chan error, 1)
	go func() {
		_, err := s.Reserve(context.Background(), "o4", []catalog.Line{{SKU: "tea", Qty: 1}}, nil)
		patient <- err
	}()
	select {
	case err := <-patient:
		t.Fatalf("a reservation with no deadline ended while tea was locked: %v", err)
	case <-time.After(150 * time.Millisecond):
	}
	close(commit)
	if err := <-first; err != nil {
		t.Fatalf("the reservation holding the lock: %v", err)
	}
	if err := <-patient; err != nil {
		t.Errorf("the reservation with no deadline, once the lock was free: %v", err)
	}
	if got := stock(t, s, "tea"); got != 998 {
		t.Errorf("tea stock = %d, want 998 (o1 and o4; o2, which gave up, took nothing)", got)
	}
	if r, err := s.Reserve(context.Background(), "o2", []catalog.Line{{SKU: "tea", Qty: 1}}, nil); err != nil || r.OrderID != "o2" {
		t.Errorf("o2 reserved again after giving up = %+v, %v; want a reservation", r, err)
	}
}

// A reservation whose locked callback fails is rolled back: no stock
// taken, no reservation kept for the order, and the callback is not called
// for an order that has its reservation already.
func testLockedFailingReservesNothing(t *testing.T, newStore newStoreFunc) {
	s := newStore(t, products())
	ctx := context.Background()
	broken := errors.New("the disk is gone")
	if _, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 4}}, func(context.Context) error { return broken }); !errors.Is(err, broken) {
		t.Fatalf("Reserve with a failing commit = %v, want %v", err, broken)
	}
	if got := stock(t, s, "paper"); got != 10 {
		t.Errorf("paper stock = %d after a failed commit, want 10", got)
	}
	calls := 0
	count := func(context.Context) error { calls++; return nil }
	first, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 4}}, count)
	if err != nil {
		t.Fatalf("Reserve after the failed one: %v", err)
	}
	again, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 4}}, count)
	if err != nil || again.ID != first.ID || calls != 1 {
		t.Errorf("Reserve of a reserved order = %+v, %v with %d locked calls; want %s and 1 call", again, err, calls, first.ID)
	}
	if got := stock(t, s, "paper"); got != 6 {
		t.Errorf("paper stock = %d, want 6", got)
	}
}

// Retries of one order racing each other make one reservation.
func testReserveConcurrentOneOrder(t *testing.T, newStore newStoreFunc) {
	s := newStore(t, products())
	var mu sync.Mutex
	ids := map[string]bool{}
	successes, others := race(20, func(int) error {
		r, err := s.Reserve(context.Background(), "o1", []catalog.Line{{SKU: "paper", Qty: 3}}, nil)
		if err == nil {
			mu.Lock()
			ids[r.ID] = true
			mu.Unlock()
		}
		return err
	})
	if successes != 20 || len(others) > 0 || len(ids) != 1 {
		t.Errorf("20 concurrent Reserves of one order: %d succeeded, %d reservations, errors %v; want 20, 1, none", successes, len(ids), others)
	}
	if got := stock(t, s, "paper"); got != 7 {
		t.Errorf("paper stock = %d, want 7 (taken once)", got)
	}
}

// Orders that ask for the same products in opposite orders, at once, all
// get an answer: no deadlock, no lost update.
func testReserveConcurrentCrossedLines(t *testing.T, newStore newStoreFunc) {
	s := newStore(t, []catalog.Product{
		{SKU: "a", Name: "A", PriceCents: 1, Stock: 1000},
		{SKU: "b", Name: "B", PriceCents: 1, Stock: 1000},
		{SKU: "c", Name: "C", PriceCents: 1, Stock: 1000},
	})
	orders := [][]catalog.Line{
		{{SKU: "a", Qty: 1}, {SKU: "b", Qty: 1}, {SKU: "c", Qty: 1}},
		{{SKU: "c", Qty: 1}, {SKU: "b", Qty: 1}, {SKU: "a", Qty: 1}},
		{{SKU: "b", Qty: 1}, {SKU: "a", Qty: 1}},
	}
	successes, others := race(60, func(i int) error {
		_, err := s.Reserve(context.Background(), fmt.Sprintf("o%d", i), orders[i%len(orders)], nil)
		return err
	})
	if successes != 60 {
		t.Errorf("%d of 60 crossed reservations succeeded; errors: %v", successes, others)
	}
	for sku, want := range map[string]int64{"a": 940, "b": 940, "c": 960} {
		if got := stock(t, s, sku); got != want {
			t.Errorf("%s stock = %d, want %d", sku, got, want)
		}
	}
}

// Releasing one reservation from many goroutines gives its stock back
// once.
func testReleaseConcurrent(t *testing.T, newStore newStoreFunc) {
	s := newStore(t, products())
	r, err := s.Reserve(context.Background(), "o1", []catalog.Line{{SKU: "paper", Qty: 10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	successes, others := race(20, func(int) error { return s.Release(context.Background(), r.ID) })
	if successes != 20 {
		t.Errorf("%d of 20 Releases succeeded: %v", successes, others)
	}
	if got := stock(t, s, "paper"); got != 10 {
		t.Errorf("after 20 concurrent Releases, stock = %d, want 10", got)
	}
}

// race runs f(0..n-1) at once and counts the successes; it returns the
// errors other than Conflict.
func race(n int, f func(i int) error) (successes int, others []error) {
	start := make(chan struct{})
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for i := range n {
		wg.Go(func() {
			<-start
			err := f(i)
			mu.Lock()
			defer mu.Unlock()
			switch codeOf(err) {
			case "":
				if err == nil {
					successes++
				} else {
					others = append(others, err)
				}
			case apperr.Conflict:
			default:
				others = append(others, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return successes, others
}

// TestStoreContract runs the Store contract against the memory store and
// PostgreSQL (skipped without MERCADO_TEST_DATABASE_URL).
func TestStoreContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testStore(t, func(_ *testing.T, seed []catalog.Product) catalog.Store { return catalog.NewMemStore(seed) })
	})
	t.Run("postgres", func(t *testing.T) { testStore(t, pgStoreForTest(t)) })
}
