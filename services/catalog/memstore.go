package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// SeedSize is how many products Seed holds.
const SeedSize = 600

// Seed is the catalogue every new store starts with: six named products
// the docs and tests buy by name (paper filters with only 10 in stock, to
// sell out), and numbered ones (cup-001, dripper-001, …) that make it a
// catalogue of SeedSize for the load to spread over. Every SKU but
// coffee-arabica sorts after coffee-arabica, so it is the first product a
// listing shows.
func Seed() []Product {
	products := []Product{
		{SKU: "tea-sencha", Name: "Sencha green tea, 100 g", PriceCents: 1250, Stock: 1_000_000},
		{SKU: "coffee-arabica", Name: "Arabica coffee beans, 250 g", PriceCents: 1490, Stock: 1_000_000},
		{SKU: "mug-stoneware", Name: "Stoneware mug", PriceCents: 1800, Stock: 1_000_000},
		{SKU: "kettle-gooseneck", Name: "Gooseneck kettle", PriceCents: 5400, Stock: 1_000_000},
		{SKU: "grinder-burr", Name: "Hand burr grinder", PriceCents: 7900, Stock: 1_000_000},
		{SKU: "filter-paper", Name: "Paper filters, 100 pack", PriceCents: 450, Stock: 10},
	}
	kinds := []struct{ sku, name string }{
		{"cup", "Tasting cup"}, {"dripper", "Pour-over dripper"}, {"jar", "Storage jar"},
		{"kettle", "Stovetop kettle"}, {"mug", "Enamel mug"}, {"press", "French press"},
		{"scale", "Brewing scale"}, {"spoon", "Measuring spoon"}, {"tea", "Loose-leaf tea blend"},
		{"tin", "Tea tin"},
	}
	for i := range SeedSize - len(products) {
		k, n := kinds[i%len(kinds)], i/len(kinds)+1
		products = append(products, Product{
			SKU:        fmt.Sprintf("%s-%03d", k.sku, n),
			Name:       fmt.Sprintf("%s no. %d", k.name, n),
			PriceCents: 300 + int64(i*7919%9700), // spread from 3 to 100 currency units
			Stock:      1_000_000,
		})
	}
	return products
}

// MemStore is the in-memory Store of the embedded default.
//
// Like a database's row locks, each product has a lock of its own that a
// reservation holds from the moment it takes the product's stock to its
// commit: reservations of different products never wait for each other,
// reservations of one product wait in line, for as long as the line's
// patience allows (line.go) and the request's context lasts (mu, which
// guards the maps, is held for no more than a map's update).
type MemStore struct {
	locks map[string]chan struct{} // a product's lock: a slot, by SKU; fixed at NewMemStore

	mu           sync.Mutex
	products     map[string]Product
	skus         []string // every product's, sorted: the listing's order
	reservations map[string]Reservation
	byOrder      map[string]string
	released     map[string]bool
	nextID       int
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns a store holding products.
func NewMemStore(products []Product) *MemStore {
	s := &MemStore{locks: map[string]chan struct{}{}, products: map[string]Product{},
		reservations: map[string]Reservation{}, byOrder: map[string]string{}, released: map[string]bool{}}
	for _, p := range products {
		s.products[p.SKU] = p
		s.locks[p.SKU] = make(chan struct{}, 1)
	}
	s.skus = slices.Sorted(maps.Keys(s.products))
	return s
}

// List implements Store.
func (s *MemStore) List(ctx context.Context, after string, limit int) ([]Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := slices.BinarySearch(s.skus, after)
	if found {
		i++
	}
	skus := s.skus[i:min(i+limit, len(s.skus))]
	out := make([]Product, len(skus))
	for j, sku := range skus {
		out[j] = s.products[sku]
	}
	return out, nil
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, sku string) (Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.products[sku]
	if !ok {
		return Product{}, apperr.New(apperr.NotFound, "unknown sku %q", sku)
	}
	return p, nil
}

// Reserve implements Store: it takes the lines' products' locks in SKU
// order (so two reservations never wait for each other crosswise), checks
// the stock, calls locked, and only then takes the stock and records the
// reservation, as a commit would. Under the products' locks their stock
// can only grow (a release) between the check and the commit.
func (s *MemStore) Reserve(ctx context.Context, orderID string, lines []Line, locked func(context.Context) error) (Reservation, error) {
	want := map[string]int64{}
	for _, l := range lines {
		if _, ok := s.locks[l.SKU]; !ok {
			return Reservation{}, apperr.New(apperr.NotFound, "unknown sku %q", l.SKU)
		}
		want[l.SKU] += l.Qty
	}
	if r, ok, err := s.check(orderID, lines, want); ok || err != nil {
		return r, err // one reservation per order: a retry gets it back
	}
	unlock, err := s.lock(ctx, slices.Sorted(maps.Keys(want)))
	if err != nil {
		return Reservation{}, err
	}
	defer unlock()
	if r, ok, err := s.check(orderID, lines, want); ok || err != nil {
		return r, err
	}
	if locked != nil {
		if err := locked(ctx); err != nil {
			return Reservation{}, err
		}
	}
	return s.commit(orderID, lines), nil
}

// check returns the order's reservation and true if it has one, else an
// error if the stock cannot meet every line.
func (s *MemStore) check(orderID string, lines []Line, want map[string]int64) (Reservation, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byOrder[orderID]; ok {
		return s.reservations[id], true, nil
	}
	for _, l := range lines {
		if p := s.products[l.SKU]; want[l.SKU] > p.Stock {
			return Reservation{}, false, apperr.New(apperr.Conflict, "out of stock: %q has %d left", l.SKU, p.Stock)
		}
	}
	return Reservation{}, false, nil
}

// lock takes the locks of skus, in their order, waiting in line for them
// as long as linePatience allows and ctx lasts; unlock lets them go.
func (s *MemStore) lock(ctx context.Context, skus []string) (unlock func(), err error) {
	held := make([]chan struct{}, 0, len(skus))
	unlock = func() {
		for _, l := range held {
			<-l
		}
	}
	var patience <-chan time.Time // set at the first wait, if ctx has a deadline
	var wait time.Duration
	for _, sku := range skus {
		l := s.locks[sku]
		select {
		case l <- struct{}{}: // free: taken without waiting, whatever ctx says
			held = append(held, l)
			continue
		default:
		}
		if patience == nil {
			var bounded bool
			if wait, bounded = linePatience(ctx); bounded {
				t := time.NewTimer(wait)
				defer t.Stop()
				patience = t.C
			}
		}
		select {
		case l <- struct{}{}:
			held = append(held, l)
		case <-patience:
			unlock()
			return nil, errInDemand(strconv.Quote(sku), wait)
		case <-ctx.Done():
			unlock()
			return nil, fmt.Errorf("waiting for the lock of %q: %w", sku, context.Cause(ctx))
		}
	}
	return unlock, nil
}

// commit takes the stock of every line and records the reservation; the
// order's reservation, if another Reserve of it committed first.
func (s *MemStore) commit(orderID string, lines []Line) Reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byOrder[orderID]; ok {
		return s.reservations[id]
	}
	s.nextID++
	r := Reservation{ID: fmt.Sprintf("res-%d", s.nextID), OrderID: orderID}
	for _, l := range lines {
		p := s.products[l.SKU]
		p.Stock -= l.Qty
		s.products[l.SKU] = p
		r.Lines = append(r.Lines, PricedLine{Line: l, UnitPriceCents: p.PriceCents})
		r.TotalCents += l.Qty * p.PriceCents
	}
	s.reservations[r.ID] = r
	s.byOrder[orderID] = r.ID
	return r
}

// Release implements Store.
func (s *MemStore) Release(ctx context.Context, reservationID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reservations[reservationID]
	if !ok {
		return apperr.New(apperr.NotFound, "unknown reservation %q", reservationID)
	}
	if s.released[reservationID] {
		return nil
	}
	s.released[reservationID] = true
	for _, l := range r.Lines {
		p := s.products[l.SKU]
		p.Stock += l.Qty
		s.products[l.SKU] = p
	}
	return nil
}
